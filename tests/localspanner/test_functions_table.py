"""The function table is whole and true: every row's handler exists, docs/functions.md is current.

No server needed: these read the table, the translator's classes and a SQLite connection
with the server's functions registered.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
import sqlglot

from watcher.localspanner.sql import register_functions
from watcher.localspanner.sql.function_docs import DOCS_PATH, README_PATH, markdown, with_readme_summary
from watcher.localspanner.sql.function_rules import Fn
from watcher.localspanner.sql.function_table import BUILTIN, ROWS, ROWS_BY_NAME, function_name
from watcher.localspanner.sql.translator import Translator

ROOT = Path(__file__).resolve().parents[2]


def test_docs_file_is_generated_from_the_table():
    path = ROOT / DOCS_PATH
    assert path.read_text(encoding="utf-8") == markdown(), (
        "docs/functions.md is stale: run python -m watcher.localspanner.sql.function_docs")


def test_the_readme_summary_is_generated_from_the_table():
    text = (ROOT / README_PATH).read_text(encoding="utf-8")
    assert text == with_readme_summary(text), (
        "README.md's function summary is stale: run python -m watcher.localspanner.sql.function_docs")
    refused = [r.name for r in ROWS if r.state == "refused"]
    assert refused and all(f"`{name}`" in text for name in refused)


def test_names_are_unique_and_upper_case():
    names = [r.name for r in ROWS]
    assert len(names) == len(set(names))
    assert all(n == n.upper() for n in names)


@pytest.mark.parametrize("row", [r for r in ROWS if isinstance(r.does, str) and r.does != BUILTIN], ids=lambda r: r.name)
def test_a_method_row_names_a_translator_method(row):
    assert callable(getattr(Translator, row.does, None)), f"{row.name}: no method {row.does}"


@pytest.mark.parametrize("row", [r for r in ROWS if r.does == BUILTIN], ids=lambda r: r.name)
def test_a_builtin_row_is_handled_by_the_expression_translator(row):
    assert row.nodes and all(n in Translator.handlers for n in row.nodes)


def _registered() -> set[str]:
    conn = sqlite3.connect(":memory:")
    register_functions(conn)
    return {name for (name,) in conn.execute("SELECT name FROM pragma_function_list")}


REGISTERED = _registered()


@pytest.mark.parametrize("row", [r for r in ROWS if isinstance(r.does, Fn)], ids=lambda r: r.name)
def test_a_call_row_names_a_registered_function(row):
    assert row.does.sql in REGISTERED


@pytest.mark.parametrize("row", [r for r in ROWS if r.nodes and r.does is not None and r.name not in ("ARRAY", "CASE")],
                         ids=lambda r: r.name)
def test_a_supported_name_parses_into_one_of_its_nodes(row):
    """The sqlglot classes a row lists are what its name becomes (so the row is found)."""
    for args in ("x", "x, y", "x, y, z", "DAY FROM x", "x AS INT64", "x, INTERVAL 1 DAY", ""):
        try:
            node = sqlglot.parse_one(f"SELECT {row.name}({args})", read="bigquery").expressions[0]
        except Exception:  # noqa: BLE001 - sqlglot fails in several ways on a wrong arity; the next try may fit
            continue
        if row.name.startswith("NET."):
            assert type(node) in row.nodes and function_name(node) == row.name
            return
        if type(node) in row.nodes:
            return
    pytest.fail(f"{row.name} never parses into {[n.__name__ for n in row.nodes]}")


def test_the_table_covers_the_functions_this_server_had():
    for name in ("FARM_FINGERPRINT", "SHA256", "CONCAT", "SUBSTR", "TIMESTAMP_ADD", "EXTRACT", "JSON_VALUE",
                 "ARRAY_TO_STRING", "GENERATE_ARRAY", "STRING_AGG", "COUNTIF", "NEW_UUID", "GET_NEXT_SEQUENCE_VALUE"):
        assert ROWS_BY_NAME[name].state == "supported"
