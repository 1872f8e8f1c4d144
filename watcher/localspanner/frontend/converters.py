"""Protobuf <-> ``requests.py`` types, for the gRPC handlers.

Incoming messages are the raw protobuf classes underneath the client's proto-plus types
(``google.cloud.spanner_v1.types.X.pb()``), read by direct field access. Results go out
as serialized bytes (see ``wire.py``) split into messages well under the client's 4 MiB
receive limit.

Example:
    >>> from google.protobuf import struct_pb2
    >>> value_to_wire(struct_pb2.Value(string_value="42"))
    '42'
    >>> from watcher.localspanner.datamodel import types as T
    >>> type_from_pb(type_to_pb(T.array_of(T.INT64))) == T.array_of(T.INT64)
    True
"""

from __future__ import annotations

import itertools
import struct
from collections.abc import Iterator
from typing import Any

from google.cloud.spanner_v1.types import keys as keys_types
from google.cloud.spanner_v1.types import result_set as result_set_types
from google.cloud.spanner_v1.types import transaction as transaction_types
from google.cloud.spanner_v1.types import type as type_types
from google.protobuf import struct_pb2, timestamp_pb2

from .. import errors
from ..common.requests import (
    KeyRange,
    KeySet,
    Mutation,
    ReadOnlyOptions,
    RequestOptions,
    ResultStream,
    Staleness,
    Statement,
    TransactionInfo,
    TransactionKind,
    TransactionOptions,
    TransactionSelector,
)
from ..datamodel.types import NOT_ON_WIRE, SpannerType, TypeCode
from . import wire
from .pb_values import PbRows, list_to_wire, value_to_wire

TypePb = type_types.Type.pb()
StructTypePb = type_types.StructType.pb()
StructFieldPb = type_types.StructType.Field.pb()
TransactionPb = transaction_types.Transaction.pb()
ResultSetMetadataPb = result_set_types.ResultSetMetadata.pb()
ResultSetStatsPb = result_set_types.ResultSetStats.pb()
PartialResultSetPb = result_set_types.PartialResultSet.pb()
ResultSetPb = result_set_types.ResultSet.pb()
KeySetPb = keys_types.KeySet.pb()

#: A streamed message is closed once its encoded values reach this size...
MAX_MESSAGE_BYTES = 1 << 20
#: ...or once it holds this many rows, so that clients see rows while the scan goes on.
MAX_ROWS_PER_MESSAGE = 10_000

_NANOS = 1_000_000_000
_RESUME = struct.Struct(">Q")

# --- values (decoding: pb_values.py) ------------------------------------------------------

def value_to_pb(value: Any) -> struct_pb2.Value:
    """A wire value as a ``google.protobuf.Value`` message (slow path; rows use ``wire``).

    >>> value_to_pb(["1", None]).list_value.values[0].string_value
    '1'
    """
    return struct_pb2.Value.FromString(wire.value_body(value))


# --- types --------------------------------------------------------------------------------

_KNOWN_CODES = {int(c): c for c in TypeCode if c not in NOT_ON_WIRE}
# Names of the codes Spanner has but the local server does not (PROTO, ENUM), for errors.
_SPANNER_CODE_NAMES = {v.number: v.name for v in TypePb.DESCRIPTOR.fields_by_name["code"].enum_type.values}


def type_from_pb(t: Any) -> SpannerType:
    """A ``google.spanner.v1.Type`` as a :class:`SpannerType`."""
    code = _KNOWN_CODES.get(t.code)
    if code is None:
        raise errors.unsupported_type(_SPANNER_CODE_NAMES.get(t.code, f"with type code {t.code}"))
    if code == TypeCode.ARRAY:
        return SpannerType(code, element=type_from_pb(t.array_element_type))
    if code == TypeCode.STRUCT:
        return SpannerType(code, fields=tuple((f.name, type_from_pb(f.type_)) for f in t.struct_type.fields))
    return SpannerType(code, proto_fqn=t.proto_type_fqn)


def type_to_pb(t: SpannerType) -> Any:
    """A :class:`SpannerType` as a ``google.spanner.v1.Type`` (raw protobuf)."""
    pb = TypePb(code=int(t.code), proto_type_fqn=t.proto_fqn)
    if t.element is not None:
        pb.array_element_type.CopyFrom(type_to_pb(t.element))
    if t.code == TypeCode.STRUCT:
        pb.struct_type.SetInParent()
        for name, ftype in t.fields:
            pb.struct_type.fields.append(StructFieldPb(name=name, type_=type_to_pb(ftype)))
    return pb


# --- statements, key sets, mutations -------------------------------------------------------

def statement_from_pb(sql: str, params: struct_pb2.Struct, param_types: Any) -> Statement:
    """SQL text, its ``params`` Struct and ``param_types`` map as a :class:`Statement`.

    Parameter types the client left out (or sent unspecified) are left for the backend
    to infer from the value.
    """
    return Statement(
        sql=sql,
        params={name: value_to_wire(v) for name, v in params.fields.items()},
        param_types={name: type_from_pb(t) for name, t in param_types.items() if t.code},
    )


