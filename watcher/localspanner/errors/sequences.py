"""Errors of sequences and identity columns: their DDL, and drawing values from them.

The messages follow Spanner's wording for the same mistakes.

Example:
    >>> sequence_not_found("Seq").message
    'Sequence not found: Seq'
    >>> sequence_skip_range_not_together().code.name
    'FAILED_PRECONDITION'
"""

from __future__ import annotations

from .base import Code, SpannerError, _clip, failed_precondition, invalid_argument


def sequence_not_found(name: str) -> SpannerError:
    return SpannerError(Code.NOT_FOUND, f"Sequence not found: {name}")


def sequence_option_unsupported(option: str) -> SpannerError:
    return failed_precondition(f"Unsupported sequence option: {option}.")


def sequence_option_wrong_type(option: str, expected: str) -> SpannerError:
    """``expected`` is ``string`` or ``integer``."""
    return failed_precondition(f"Option {option} can only take a {expected} value.")


def sequence_kind_invalid(kind: str) -> SpannerError:
    return failed_precondition(f"Invalid Sequence Kind: {kind}.")


def sequence_kind_unspecified() -> SpannerError:
    return invalid_argument(
        "The sequence does not have a valid sequence kind. Please specify the sequence kind explicitly "
        "or set the database option `default_sequence_kind`."
    )


def identity_kind_unspecified(column: str) -> SpannerError:
    return invalid_argument(
        f"The sequence kind of an identity column {column} is not specified. Please specify the sequence kind "
        "explicitly or set the database option `default_sequence_kind`."
    )


def sequence_start_with_counter_invalid() -> SpannerError:
    return failed_precondition("`start_with_counter` has to be a positive INT64 number")


def sequence_skip_range_not_together() -> SpannerError:
    return failed_precondition("`skip_range_min` and `skip_range_max` have to be set together")


def sequence_skip_range_min_above_max() -> SpannerError:
    return failed_precondition("`skip_range_min` has to be lesser than or equal to `skip_range_max`")


def sequence_skip_range_not_positive() -> SpannerError:
    return failed_precondition("The sequence skipped range has to contain at least one positive value")


def sequence_exhausted(name: str) -> SpannerError:
    return failed_precondition(f"Sequence {name} is exhausted")


def sequence_in_use(name: str, column: str) -> SpannerError:
    """DROP SEQUENCE while a column's DEFAULT still draws from it; ``column`` is ``Table.Column``."""
    return failed_precondition(f"Cannot drop SEQUENCE `{name}` on which there is a dependent column: {column}.")


#: Detail: GET_NEXT_SEQUENCE_VALUE changes the sequence, so Spanner allows it in read/write transactions only.
SEQUENCE_READ_WRITE_ONLY = "GET_NEXT_SEQUENCE_VALUE is only allowed in read-write transactions"


def sequence_needs_read_write(sql: str) -> SpannerError:
    return invalid_argument(f"{SEQUENCE_READ_WRITE_ONLY} [in statement: {_clip(sql)}]")


def sequence_argument_invalid(sql: str, function: str) -> SpannerError:
    return invalid_argument(f"{function} takes one argument: SEQUENCE <name> [in statement: {_clip(sql)}]")


def default_sequence_kind_unset() -> SpannerError:
    return failed_precondition("The default_sequence_kind option may not be unset once set.")


def identity_column_type(column: str, type_name: str) -> str:
    """Detail for ``ddl_invalid``: identity columns hold INT64 values."""
    return f"identity column {column} must be of type INT64, not {type_name}"


def cannot_alter_to_identity(table: str, column: str) -> SpannerError:
    return invalid_argument(f"Cannot alter column `{table}.{column}` to an identity column.")
