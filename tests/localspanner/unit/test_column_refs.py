"""The columns a statement reads, resolved by scope (``sql.column_refs``), on statements parsed as the server parses them."""

from __future__ import annotations

import pytest

from watcher.localspanner.sql.column_refs import columns_read
from watcher.localspanner.sql.spanner_syntax import preprocess
from watcher.localspanner.sql.translator import parse

SCHEMA = {"A": ["K", "V", "W"], "B": ["K", "V"], "Docs": ["Id", "Body"]}
HIDDEN = {"Docs": ["Tokens"]}


def resolved(sql: str) -> dict[str, set[str]] | None:
    return columns_read(parse(preprocess(sql), sql), SCHEMA, HIDDEN)


@pytest.mark.parametrize(("sql", "expected"), [
    ("SELECT V FROM A", {"A": {"V"}}),
    ("select v from a where k > 1", {"A": {"V", "K"}}),
    ('SELECT `v` FROM `a`', {"A": {"V"}}),
    # a column name two joined tables share: only the qualifier's table reads it
    ("SELECT a.V FROM A a JOIN B b ON a.K = b.K", {"A": {"V", "K"}, "B": {"K"}}),
    ("SELECT A.V FROM A JOIN B ON A.K = B.K", {"A": {"V", "K"}, "B": {"K"}}),
    ("SELECT W FROM A JOIN B ON A.K = B.K", {"A": {"W", "K"}, "B": {"K"}}),
    # a select-list alias in ORDER BY is not a column
    ("SELECT K AS V FROM A ORDER BY V", {"A": {"K"}}),
    ("SELECT K AS W FROM B ORDER BY W", {"B": {"K"}}),
    # a CTE's and a subquery's output columns count through what they read
    ("WITH c AS (SELECT K AS V FROM B) SELECT V FROM c", {"B": {"K"}}),
    ("SELECT x.V FROM (SELECT K AS V FROM B) AS x", {"B": {"K"}}),
    ("SELECT V FROM (SELECT K AS V FROM A) JOIN B USING (K)", None),
    ("WITH c AS (SELECT K FROM A) SELECT c.K, B.V FROM c JOIN B ON c.K = B.K", {"A": {"K"}, "B": {"K", "V"}}),
    # ``*`` and ``t.*`` cover only their sources
    ("SELECT * FROM A", {"A": {"K", "V", "W"}}),
    ("SELECT a.* FROM A a JOIN B b ON a.K = b.K", {"A": {"K", "V", "W"}, "B": {"K"}}),
    ("SELECT x.* FROM (SELECT V FROM B) AS x JOIN A ON TRUE", {"B": {"V"}}),
    ("SELECT COUNT(*) FROM B", {}),
    # UNNEST and STRUCT fields are not base-table columns
    ("SELECT V FROM UNNEST([1, 2]) AS V", {}),
    ("SELECT s.V FROM B, UNNEST([STRUCT(1 AS V)]) AS s", {}),
    ("SELECT B.K FROM B, UNNEST([1]) AS V WHERE V > 0", {"B": {"K"}}),
    # a correlated subquery's outer reference counts for the outer table
    ("SELECT K FROM A WHERE EXISTS (SELECT 1 FROM B WHERE B.K = A.W)", {"A": {"K", "W"}, "B": {"K"}}),
    ("SELECT K FROM A WHERE V IN (SELECT V FROM B)", {"A": {"K", "V"}, "B": {"V"}}),
    ("SELECT K, (SELECT MAX(V) FROM B) FROM A", {"A": {"K"}, "B": {"V"}}),
    ("SELECT K FROM A UNION ALL SELECT V FROM B", {"A": {"K"}, "B": {"V"}}),
    # a range variable as a value reads its whole row
    ("SELECT a FROM A a", {"A": {"K", "V", "W"}}),
    ("SELECT TO_JSON(d) FROM Docs AS d", {"Docs": {"Id", "Body"}}),
    # hidden columns: read when named, never by ``*``
    ("SELECT * FROM Docs", {"Docs": {"Id", "Body"}}),
    ("SELECT Id FROM Docs WHERE Tokens IS NOT NULL", {"Docs": {"Id", "Tokens"}}),
    # DML: what its queries read (a correlated reference to the target counts for it)
    ("UPDATE A SET V = 'x' WHERE K IN (SELECT K FROM B WHERE B.V = A.W)", {"A": {"W"}, "B": {"K", "V"}}),
    ("INSERT INTO A (K, V) SELECT K, V FROM B", {"B": {"K", "V"}}),
    ("DELETE FROM A WHERE TRUE", {}),
    ("DELETE FROM A WHERE K IN (SELECT K FROM B)", {"B": {"K"}}),
    ("UPDATE A AS x SET V = 'a' WHERE EXISTS (SELECT 1 FROM B WHERE B.K = x.K)", {"A": {"K"}, "B": {"K"}}),
    ("WITH c AS (SELECT K FROM B), d AS (SELECT K FROM c) SELECT * FROM d", {"B": {"K"}}),
    # cannot resolve: the caller keeps its coarser check
    ("SELECT Nope FROM A", None),
    ("SELECT V FROM Unknown", None),
    ("SELECT K FROM A JOIN B ON TRUE", None),
    ("SELECT x.Nope FROM (SELECT K FROM A) AS x", None),
    ("SELECT * FROM INFORMATION_SCHEMA.TABLES", None),
    ("SELECT Tokens FROM (SELECT * FROM Docs)", None),
    # a query inside INSERT ... VALUES is not in sqlglot's scopes
    ("INSERT INTO A (K, V) VALUES (1, (SELECT V FROM B))", None),
    ("INSERT INTO A (K, V) VALUES (1, (SELECT K AS K FROM B))", None),
])
def test_columns_read(sql: str, expected: dict[str, set[str]] | None) -> None:
    assert resolved(sql) == expected


def test_tree_left_unchanged() -> None:
    sql = "SELECT a.* FROM A a JOIN B b ON a.K = b.K ORDER BY V"
    tree = parse(preprocess(sql), sql)
    before = tree.sql()
    columns_read(tree, SCHEMA)
    assert tree.sql() == before


@pytest.mark.parametrize("sql", ["SELECT * FROM Unknown", "SELECT u.* FROM A JOIN Unknown AS u ON TRUE",
                                 "SELECT K FROM A WHERE EXISTS (SELECT * FROM Unknown)"])
def test_unknown_table_with_star_is_unresolved(sql: str) -> None:
    assert resolved(sql) is None