def key_set_from_pb(ks: Any) -> KeySet:
    """A ``google.spanner.v1.KeySet`` as a :class:`KeySet` (keys and bounds as wire values)."""
    return KeySet(
        keys=[list_to_wire(k) for k in ks.keys],
        ranges=[_key_range_from_pb(r) for r in ks.ranges],
        all=ks.all_,
    )


def _key_range_from_pb(r: Any) -> KeyRange:
    start_kind = r.WhichOneof("start_key_type")
    end_kind = r.WhichOneof("end_key_type")
    return KeyRange(
        start=list_to_wire(getattr(r, start_kind)) if start_kind else None,
        end=list_to_wire(getattr(r, end_kind)) if end_kind else None,
        start_closed=start_kind != "start_open",
        end_closed=end_kind == "end_closed",
    )


_WRITE_OPS = frozenset({"insert", "update", "insert_or_update", "replace"})


def mutation_from_pb(m: Any) -> Mutation:
    """A ``google.spanner.v1.Mutation`` as a :class:`Mutation`."""
    op = m.WhichOneof("operation")
    if op in _WRITE_OPS:
        write = getattr(m, op)
        return Mutation(op, write.table, tuple(write.columns[:]), PbRows(write.values))  # [:]: one C call, not one per column
    if op == "delete":
        return Mutation("delete", m.delete.table, key_set=key_set_from_pb(m.delete.key_set))
    raise errors.unsupported_mutation_kind(op)


# --- transactions -------------------------------------------------------------------------

def nanos_from_timestamp(ts: Any) -> int:
    return ts.seconds * _NANOS + ts.nanos


def timestamp_pb(nanos: int) -> timestamp_pb2.Timestamp:
    seconds, rest = divmod(nanos, _NANOS)
    return timestamp_pb2.Timestamp(seconds=seconds, nanos=rest)


# Read-only bound -> (Staleness, which ReadOnlyOptions field takes its nanoseconds).
_BOUNDS: dict[str | None, tuple[Staleness, str | None]] = {
    None: (Staleness.STRONG, None),
    "strong": (Staleness.STRONG, None),
    "read_timestamp": (Staleness.READ_TIMESTAMP, "timestamp_nanos"),
    "min_read_timestamp": (Staleness.MIN_READ_TIMESTAMP, "timestamp_nanos"),
    "exact_staleness": (Staleness.EXACT_STALENESS, "staleness_nanos"),
    "max_staleness": (Staleness.MAX_STALENESS, "staleness_nanos"),
}
_KINDS = {
    None: TransactionKind.READ_ONLY,
    "read_only": TransactionKind.READ_ONLY,
    "read_write": TransactionKind.READ_WRITE,
    "partitioned_dml": TransactionKind.PARTITIONED_DML,
}


def transaction_options_from_pb(options: Any) -> TransactionOptions:
    """``TransactionOptions`` as :class:`TransactionOptions`; no mode means strong read-only."""
    kind = _KINDS[options.WhichOneof("mode")]
    exclude = bool(options.exclude_txn_from_change_streams)
    if kind != TransactionKind.READ_ONLY:
        return TransactionOptions(kind=kind, exclude_txn_from_change_streams=exclude)
    ro = options.read_only
    bound_name = ro.WhichOneof("timestamp_bound")
    bound, target = _BOUNDS[bound_name]
    extra = {target: nanos_from_timestamp(getattr(ro, bound_name))} if target and bound_name else {}
    return TransactionOptions(kind=kind, read_only=ReadOnlyOptions(
        bound=bound, return_read_timestamp=ro.return_read_timestamp, **extra), exclude_txn_from_change_streams=exclude)


def selector_from_pb(request: Any) -> TransactionSelector | None:
    """The ``transaction`` selector of a request; None when the request has none."""
    if not request.HasField("transaction"):
        return None
    sel = request.transaction
    which = sel.WhichOneof("selector")
    if which is None:
        return None
    if which == "id":
        return TransactionSelector(id=sel.id)
    options = transaction_options_from_pb(getattr(sel, which))
    return TransactionSelector(single_use=options) if which == "single_use" else TransactionSelector(begin=options)


#: ``RequestOptions.Priority`` numbers by name (0, unspecified, is "").
_PRIORITIES = {1: "LOW", 2: "MEDIUM", 3: "HIGH"}


def request_options_from_pb(request: Any) -> RequestOptions:
    """A request's ``request_options`` (and ``data_boost_enabled``, where it has one) as :class:`RequestOptions`.

    >>> from google.cloud.spanner_v1.types import spanner as S
    >>> pb = S.ExecuteSqlRequest.pb()(data_boost_enabled=True)
    >>> pb.request_options.priority, pb.request_options.request_tag = 1, "poll"
    >>> request_options_from_pb(pb)
    RequestOptions(priority='LOW', request_tag='poll', transaction_tag='', data_boost=True)
    """
    options = request.request_options
    boost = "data_boost_enabled" in request.DESCRIPTOR.fields_by_name and request.data_boost_enabled
    return RequestOptions(priority=_PRIORITIES.get(int(options.priority), ""), request_tag=options.request_tag,
                          transaction_tag=options.transaction_tag, data_boost=bool(boost))


