"""TOKENLIST columns and search indexes in the schema: what is accepted, what is refused, what is protected."""

from __future__ import annotations

import pytest

from watcher.localspanner.errors import Code, SpannerError
from watcher.localspanner.schema.catalog import Catalog
from watcher.localspanner.schema.schema_updater import apply_statements

ALBUMS = ("CREATE TABLE Albums (Id UUID NOT NULL, Title STRING(MAX), Rating FLOAT32, "
          "Title_Tokens TOKENLIST AS (TOKENIZE_FULLTEXT(Title)) HIDDEN) PRIMARY KEY (Id)")
INDEX = "CREATE SEARCH INDEX AlbumsIndex ON Albums(Title_Tokens) STORING (Rating)"


@pytest.fixture(scope="module")
def indexed() -> Catalog:
    return apply_statements(Catalog(), [ALBUMS, INDEX])[0]


def refused(catalog: Catalog, statement: str, code: Code = Code.FAILED_PRECONDITION) -> str:
    with pytest.raises(SpannerError) as info:
        apply_statements(catalog, [statement])
    assert info.value.code == code, info.value
    return info.value.message


def test_the_index_is_kept_with_its_declared_names(indexed):
    [index] = indexed.search_indexes
    assert (index.name, index.table, index.columns, index.storing) == ("AlbumsIndex", "Albums", ("Title_Tokens",), ("Rating",))
    assert indexed.table("albums").column("title_tokens").hidden


@pytest.mark.parametrize(("statement", "words"), [
    ("CREATE SEARCH INDEX X ON Albums(Title)", ["TOKENLIST", "Albums.Title"]),
    ("CREATE SEARCH INDEX X ON Albums(Nope)", ["Nope", "Albums"]),
    ("CREATE SEARCH INDEX AlbumsIndex ON Albums(Title_Tokens)", ["AlbumsIndex"]),
    ("DROP TABLE Albums", ["AlbumsIndex"]),
    ("ALTER TABLE Albums DROP COLUMN Title_Tokens", ["AlbumsIndex"]),
    ("ALTER TABLE Albums DROP COLUMN Rating", ["AlbumsIndex"]),
    ("ALTER TABLE Albums ADD COLUMN T2 TOKENLIST", ["TOKENLIST", "Albums.T2", "generated"]),
])
def test_what_breaks_the_rules_is_refused_naming_it(indexed, statement, words):
    message = refused(indexed, statement)
    assert all(w in message for w in words), message


def test_tokenlist_cannot_be_a_key_or_an_array_element():
    assert "cannot use column" in refused(Catalog(), "CREATE TABLE K (T TOKENLIST AS (TOKENIZE_FULLTEXT('x'))) PRIMARY KEY (T)")
    assert "array element" in refused(Catalog(), "CREATE TABLE A (K INT64, T ARRAY<TOKENLIST>) PRIMARY KEY (K)")


def test_drop_search_index_frees_the_table(indexed):
    catalog, _ = apply_statements(indexed, ["DROP SEARCH INDEX AlbumsIndex", "DROP SEARCH INDEX IF EXISTS AlbumsIndex",
                                            "DROP TABLE Albums"])
    assert catalog.tables == () and catalog.search_indexes == ()
    assert refused(indexed, "DROP SEARCH INDEX Missing", Code.NOT_FOUND)
