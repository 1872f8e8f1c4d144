"""Parsing of the full-text search index statements, on top of the DDL parser's token helpers.

``CREATE SEARCH INDEX name ON table (c1, c2) [STORING (s1, ...)] [PARTITION BY p1, ...]
[ORDER BY o1 [ASC|DESC], ...] [OPTIONS (name = value, ...)]`` and
``DROP SEARCH INDEX [IF EXISTS] name``. The indexed columns must be TOKENLIST columns;
``schema_updater`` checks that against the table.

Example:
    >>> from watcher.localspanner.ddl.parser import parse_ddl
    >>> node = parse_ddl("CREATE SEARCH INDEX AlbumsIndex ON Albums(Title_Tokens) STORING (Genre) "
    ...                  "ORDER BY ReleaseTimestamp DESC OPTIONS (sort_order_sharding = true)")
    >>> node.columns, node.storing, node.order_by[0].descending, node.options
    (('Title_Tokens',), ('Genre',), True, (('sort_order_sharding', True),))
"""

from __future__ import annotations

from typing import Any

from . import change_stream_parser, nodes


def create(p: Any) -> nodes.CreateSearchIndex:
    """After ``CREATE SEARCH INDEX``."""
    name = p.name("search index name")
    p.expect("ON")
    table = p.name("table name")
    columns = p.comma_list(lambda: p.name("column name"))
    storing: list[str] = []
    if p.accept("STORING"):
        storing = p.comma_list(lambda: p.name("column name"))
    partition_by: list[str] = []
    if p.accept("PARTITION", "BY"):
        partition_by = _names(p)
    order_by = []
    if p.accept("ORDER", "BY"):
        order_by.append(p.key_part())
        while p.at_symbol(","):
            p.advance()
            order_by.append(p.key_part())
    options: tuple[tuple[str, nodes.OptionValue], ...] = ()
    if p.accept("OPTIONS"):
        options = change_stream_parser.options_clause(p)
    return nodes.CreateSearchIndex(name, table, tuple(columns), tuple(storing), tuple(partition_by),
                                   tuple(order_by), options)


def drop(p: Any) -> nodes.DropSearchIndex:
    """After ``DROP SEARCH INDEX``."""
    if_exists = p.accept("IF", "EXISTS")
    return nodes.DropSearchIndex(p.name("search index name"), if_exists)


def _names(p: Any) -> list[str]:
    names = [p.name("column name")]
    while p.at_symbol(","):
        p.advance()
        names.append(p.name("column name"))
    return names
