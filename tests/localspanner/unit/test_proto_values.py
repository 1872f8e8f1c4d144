"""The SQL functions of proto values, below the client: what a restart can leave behind.

A generated column that reads a proto field is stored in the database file with the key of
the bundle it was created under; after ALTER PROTO BUNDLE and a restart only the newest
bundle is known, and the column must still compute (a restart in-process keeps every bundle,
so this is checked here rather than through the client).
"""

from __future__ import annotations

from watcher.localspanner.schema.proto_bundle import ProtoBundle
from watcher.localspanner.sql.protos import proto_cast, proto_field, rewrite_casts

from ..test_proto_columns import DESCRIPTORS, INFO


def test_an_unknown_bundle_key_falls_back_to_the_newest_bundle_holding_the_type() -> None:
    ProtoBundle(("music.SingerInfo", "music.Genre", "music.Address"), DESCRIPTORS)
    data = INFO.SerializeToString()
    assert proto_field(data, "0000000000000000", "music.SingerInfo", "nationality") == "NL"
    assert proto_cast(3, "0000000000000000", "ENUM", "STRING", "music.Genre", 0) == "ROCK"


def test_casts_to_proto_types_are_rewritten_outside_strings_only() -> None:
    assert rewrite_casts("SELECT CAST(CAST(x AS a.B) AS a.C), 'CAST(y AS a.B)'") == (
        "SELECT LS_PROTO_CAST(LS_PROTO_CAST(x, 'a.B', 0), 'a.C', 0), 'CAST(y AS a.B)'")
    assert rewrite_casts("SELECT (SELECT 1 AS x), CAST(1 AS STRING)") == "SELECT (SELECT 1 AS x), CAST(1 AS STRING)"
