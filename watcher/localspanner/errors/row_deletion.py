"""The wording of row deletion policy (TTL) errors: detail texts that ``ddl_invalid`` wraps with the statement.

Example:
    >>> row_deletion_column_not_timestamp("Events", "Day", "DATE")
    'Row deletion policy of table Events names column Day of type DATE: the column must be a TIMESTAMP'
"""

from __future__ import annotations


def row_deletion_column_missing(table: str, column: str) -> str:
    return f"Row deletion policy of table {table} names column {column}, which table {table} does not have"


def row_deletion_column_not_timestamp(table: str, column: str, type_: object) -> str:
    return f"Row deletion policy of table {table} names column {column} of type {type_}: the column must be a TIMESTAMP"


def row_deletion_policy_exists(table: str, column: str) -> str:
    return (f"Table {table} already has a row deletion policy (on column {column}); "
            "use ALTER TABLE ... REPLACE ROW DELETION POLICY to change it")


def row_deletion_policy_missing(table: str) -> str:
    return f"Table {table} has no row deletion policy"


def row_deletion_column_in_use(table: str, column: str) -> str:
    return (f"Cannot drop or retype column {table}.{column}: the row deletion policy of table {table} uses it; "
            "drop or replace the policy first")


def row_deletion_referenced(table: str, foreign_keys: list[str]) -> str:
    return (f"Table {table} cannot have a row deletion policy: foreign key(s) {', '.join(foreign_keys)} reference it "
            "without ON DELETE CASCADE (the policy's deletes would fail)")


def foreign_key_to_row_deletion_policy(fk: str, table: str) -> str:
    return (f"Foreign key {fk} references table {table}, which has a row deletion policy: it needs ON DELETE CASCADE "
            "(or NOT ENFORCED), since the policy's deletes would fail")


def row_deletion_child_no_action(table: str, child: str) -> str:
    return (f"Table {table} cannot have a row deletion policy while its interleaved child {child} is ON DELETE NO ACTION "
            "(the policy's deletes would fail); make the child ON DELETE CASCADE")
