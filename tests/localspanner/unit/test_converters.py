"""Protobuf <-> request-model conversion of the gRPC edge, and result streaming."""

from __future__ import annotations

import math

import pytest
from google.cloud.spanner_v1 import param_types
from google.cloud.spanner_v1.types import keys as keys_types
from google.cloud.spanner_v1.types import mutation as mutation_types
from google.cloud.spanner_v1.types import result_set as result_set_types
from google.cloud.spanner_v1.types import spanner as spanner_types
from google.cloud.spanner_v1.types import transaction as txn_types
from google.cloud.spanner_v1.types import type as type_types
from google.protobuf import duration_pb2, struct_pb2, timestamp_pb2

from watcher.localspanner.common.requests import Field, ResultStream, Staleness, TransactionInfo, TransactionKind
from watcher.localspanner.datamodel import types as T
from watcher.localspanner.errors import Code, SpannerError
from watcher.localspanner.frontend import converters as conv
from watcher.localspanner.frontend import wire

PartialResultSet = result_set_types.PartialResultSet.pb()
ResultSet = result_set_types.ResultSet.pb()
CLIENT_RECEIVE_LIMIT = 4 << 20

WIRE_VALUES = [
    None, True, False, 0.0, -1.5, 1e308, "", "42", "-9223372036854775808", "NaN", "Infinity",
    "héllo ✓", "x" * 5000, "y" * 20000, "aGVsbG8=", "2024-05-01T10:00:00.123456789Z", "2024-05-01",
    "12345678901234567890123456789.123456789", '{"a":[1,2]}',
    [], ["1", None, "3"], [["a", 1.0], [None, True]], ["s" * 200] * 50,
]


def _pb(message):
    return type(message).pb(message)


def _round_trip(wire_value):
    return conv.value_to_wire(conv.value_to_pb(wire_value))


# --- values ----------------------------------------------------------------------------------

@pytest.mark.parametrize("value", WIRE_VALUES, ids=lambda v: repr(v)[:30])
def test_value_round_trip(value):
    assert _round_trip(value) == value


def test_value_encoding_matches_protobuf():
    for value in WIRE_VALUES:
        assert conv.value_to_pb(value) == _reference_value(value)


def _reference_value(value) -> struct_pb2.Value:
    if value is None:
        return struct_pb2.Value(null_value=0)
    if isinstance(value, bool):
        return struct_pb2.Value(bool_value=value)
    if isinstance(value, float):
        return struct_pb2.Value(number_value=value)
    if isinstance(value, str):
        return struct_pb2.Value(string_value=value)
    return struct_pb2.Value(list_value=struct_pb2.ListValue(values=[_reference_value(v) for v in value]))


def test_nan_float_survives():
    assert math.isnan(_round_trip(float("nan")))


def test_ints_and_bytes_are_sent_as_spanner_text():
    assert conv.value_to_pb(7).string_value == "7"
    assert conv.value_to_pb(b"hi").string_value == "aGk="


def test_unsupported_values_are_invalid_argument():
    with pytest.raises(SpannerError) as info:
        conv.value_to_wire(struct_pb2.Value(struct_value=struct_pb2.Struct()))
    assert info.value.code == Code.INVALID_ARGUMENT
    with pytest.raises(SpannerError):
        conv.value_to_wire(struct_pb2.Value())
    with pytest.raises(TypeError):
        wire.LIST_ITEMS.encode([object()])


# --- types -----------------------------------------------------------------------------------

@pytest.mark.parametrize("spanner_type", [
    T.BOOL, T.INT64, T.FLOAT64, T.TIMESTAMP, T.DATE, T.STRING, T.BYTES, T.NUMERIC, T.JSON,
    T.array_of(T.INT64), T.array_of(T.STRING),
    T.struct_of(("a", T.INT64), ("", T.array_of(T.DATE))),
    T.array_of(T.struct_of(("n", T.NUMERIC))),
    T.proto_of("music.SingerInfo"), T.array_of(T.enum_of("music.Genre")),
], ids=str)
def test_type_round_trip(spanner_type):
    assert conv.type_from_pb(conv.type_to_pb(spanner_type)) == spanner_type


def test_type_from_client_param_types():
    array = param_types.Array(param_types.TIMESTAMP)
    assert conv.type_from_pb(_pb(array)) == T.array_of(T.TIMESTAMP)
    struct = param_types.Struct([param_types.StructField("x", param_types.INT64)])
    assert conv.type_from_pb(_pb(struct)) == T.struct_of(("x", T.INT64))


# FLOAT32, UUID, INTERVAL (test_new_types.py), PROTO and ENUM (test_proto_columns.py) are supported now.
@pytest.mark.parametrize("code", [99])
def test_unknown_types_are_unimplemented(code):
    with pytest.raises(SpannerError) as info:
        conv.type_from_pb(type_types.Type.pb()(code=int(code)))
    assert info.value.code == Code.UNIMPLEMENTED


# --- statements, key sets, mutations ----------------------------------------------------------

