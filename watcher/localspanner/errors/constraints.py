"""Errors of CHECK and FOREIGN KEY constraints: writes that break them, and DDL that defines them.

Writes: a broken CHECK is OUT_OF_RANGE naming the table, the constraint and the row's key;
a broken foreign key is FAILED_PRECONDITION naming the constraint and both tables.

Example:
    >>> err = check_violated("Concerts", "start_before_end", "(1)")
    >>> err.code.name, err.message
    ('OUT_OF_RANGE', 'Check constraint `Concerts`.`start_before_end` is violated for key (1)')
"""

from __future__ import annotations

from collections.abc import Iterable

from .base import Code, SpannerError, failed_precondition
from .schema import ddl_invalid

# --- writes -----------------------------------------------------------------------------------


def check_violated(table: str, constraint: str, key: str) -> SpannerError:
    return SpannerError(Code.OUT_OF_RANGE, f"Check constraint `{table}`.`{constraint}` is violated for key {key}")


def foreign_key_missing_referenced(constraint: str, table: str, referenced: str, columns: Iterable[str]) -> SpannerError:
    """A referencing row names values the referenced table does not hold."""
    return failed_precondition(
        f"Foreign key constraint `{constraint}` is violated on table `{table}`. "
        f"Cannot find referenced values in {referenced}({', '.join(columns)})."
    )


def foreign_key_referenced_in_use(constraint: str, referenced: str, table: str, columns: Iterable[str]) -> SpannerError:
    """A delete or update of a referenced row would leave rows of ``table`` without it (NO ACTION)."""
    return failed_precondition(
        f"Foreign key constraint `{constraint}` is violated on table `{referenced}`. "
        f"Cannot delete or update referenced values still used by {table}({', '.join(columns)})."
    )


# --- schema changes ----------------------------------------------------------------------------


def check_validation_failed(statement: str, table: str, constraint: str, key: str) -> SpannerError:
    return ddl_invalid(statement, f"Check constraint data validation error: Check constraint `{constraint}` "
                                  f"on table `{table}` is violated for key: {key}.")


def foreign_key_validation_failed(statement: str, constraint: str, table: str, key: str, referenced: str) -> SpannerError:
    return ddl_invalid(statement, f"Foreign key constraint data validation error: Foreign key `{constraint}` on table "
                                  f"`{table}` is violated for key: {key}: no matching row in table `{referenced}`.")


def foreign_key_referenced_not_unique(statement: str, constraint: str, referenced: str, columns: Iterable[str]) -> SpannerError:
    return ddl_invalid(statement, f"Foreign key `{constraint}` needs unique values in {referenced}({', '.join(columns)}): "
                                  "existing rows have duplicate values.")


def constraint_not_found(table: str, constraint: str) -> SpannerError:
    return SpannerError(Code.NOT_FOUND, f"Constraint `{constraint}` not found on table `{table}`.")


def drop_referenced_table(table: str, constraint: str, referencing: str) -> str:
    return f"Cannot drop table `{table}`: it is referenced by foreign key `{constraint}` of table `{referencing}`."


def drop_constrained_column(column: str, constraint: str) -> str:
    return f"Cannot drop column `{column}`: it is used by constraint `{constraint}`."


def alter_constrained_column(column: str, constraint: str) -> str:
    return f"Cannot change the type of column `{column}`: it is used by foreign key `{constraint}`."


def foreign_key_column_count(constraint: str, referencing: int, referenced: int) -> str:
    return (f"Foreign key `{constraint}` has {referencing} referencing column(s) "
            f"but {referenced} referenced column(s).")


def foreign_key_type_mismatch(constraint: str, column: str, referenced: str) -> str:
    return f"Foreign key `{constraint}`: column `{column}` and referenced column `{referenced}` have different types."


def foreign_key_unkeyable_column(constraint: str, column: str) -> str:
    return f"Foreign key `{constraint}`: column `{column}` has a type that cannot be used in a foreign key."


def foreign_key_cascade_not_enforced(constraint: str) -> str:
    return f"Foreign key `{constraint}`: ON DELETE CASCADE is not supported on a NOT ENFORCED foreign key."


def check_unknown_column(constraint: str, table: str, column: str) -> str:
    return f"Check constraint `{constraint}` references column `{column}`, which is not in table `{table}`."


def check_on_commit_timestamp(constraint: str, column: str) -> str:
    return (f"Check constraint `{constraint}` cannot reference column `{column}`: "
            "it has the option allow_commit_timestamp.")
