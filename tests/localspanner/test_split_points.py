"""AddSplitPoints through the official client's database admin API: accepted, or refused
INVALID_ARGUMENT naming what is wrong."""

from __future__ import annotations

import datetime

import pytest
from google.api_core import exceptions
from google.cloud.spanner_admin_database_v1.types import SplitPoints

from tests.conftest import emulator_lacks

pytestmark = emulator_lacks("AddSplitPoints")

DDL = [
    "CREATE TABLE Singers (SingerId INT64 NOT NULL, Name STRING(MAX)) PRIMARY KEY (SingerId)",
    "CREATE TABLE Albums (SingerId INT64 NOT NULL, AlbumId STRING(20) NOT NULL, Released DATE) "
    "PRIMARY KEY (SingerId, AlbumId), INTERLEAVE IN PARENT Singers",
    "CREATE INDEX AlbumsByRelease ON Albums (Released)",
]


@pytest.fixture(scope="module")
def split_db(instance):
    import uuid

    db = instance.database(f"splits-{uuid.uuid4().hex[:8]}", ddl_statements=DDL)
    db.create().result(60)
    yield db
    db.drop()


def _add(client, db, *points: SplitPoints) -> None:
    client.database_admin_api.add_split_points(database=db.name, split_points=list(points))


def _point(keys: list[list], **kwargs) -> SplitPoints:
    return SplitPoints(keys=[SplitPoints.Key(key_parts=k) for k in keys], **kwargs)


def _in(days: float):
    return datetime.datetime.now(datetime.UTC) + datetime.timedelta(days=days)


def test_split_points_on_tables_and_indexes_are_accepted(spanner_client, split_db):
    _add(spanner_client, split_db,
         _point([["100"], ["200"]], table="Singers"),
         _point([["100"], ["100", "b"]], table="Albums"),                    # a key prefix, and a whole key
         _point([["2024-01-01"], ["2025-01-01", "7", "x"]], index="AlbumsByRelease"),  # index key, then the table's
         _point([["300"]], table="Singers", expire_time=_in(29)),
         _point([["400"]], table="Singers", expire_time=_in(-1)))            # in the past: expires at once


def test_split_point_on_an_index_may_name_its_table(spanner_client, split_db):
    _add(spanner_client, split_db, _point([["2024-06-01"]], table="Albums", index="AlbumsByRelease"))


@pytest.mark.parametrize(("point", "named"), [
    (_point([["1"]], table="Nope"), "Nope"),
    (_point([["1"]], index="NoSuchIndex"), "NoSuchIndex"),
    (_point([["2024-01-01"]], table="Singers", index="AlbumsByRelease"), "AlbumsByRelease"),
    (_point([["1"]]), "neither a table nor an index"),
    (_point([], table="Singers"), "no keys"),
    (_point([[]], table="Singers"), "key part"),
    (_point([["one"]], table="Singers"), "SingerId"),
    (_point([["1", "a"]], table="Singers"), "key parts"),
    (_point([["1", 5]], table="Albums"), "AlbumId"),
    (_point([["not a date"]], index="AlbumsByRelease"), "Released"),
    (_point([["1"]], table="Singers", expire_time=_in(31)), "expire_time"),
], ids=["unknown table", "unknown index", "index of another table", "no target", "no keys", "empty key",
        "INT64 key not a number", "too many key parts", "STRING key a number", "DATE key not a date", "expiry too far"])
def test_bad_split_point_is_invalid_and_says_why(spanner_client, split_db, point, named):
    with pytest.raises(exceptions.InvalidArgument, match=named):
        _add(spanner_client, split_db, _point([["1"]], table="Singers"), point)


def test_split_points_of_a_missing_database_are_not_found(spanner_client, instance):
    with pytest.raises(exceptions.NotFound):
        spanner_client.database_admin_api.add_split_points(
            database=f"{instance.name}/databases/no-such-db", split_points=[_point([["1"]], table="T")])