def test_statement_params_and_inferred_types():
    request = _pb(spanner_types.ExecuteSqlRequest(
        sql="SELECT @a, @b",
        params=struct_pb2.Struct(fields={"a": struct_pb2.Value(string_value="5"),
                                         "b": struct_pb2.Value(list_value=struct_pb2.ListValue(values=[struct_pb2.Value(bool_value=True)]))}),
        param_types={"a": param_types.INT64},
    ))
    statement = conv.statement_from_pb(request.sql, request.params, request.param_types)
    assert statement.sql == "SELECT @a, @b"
    assert statement.params == {"a": "5", "b": [True]}
    assert statement.param_types == {"a": T.INT64}  # b is left for the backend to infer


def test_key_set_with_keys_ranges_and_all():
    ks = keys_types.KeySet(
        keys=[["1", "a"], ["2", "b"]],
        ranges=[keys_types.KeyRange(start_closed=["1"], end_open=["5"]),
                keys_types.KeyRange(start_open=["7"], end_closed=["9", "z"]),
                keys_types.KeyRange(end_closed=["3"])],
        all_=True,
    )
    got = conv.key_set_from_pb(_pb(ks))
    assert got.keys == [["1", "a"], ["2", "b"]]
    assert got.all is True
    first, second, third = got.ranges
    assert (first.start, first.start_closed, first.end, first.end_closed) == (["1"], True, ["5"], False)
    assert (second.start, second.start_closed, second.end, second.end_closed) == (["7"], False, ["9", "z"], True)
    assert third.start is None and third.end == ["3"]


@pytest.mark.parametrize("op", ["insert", "update", "insert_or_update", "replace"])
def test_write_mutations(op):
    write = mutation_types.Mutation.Write(table="Singers", columns=["Id", "Name", "Ts"],
                                          values=[["1", "Ann", "spanner.commit_timestamp()"], ["2", None, None]])
    got = conv.mutation_from_pb(_pb(mutation_types.Mutation(**{op: write})))
    assert (got.op, got.table, got.columns) == (op, "Singers", ("Id", "Name", "Ts"))
    assert got.rows == [["1", "Ann", "spanner.commit_timestamp()"], ["2", None, None]]
    assert got.key_set is None


def test_delete_mutation():
    delete = mutation_types.Mutation.Delete(table="T", key_set=keys_types.KeySet(keys=[["3"]]))
    got = conv.mutation_from_pb(_pb(mutation_types.Mutation(delete=delete)))
    assert (got.op, got.table, got.key_set.keys) == ("delete", "T", [["3"]])


def test_empty_mutation_is_invalid():
    with pytest.raises(SpannerError) as info:
        conv.mutation_from_pb(mutation_types.Mutation.pb()())
    assert info.value.code == Code.INVALID_ARGUMENT


# --- transactions ------------------------------------------------------------------------------

ReadOnly = txn_types.TransactionOptions.ReadOnly
TS = timestamp_pb2.Timestamp(seconds=1_700_000_000, nanos=123)
DUR = duration_pb2.Duration(seconds=10, nanos=5)


@pytest.mark.parametrize("read_only, bound, timestamp, staleness", [
    (ReadOnly(strong=True), Staleness.STRONG, None, None),
    (ReadOnly(read_timestamp=TS), Staleness.READ_TIMESTAMP, 1_700_000_000_000_000_123, None),
    (ReadOnly(min_read_timestamp=TS), Staleness.MIN_READ_TIMESTAMP, 1_700_000_000_000_000_123, None),
    (ReadOnly(exact_staleness=DUR), Staleness.EXACT_STALENESS, None, 10_000_000_005),
    (ReadOnly(max_staleness=DUR), Staleness.MAX_STALENESS, None, 10_000_000_005),
])
def test_read_only_bounds(read_only, bound, timestamp, staleness):
    read_only.return_read_timestamp = True
    options = conv.transaction_options_from_pb(_pb(txn_types.TransactionOptions(read_only=read_only)))
    assert options.kind == TransactionKind.READ_ONLY
    assert options.read_only.bound == bound
    assert options.read_only.timestamp_nanos == timestamp
    assert options.read_only.staleness_nanos == staleness
    assert options.read_only.return_read_timestamp is True


@pytest.mark.parametrize("mode, kind", [
    ({"read_write": {}}, TransactionKind.READ_WRITE),
    ({"partitioned_dml": {}}, TransactionKind.PARTITIONED_DML),
])
def test_read_write_and_partitioned_dml(mode, kind):
    assert conv.transaction_options_from_pb(_pb(txn_types.TransactionOptions(mode))).kind == kind


def _selector(**kwargs):
    request = spanner_types.ExecuteSqlRequest(sql="SELECT 1")
    if kwargs:
        request.transaction = txn_types.TransactionSelector(**kwargs)
    return conv.selector_from_pb(_pb(request))


def test_transaction_selectors():
    assert _selector() is None
    assert _selector(id=b"tx1").id == b"tx1"
    single = _selector(single_use=txn_types.TransactionOptions(read_only=ReadOnly(strong=True)))
    assert single.single_use.kind == TransactionKind.READ_ONLY and single.begin is None
    begin = _selector(begin=txn_types.TransactionOptions(read_write={}))
    assert begin.begin.kind == TransactionKind.READ_WRITE and begin.single_use is None


