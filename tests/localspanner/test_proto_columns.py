"""Proto bundles and PROTO / ENUM columns through the official client.

The descriptors are built here with ``descriptor_pb2`` (what ``protoc --descriptor_set_out``
writes): a ``music.SingerInfo`` message with a nested ``music.Address`` and a ``music.Genre``
enum. The client encodes message values as their bytes and enum values as numbers, and
decodes results with the ``column_info`` the application passes.
"""

from __future__ import annotations

import base64
import os

import pytest
from google.api_core import exceptions
from google.cloud import spanner
from google.cloud.spanner_v1 import TypeCode, param_types
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.internal.enum_type_wrapper import EnumTypeWrapper

from tests.localspanner.test_change_streams import _now, read_stream

_EXTERNAL = os.environ.get("SPANNER_EMULATOR_HOST")


def _descriptor_set() -> tuple[bytes, type, EnumTypeWrapper]:
    F = descriptor_pb2.FieldDescriptorProto
    f = descriptor_pb2.FileDescriptorProto(name="music.proto", package="music", syntax="proto3")
    genre = f.enum_type.add(name="Genre")
    for number, name in enumerate(["POP", "JAZZ", "FOLK", "ROCK"]):
        genre.value.add(name=name, number=number)
    address = f.message_type.add(name="Address")
    address.field.add(name="city", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    info = f.message_type.add(name="SingerInfo")
    info.field.add(name="singer_id", number=1, type=F.TYPE_INT64, label=F.LABEL_OPTIONAL)
    info.field.add(name="nationality", number=2, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    info.field.add(name="genre", number=3, type=F.TYPE_ENUM, label=F.LABEL_OPTIONAL, type_name=".music.Genre")
    info.field.add(name="address", number=4, type=F.TYPE_MESSAGE, label=F.LABEL_OPTIONAL, type_name=".music.Address")
    info.field.add(name="tags", number=5, type=F.TYPE_STRING, label=F.LABEL_REPEATED)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(f)
    singer_info = message_factory.GetMessageClass(pool.FindMessageTypeByName("music.SingerInfo"))
    return (descriptor_pb2.FileDescriptorSet(file=[f]).SerializeToString(), singer_info,
            EnumTypeWrapper(pool.FindEnumTypeByName("music.Genre")))


DESCRIPTORS, SingerInfo, Genre = _descriptor_set()
BUNDLE = "CREATE PROTO BUNDLE (music.SingerInfo, music.Genre,)"
SINGERS = ("CREATE TABLE Singers (Id INT64 NOT NULL, Info music.SingerInfo, G music.Genre, "
           "Infos ARRAY<music.SingerInfo>, Gs ARRAY<music.Genre>) PRIMARY KEY (Id)")
BY_GENRE = "CREATE INDEX SingersByGenre ON Singers(G)"
INFO = SingerInfo(singer_id=7, nationality="NL", genre=Genre.Value("ROCK"), tags=["a", "b"])
INFO.address.city = "Utrecht"
COLUMN_INFO = {"Info": SingerInfo(), "Infos": SingerInfo(), "G": Genre, "Gs": Genre}


@pytest.fixture
def db(make_database):
    db = make_database([BUNDLE, SINGERS, BY_GENRE], proto_descriptors=DESCRIPTORS)
    with db.batch() as b:
        b.insert("Singers", ("Id", "Info", "G", "Infos", "Gs"),
                 [(1, INFO, Genre.Value("ROCK"), [INFO, None], [Genre.Value("JAZZ"), None]),
                  (2, SingerInfo(singer_id=8), Genre.Value("POP"), [], [])])
    return db


def _rows(db, sql, **kwargs):
    with db.snapshot() as snap:
        result = snap.execute_sql(sql, **kwargs)
        rows = [list(r) for r in result]
        return rows, [(f.name, TypeCode(f.type_.code).name, f.type_.proto_type_fqn) for f in result.fields]


def test_proto_and_enum_columns_come_back_as_the_application_reads_them(db):
    rows, fields = _rows(db, "SELECT Id, Info, G, Infos, Gs FROM Singers ORDER BY Id", column_info=COLUMN_INFO)
    assert rows[0] == [1, INFO, "ROCK", [INFO, None], ["JAZZ", None]]
    assert rows[1] == [2, SingerInfo(singer_id=8), "POP", [], []]
    assert fields[1:3] == [("Info", "PROTO", "music.SingerInfo"), ("G", "ENUM", "music.Genre")]
    with db.snapshot() as snap:  # without column_info the client hands over the raw forms
        raw = list(snap.read("Singers", ("Info", "G"), spanner.KeySet(keys=[[1]])))
    assert raw == [[INFO.SerializeToString(), 3]]


def test_an_enum_index_is_read_by_enum_key(db):
    with db.snapshot() as snap:
        rows = list(snap.read("Singers", ("Id", "G"), spanner.KeySet(keys=[[Genre.Value("POP")]]),
                              index="SingersByGenre"))
    assert rows == [[2, 0]]


def test_proto_values_bind_as_parameters_and_in_dml(db):
    other = SingerInfo(singer_id=9, nationality="BE")
    db.run_in_transaction(lambda txn: txn.execute_update(
        "INSERT INTO Singers (Id, Info, G) VALUES (3, @info, @g)",
        params={"info": other, "g": Genre.Value("FOLK")},
        param_types={"info": param_types.ProtoMessage(other), "g": param_types.ProtoEnum(Genre)}))
    rows, fields = _rows(db, "SELECT Info AS Info, G FROM Singers WHERE Id = 3", column_info=COLUMN_INFO)
    assert rows == [[other, "FOLK"]]
    rows, _ = _rows(db, "SELECT @p AS Info", params={"p": INFO}, param_types={"p": param_types.ProtoMessage(INFO)},
                    column_info=COLUMN_INFO)
    assert rows == [[INFO]]


def test_fields_of_proto_values_are_read_in_queries(db):
    rows, fields = _rows(db, "SELECT s.Info.nationality, Info.singer_id, Info.address.city, Info.genre, Info.tags "
                             "FROM Singers AS s WHERE s.Info.singer_id = 7")
    assert rows == [["NL", 7, "Utrecht", 3, ["a", "b"]]]
    assert [f[1] for f in fields] == ["STRING", "INT64", "STRING", "ENUM", "ARRAY"]
    rows, _ = _rows(db, "SELECT Id, Info.address.city, Info.nationality FROM Singers ORDER BY Id")
    assert rows == [[1, "Utrecht", "NL"], [2, None, ""]]  # an unset message is NULL, an unset string ''
    with pytest.raises(exceptions.InvalidArgument, match="height"):
        _rows(db, "SELECT Info.height FROM Singers")


def test_arrays_of_protos_and_enums_are_unnested_and_indexed(db):
    rows, _ = _rows(db, "SELECT i.nationality FROM Singers, UNNEST(Infos) AS i WHERE i IS NOT NULL")
    assert rows == [["NL"]]
    rows, _ = _rows(db, "SELECT Infos[OFFSET(0)].address.city, x FROM Singers, UNNEST(Gs) AS x WHERE x = 'JAZZ'")
    assert rows == [["Utrecht", 1]]
    rows, _ = _rows(db, "SELECT Id FROM Singers WHERE 'JAZZ' IN UNNEST(Gs)")
    assert rows == [[1]]


def test_dml_filters_and_sets_by_proto_fields_and_enum_names(db):
    count = db.run_in_transaction(lambda txn: txn.execute_update(
        "UPDATE Singers SET G = 'FOLK' WHERE Info.singer_id = 7"))
    assert count == 1
    rows, _ = _rows(db, "SELECT Id, CAST(G AS STRING) FROM Singers ORDER BY Id")
    assert rows == [[1, "FOLK"], [2, "POP"]]


def test_a_generated_column_of_a_proto_field_can_be_indexed(make_database):
    db = make_database([BUNDLE, "CREATE TABLE Fans (Id INT64 NOT NULL, Info music.SingerInfo, "
                                "City STRING(MAX) AS (Info.address.city) STORED) PRIMARY KEY (Id)",
                        "CREATE INDEX FansByCity ON Fans(City)"], proto_descriptors=DESCRIPTORS)
    with db.batch() as b:
        b.insert("Fans", ("Id", "Info"), [(1, INFO), (2, SingerInfo(singer_id=2))])
    rows, _ = _rows(db, "SELECT Id, City FROM Fans@{FORCE_INDEX=FansByCity} WHERE City = 'Utrecht'")
    assert rows == [[1, "Utrecht"]]


def test_casts_between_proto_and_bytes_and_enum_and_int64_or_string(db):
    rows, fields = _rows(db, "SELECT CAST(Info AS BYTES), CAST(G AS INT64), CAST(G AS STRING) FROM Singers WHERE Id = 1")
    assert rows == [[base64.b64encode(INFO.SerializeToString()), 3, "ROCK"]]  # the client keeps BYTES base64
    rows, fields = _rows(db, "SELECT CAST('JAZZ' AS music.Genre) AS G, CAST(2 AS `music.Genre`) AS Gs, "
                             "CAST(@b AS music.SingerInfo) AS Info", params={"b": base64.b64encode(INFO.SerializeToString())},
                         param_types={"b": param_types.BYTES}, column_info=COLUMN_INFO)
    assert rows == [["JAZZ", "FOLK", INFO]]
    assert [f[1:] for f in fields] == [("ENUM", "music.Genre"), ("ENUM", "music.Genre"), ("PROTO", "music.SingerInfo")]
    rows, _ = _rows(db, "SELECT Id FROM Singers WHERE G = 'ROCK'")
    assert rows == [[1]]
    rows, _ = _rows(db, "SELECT SAFE_CAST(99 AS music.Genre), SAFE_CAST(b'not a proto' AS music.SingerInfo)")
    assert rows == [[None, None]]
    with pytest.raises(exceptions.GoogleAPICallError, match="music.Genre"):
        _rows(db, "SELECT CAST(99 AS music.Genre)")
    with pytest.raises(exceptions.InvalidArgument, match="music.Other"):
        _rows(db, "SELECT CAST(1 AS music.Other)")


def test_ddl_information_schema_and_descriptors_show_the_bundle(db):
    db.reload()
    assert db.ddl_statements[0] == "CREATE PROTO BUNDLE (\n  music.SingerInfo,\n  music.Genre,\n)"
    assert "  Info music.SingerInfo,\n  G music.Genre,\n  Infos ARRAY<music.SingerInfo>," in db.ddl_statements[1]
    assert db.proto_descriptors == DESCRIPTORS
    rows, _ = _rows(db, "SELECT COLUMN_NAME, SPANNER_TYPE FROM INFORMATION_SCHEMA.COLUMNS "
                        "WHERE TABLE_NAME = 'Singers' ORDER BY ORDINAL_POSITION")
    assert rows[1:] == [["Info", "PROTO<music.SingerInfo>"], ["G", "ENUM<music.Genre>"],
                        ["Infos", "ARRAY<PROTO<music.SingerInfo>>"], ["Gs", "ARRAY<ENUM<music.Genre>>"]]


def test_a_bytes_column_becomes_a_proto_column_and_back(make_database):
    db = make_database([BUNDLE, "CREATE TABLE Raw (Id INT64 NOT NULL, Data BYTES(MAX), N INT64) PRIMARY KEY (Id)"],
                       proto_descriptors=DESCRIPTORS)
    with db.batch() as b:
        b.insert("Raw", ("Id", "Data", "N"), [(1, base64.b64encode(INFO.SerializeToString()), 2)])
    db.update_ddl(["ALTER TABLE Raw ALTER COLUMN Data music.SingerInfo",
                   "ALTER TABLE Raw ALTER COLUMN N music.Genre"]).result(60)
    rows, fields = _rows(db, "SELECT Data.nationality, CAST(N AS STRING) FROM Raw")
    assert rows == [["NL", "FOLK"]]
    db.update_ddl(["ALTER TABLE Raw ALTER COLUMN Data BYTES(MAX)", "ALTER TABLE Raw ALTER COLUMN N INT64"]).result(60)
    rows, _ = _rows(db, "SELECT Data, N FROM Raw")
    assert rows == [[base64.b64encode(INFO.SerializeToString()), 2]]


def test_alter_and_drop_proto_bundle(make_database):
    db = make_database()
    db.update_ddl([BUNDLE], proto_descriptors=DESCRIPTORS).result(60)
    db.update_ddl(["ALTER PROTO BUNDLE INSERT (music.Address) UPDATE (music.Genre) DELETE (music.SingerInfo)",
                   "CREATE TABLE Places (Id INT64 NOT NULL, Address music.Address) PRIMARY KEY (Id)"],
                  proto_descriptors=DESCRIPTORS).result(60)
    db.reload()
    assert db.ddl_statements[0] == "CREATE PROTO BUNDLE (\n  music.Genre,\n  music.Address,\n)"
    with pytest.raises(exceptions.FailedPrecondition, match="music.Address"):
        db.update_ddl(["ALTER PROTO BUNDLE DELETE (music.Address)"], proto_descriptors=DESCRIPTORS).result(60)
    with pytest.raises(exceptions.FailedPrecondition, match="Places.Address"):
        db.update_ddl(["DROP PROTO BUNDLE"]).result(60)
    db.update_ddl(["DROP TABLE Places", "DROP PROTO BUNDLE"]).result(60)
    db.reload()
    assert list(db.ddl_statements) == []


@pytest.mark.parametrize(("ddl", "descriptors", "error", "names"), [
    ([BUNDLE], None, exceptions.InvalidArgument, "proto_descriptors"),
    (["CREATE PROTO BUNDLE (music.Nope)"], DESCRIPTORS, exceptions.InvalidArgument, "music.Nope"),
    (["CREATE TABLE T (Id INT64, I music.SingerInfo) PRIMARY KEY (Id)"], DESCRIPTORS, exceptions.NotFound,
     "music.SingerInfo"),
    ([BUNDLE, "CREATE TABLE T (I music.SingerInfo) PRIMARY KEY (I)"], DESCRIPTORS, exceptions.FailedPrecondition,
     "T.I"),
    ([BUNDLE, BUNDLE], DESCRIPTORS, exceptions.FailedPrecondition, "already exists"),
    (["ALTER PROTO BUNDLE INSERT (music.Genre)"], DESCRIPTORS, exceptions.NotFound, "does not exist"),
])
def test_proto_bundle_statements_that_spanner_refuses(make_database, ddl, descriptors, error, names):
    db = make_database()
    with pytest.raises(error, match=names):
        db.update_ddl(ddl, proto_descriptors=descriptors).result(60)


def test_a_change_stream_shows_proto_and_enum_columns(make_database):
    db = make_database([BUNDLE, SINGERS, "CREATE CHANGE STREAM S FOR Singers"], proto_descriptors=DESCRIPTORS)
    start = _now(db)
    with db.batch() as b:
        b.insert("Singers", ("Id", "Info", "G"), [(1, INFO, Genre.Value("ROCK"))])
    (record,) = read_stream(db, "S", start, _now(db))
    types = {name: t for name, t, _, _ in record["column_types"]}
    assert types["Info"] == {"code": "PROTO", "proto_type_fqn": "music.SingerInfo"}
    assert types["Gs"] == {"code": "ARRAY", "array_element_type": {"code": "ENUM", "proto_type_fqn": "music.Genre"}}
    new = record["mods"][0]["new_values"]
    assert base64.b64decode(new["Info"]) == INFO.SerializeToString() and new["G"] == "3"


@pytest.mark.skipif(bool(_EXTERNAL), reason="starts its own local server; SPANNER_EMULATOR_HOST is set")
def test_the_bundle_and_its_values_survive_a_restart(tmp_path, monkeypatch):
    from watcher.localspanner.server import LocalSpanner

    def client(server):
        monkeypatch.setenv("SPANNER_EMULATOR_HOST", server.emulator_host)
        return spanner.Client(project="proto-project")

    data_dir = str(tmp_path / "data")
    with LocalSpanner(data_dir=data_dir) as server:
        instance = client(server).instance("proto-instance", "projects/proto-project/instanceConfigs/emulator-config")
        instance.create().result(60)
        db = instance.database("protos", ddl_statements=[BUNDLE, SINGERS], proto_descriptors=DESCRIPTORS)
        db.create().result(60)
        with db.batch() as b:
            b.insert("Singers", ("Id", "Info", "G"), [(1, INFO, Genre.Value("ROCK"))])
    with LocalSpanner(data_dir=data_dir) as server:
        db = client(server).instance("proto-instance").database("protos")
        db.reload()
        assert db.proto_descriptors == DESCRIPTORS and db.ddl_statements[0].startswith("CREATE PROTO BUNDLE")
        rows, _ = _rows(db, "SELECT Info, G, Info.address.city FROM Singers", column_info=COLUMN_INFO)
        assert rows == [[INFO, "ROCK", "Utrecht"]]