def commit_delay_from_pb(request: Any) -> int | None:
    """A Commit's ``max_commit_delay`` in nanoseconds; None when the request sets none.

    >>> from google.cloud.spanner_v1.types import spanner as S
    >>> pb = S.CommitRequest.pb()()
    >>> commit_delay_from_pb(pb), (pb.max_commit_delay.FromMilliseconds(20), commit_delay_from_pb(pb))[1]
    (None, 20000000)
    """
    if not request.HasField("max_commit_delay"):
        return None
    delay = request.max_commit_delay
    return delay.seconds * 1_000_000_000 + delay.nanos


def transaction_to_pb(info: TransactionInfo) -> Any:
    """A :class:`TransactionInfo` as a ``google.spanner.v1.Transaction`` (raw protobuf)."""
    pb = TransactionPb(id=info.id)
    if info.read_timestamp_nanos is not None:
        pb.read_timestamp.CopyFrom(timestamp_pb(info.read_timestamp_nanos))
    return pb


# --- results ------------------------------------------------------------------------------

def metadata_pb(result: ResultStream) -> Any:
    """The ``ResultSetMetadata`` of a result: row type, and the transaction begun inline."""
    md = ResultSetMetadataPb()
    md.row_type.SetInParent()
    fields = md.row_type.fields
    for f in result.fields:
        fields.append(StructFieldPb(name=f.name, type_=type_to_pb(f.type)))
    if result.transaction is not None:
        md.transaction.CopyFrom(transaction_to_pb(result.transaction))
    return md


def stats_pb(result: ResultStream) -> Any | None:
    """Row counts of a DML result, an (empty) query plan for a PLAN request, or None for a query."""
    if result.query_plan:
        stats = ResultSetStatsPb()
        stats.query_plan.SetInParent()
        return stats
    if result.row_count_exact is not None:
        return ResultSetStatsPb(row_count_exact=result.row_count_exact)
    if result.row_count_lower_bound is not None:
        return ResultSetStatsPb(row_count_lower_bound=result.row_count_lower_bound)
    return None


def resume_token(rows_sent: int) -> bytes:
    """The resume token after ``rows_sent`` rows: the stream restarts after that many rows."""
    return _RESUME.pack(rows_sent)


def rows_to_skip(token: bytes) -> int:
    """The number of rows a resume token says the client already has."""
    if not token:
        return 0
    if len(token) != _RESUME.size:
        raise errors.invalid_resume_token("streaming")
    return int(_RESUME.unpack(token)[0])


def partial_result_sets(result: ResultStream, *, skip_rows: int = 0, max_bytes: int = MAX_MESSAGE_BYTES,
                        max_rows: int = MAX_ROWS_PER_MESSAGE) -> Iterator[bytes]:
    """Serialized ``PartialResultSet`` messages of a result, whole rows per message.

    The first message carries the metadata, every message a resume token, the last the
    stats; an empty result is one message. ``skip_rows`` (from a resume token) drops
    rows the client already has.
    """
    rows = result.rows
    if result.flush_each_row:
        max_rows = 1
    try:
        rows_iter = itertools.islice(rows, skip_rows, None) if skip_rows else rows
        sent = skip_rows
        first = True
        parts: list[bytes] = []
        size = count = 0
        encode = wire.PARTIAL_RESULT_VALUES.encode
        append = parts.append
        for row in rows_iter:
            encoded = encode(row)
            append(encoded)
            size += len(encoded)
            count += 1
            if size >= max_bytes or count >= max_rows:
                sent += count
                yield _partial(result if first else None, parts, sent, None)
                first, parts, size, count = False, [], 0, 0
                append = parts.append
        sent += count
        stats = stats_pb(result)
        if first or parts or stats is not None:
            yield _partial(result if first else None, parts, sent, stats)
    finally:
        close = getattr(rows, "close", None)
        if close is not None:
            close()


def _partial(with_metadata: ResultStream | None, parts: list[bytes], sent: int, stats: Any | None) -> bytes:
    head = PartialResultSetPb(resume_token=resume_token(sent))
    if with_metadata is not None:
        head.metadata.CopyFrom(metadata_pb(with_metadata))
    if stats is not None:
        head.stats.CopyFrom(stats)
    return head.SerializeToString() + b"".join(parts)


def result_set_bytes(result: ResultStream) -> bytes:
    """A whole result as one serialized ``ResultSet`` (for the unary ExecuteSql and Read)."""
    rows = result.rows
    try:
        encode = wire.LIST_ITEMS.encode
        row_fields = [wire.field(wire.RESULT_SET_ROW, encode(row)) for row in rows]
    finally:
        close = getattr(rows, "close", None)
        if close is not None:
            close()
    head = ResultSetPb()
    head.metadata.CopyFrom(metadata_pb(result))
    stats = stats_pb(result)
    if stats is not None:
        head.stats.CopyFrom(stats)
    return head.SerializeToString() + b"".join(row_fields)