def test_transaction_info_to_pb():
    pb = conv.transaction_to_pb(TransactionInfo(b"abc", 1_700_000_000_000_000_123))
    assert pb.id == b"abc" and (pb.read_timestamp.seconds, pb.read_timestamp.nanos) == (1_700_000_000, 123)
    assert not conv.transaction_to_pb(TransactionInfo(b"x")).HasField("read_timestamp")


def test_negative_nanos_make_a_valid_timestamp():
    ts = conv.timestamp_pb(-1)
    assert (ts.seconds, ts.nanos) == (-1, 999_999_999)
    assert conv.nanos_from_timestamp(ts) == -1


# --- results -------------------------------------------------------------------------------------

FIELDS = [Field("Id", T.INT64), Field("Name", T.STRING), Field("Tags", T.array_of(T.STRING))]


def _stream(rows, **kwargs):
    return ResultStream(list(FIELDS), iter(rows), **kwargs)


def _decode(messages):
    parsed = [PartialResultSet.FromString(m) for m in messages]
    values = [conv.value_to_wire(v) for p in parsed for v in p.values]
    return parsed, [values[i:i + len(FIELDS)] for i in range(0, len(values), len(FIELDS))]


def test_empty_result_is_one_message_with_metadata():
    parsed, rows = _decode(list(conv.partial_result_sets(_stream([]))))
    assert len(parsed) == 1 and rows == []
    assert [f.name for f in parsed[0].metadata.row_type.fields] == ["Id", "Name", "Tags"]
    assert parsed[0].metadata.row_type.fields[2].type_.array_element_type.code == int(T.TypeCode.STRING)
    assert parsed[0].resume_token


def test_metadata_first_stats_last_whole_rows_and_limits():
    rows = [[str(i), "n" * (i % 300), ["t", None]] for i in range(30_000)]
    result = _stream(rows, transaction=TransactionInfo(b"tx", 1_000_000_000))
    result.row_count_exact = 0
    messages = list(conv.partial_result_sets(result, max_bytes=256 << 10, max_rows=5_000))
    parsed, got = _decode(messages)
    assert got == rows
    assert len(parsed) > 3
    assert parsed[0].HasField("metadata") and parsed[0].metadata.transaction.id == b"tx"
    assert parsed[0].metadata.transaction.read_timestamp.seconds == 1
    assert not any(p.HasField("metadata") for p in parsed[1:])
    assert parsed[-1].HasField("stats") and not any(p.HasField("stats") for p in parsed[:-1])
    for p in parsed:
        assert len(p.values) % len(FIELDS) == 0  # whole rows only
        assert len(p.values) // len(FIELDS) <= 5_000
        assert p.resume_token
    assert max(map(len, messages)) < 512 << 10


def test_large_result_stays_under_the_client_limit_with_defaults():
    big = "x" * 100_000
    rows = [[str(i), big, [big[:1000]] * 10] for i in range(200)]  # ~22 MB in all
    messages = list(conv.partial_result_sets(_stream(rows)))
    assert len(messages) > 10
    assert max(map(len, messages)) < CLIENT_RECEIVE_LIMIT
    assert _decode(messages)[1] == rows


def test_resume_token_skips_rows_already_sent():
    rows = [[str(i), "n", []] for i in range(100)]
    messages = list(conv.partial_result_sets(_stream(rows), max_rows=30))
    token = PartialResultSet.FromString(messages[1]).resume_token
    skip = conv.rows_to_skip(token)
    assert skip == 60
    parsed, rest = _decode(list(conv.partial_result_sets(_stream(rows), skip_rows=skip)))
    assert rest == rows[60:]
    with pytest.raises(SpannerError):
        conv.rows_to_skip(b"bogus")


def test_dml_stats_lower_bound_and_exact():
    result = _stream([])
    result.row_count_lower_bound = 12
    parsed, _ = _decode(list(conv.partial_result_sets(result)))
    assert parsed[-1].stats.row_count_lower_bound == 12
    result = _stream([])
    result.row_count_exact = 3
    rs = ResultSet.FromString(conv.result_set_bytes(result))
    assert rs.stats.row_count_exact == 3 and not rs.rows


def test_unary_result_set_rows():
    rows = [["1", "a", ["x"]], ["2", None, []]]
    rs = ResultSet.FromString(conv.result_set_bytes(_stream(rows, transaction=TransactionInfo(b"t"))))
    assert [conv.list_to_wire(r) for r in rs.rows] == rows
    assert rs.metadata.transaction.id == b"t"
    assert not rs.HasField("stats")


def test_rows_iterator_is_closed_when_the_client_goes_away():
    closed = []

    def rows():
        try:
            for i in range(1000):
                yield [str(i), "n", []]
        finally:
            closed.append(True)

    messages = conv.partial_result_sets(ResultStream(list(FIELDS), rows()), max_rows=10)
    next(messages)
    messages.close()
    assert closed == [True]
