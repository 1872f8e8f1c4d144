"""Errors of the FLOAT32, UUID, INTERVAL and TOKENLIST types and of full-text search indexes."""

from __future__ import annotations

from .base import Code, SpannerError, invalid_argument


def tokenlist_not_generated(where: str) -> str:
    return f"TOKENLIST column {where} must be a generated column (AS (TOKENIZE_...(...)) HIDDEN)"


def tokenlist_in_array(where: str) -> str:
    return f"Column {where}: TOKENLIST cannot be an array element type"


def search_index_not_found(name: str) -> SpannerError:
    return SpannerError(Code.NOT_FOUND, f"Search index not found: {name}")


def search_index_column_not_tokenlist(index: str, where: str, type_: object) -> str:
    return f"Search index {index} can only index TOKENLIST columns; {where} is {type_}"


def search_index_unknown_column(index: str, column: str, table: str) -> str:
    return f"Search index {index} references column {column}, which table {table} does not have"


def drop_table_with_search_indexes(table: str, indexes: list[str]) -> str:
    return f"Cannot drop table {table}: it has search indexes ({', '.join(indexes)}); drop them first"


def drop_column_used_by_search_index(where: str, index: str) -> str:
    return f"Cannot drop column {where}: search index {index} uses it"


def tokenlist_not_readable(column: str) -> SpannerError:
    """Spanner does not return TOKENLIST values: a query or read that selects one is refused."""
    return invalid_argument(
        f"Column {column} is of type TOKENLIST, which cannot be returned by a query or a read; "
        "use it in SEARCH functions only"
    )


def interval_field_out_of_range(months: int, days: int, nanos: int) -> str:
    return f"Interval field out of range: {months} months, {days} days, {nanos} nanoseconds"


def interval_unit_unsupported(unit: str) -> str:
    return f"Unsupported INTERVAL date part: {unit}"


def interval_literal_invalid(text: str) -> str:
    return f"Invalid interval literal: {text!r}"


def interval_extract_part_unsupported(part: str) -> str:
    return f"Unsupported date part {part} for EXTRACT from INTERVAL"
