"""``google.spanner.v1.Spanner``: sessions, queries, reads, DML, transactions, commits.

Each handler converts the request (``converters``), calls the service facade and
converts the answer back; errors become statuses in ``status.py``.

Example:
    >>> [r.name for r in SpannerServicer.RPCS][:3]
    ['CreateSession', 'BatchCreateSessions', 'GetSession']
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import grpc
from google.cloud.spanner_v1.testing import spanner_pb2_grpc
from google.cloud.spanner_v1.types import commit_response as commit_types
from google.cloud.spanner_v1.types import result_set as result_set_types
from google.cloud.spanner_v1.types import spanner as spanner_types
from google.protobuf import empty_pb2
from google.rpc import status_pb2

from .. import errors
from ..common.requests import SessionInfo
from ..errors import SpannerError
from ..service import LocalSpannerService
from . import converters as conv
from .rpc import Rpc
from .status import as_spanner_error

S = spanner_types
SessionPb = S.Session.pb()
CommitResponsePb = commit_types.CommitResponse.pb()
ResultSetPb = result_set_types.ResultSet.pb()

_PLAN_MODE = int(S.ExecuteSqlRequest.QueryMode.PLAN)


def session_to_pb(info: SessionInfo) -> Any:
    pb = SessionPb(name=info.name, multiplexed=info.multiplexed, labels=info.labels, creator_role=info.creator_role)
    pb.create_time.CopyFrom(conv.timestamp_pb(info.create_time_nanos))
    pb.approximate_last_use_time.CopyFrom(pb.create_time)
    return pb


def _status_pb(error: Exception | None, method: str) -> status_pb2.Status:
    if error is None:
        return status_pb2.Status(code=0)
    err = as_spanner_error(error, method)
    return status_pb2.Status(code=int(err.code), message=err.message)


class SpannerServicer(spanner_pb2_grpc.SpannerServicer):
    """The data plane of the local server, backed by a :class:`LocalSpannerService`."""

    SERVICE = "google.spanner.v1.Spanner"
    RPCS = (
        Rpc("CreateSession", S.CreateSessionRequest.pb()),
        Rpc("BatchCreateSessions", S.BatchCreateSessionsRequest.pb()),
        Rpc("GetSession", S.GetSessionRequest.pb()),
        Rpc("ListSessions", S.ListSessionsRequest.pb()),
        Rpc("DeleteSession", S.DeleteSessionRequest.pb()),
        Rpc("ExecuteSql", S.ExecuteSqlRequest.pb(), deadline=True),
        Rpc("ExecuteStreamingSql", S.ExecuteSqlRequest.pb(), streaming=True, deadline=True),
        Rpc("ExecuteBatchDml", S.ExecuteBatchDmlRequest.pb(), deadline=True),
        Rpc("Read", S.ReadRequest.pb()),
        Rpc("StreamingRead", S.ReadRequest.pb(), streaming=True),
        Rpc("BeginTransaction", S.BeginTransactionRequest.pb()),
        Rpc("Commit", S.CommitRequest.pb()),
        Rpc("Rollback", S.RollbackRequest.pb()),
        Rpc("PartitionQuery", S.PartitionQueryRequest.pb()),
        Rpc("PartitionRead", S.PartitionReadRequest.pb()),
        Rpc("BatchWrite", S.BatchWriteRequest.pb(), streaming=True),
    )

    def __init__(self, service: LocalSpannerService) -> None:
        self.service = service

    # --- sessions ------------------------------------------------------------------------

    def CreateSession(self, request: Any, context: grpc.ServicerContext) -> Any:
        template = request.session
        info = self.service.create_session(request.database, multiplexed=template.multiplexed, labels=dict(template.labels),
                                           creator_role=template.creator_role)
        return session_to_pb(info)

    def BatchCreateSessions(self, request: Any, context: grpc.ServicerContext) -> Any:
        infos = self.service.batch_create_sessions(
            request.database, request.session_count, dict(request.session_template.labels),
            request.session_template.creator_role)
        return S.BatchCreateSessionsResponse.pb()(session=[session_to_pb(i) for i in infos])

    def GetSession(self, request: Any, context: grpc.ServicerContext) -> Any:
        return session_to_pb(self.service.get_session(request.name))

    def ListSessions(self, request: Any, context: grpc.ServicerContext) -> Any:
        sessions = self.service.list_sessions(request.database)
        return S.ListSessionsResponse.pb()(sessions=[session_to_pb(i) for i in sessions])

    def DeleteSession(self, request: Any, context: grpc.ServicerContext) -> Any:
        self.service.delete_session(request.name)
        return empty_pb2.Empty()

    # --- queries and reads -------------------------------------------------------------------

    def _execute(self, request: Any) -> Any:
        statement = conv.statement_from_pb(request.sql, request.params, request.param_types)
        return self.service.execute_sql(request.session, statement, conv.selector_from_pb(request),
                                        seqno=request.seqno, plan=request.query_mode == _PLAN_MODE,
                                        partition_token=request.partition_token,
                                        options=conv.request_options_from_pb(request))

    def ExecuteSql(self, request: Any, context: grpc.ServicerContext) -> bytes:
        return conv.result_set_bytes(self._execute(request))

    def ExecuteStreamingSql(self, request: Any, context: grpc.ServicerContext) -> Iterator[bytes]:
        skip = conv.rows_to_skip(request.resume_token)
        return conv.partial_result_sets(self._execute(request), skip_rows=skip)

    def _read(self, request: Any) -> Any:
        return self.service.read(request.session, request.table, list(request.columns),
                                 conv.key_set_from_pb(request.key_set), conv.selector_from_pb(request),
                                 index=request.index, limit=request.limit, partition_token=request.partition_token,
                                 options=conv.request_options_from_pb(request))

    def Read(self, request: Any, context: grpc.ServicerContext) -> bytes:
        return conv.result_set_bytes(self._read(request))

    def StreamingRead(self, request: Any, context: grpc.ServicerContext) -> Iterator[bytes]:
        skip = conv.rows_to_skip(request.resume_token)
        return conv.partial_result_sets(self._read(request), skip_rows=skip)

    def ExecuteBatchDml(self, request: Any, context: grpc.ServicerContext) -> Any:
        statements = [conv.statement_from_pb(s.sql, s.params, s.param_types) for s in request.statements]
        result = self.service.execute_batch_dml(request.session, statements, conv.selector_from_pb(request), seqno=request.seqno,
                                                options=conv.request_options_from_pb(request))
        # An abort must fail the call so that the client re-runs the whole transaction.
        if isinstance(result.error, SpannerError) and result.error.code == errors.Code.ABORTED:
            raise result.error
        response = S.ExecuteBatchDmlResponse.pb()()
        for i, count in enumerate(result.row_counts):
            rs = response.result_sets.add()
            rs.stats.row_count_exact = count
            if i == 0:
                rs.metadata.row_type.SetInParent()
                if result.transaction is not None:
                    rs.metadata.transaction.CopyFrom(conv.transaction_to_pb(result.transaction))
        response.status.CopyFrom(_status_pb(result.error, "ExecuteBatchDml"))
        return response

    # --- transactions ------------------------------------------------------------------------

    def BeginTransaction(self, request: Any, context: grpc.ServicerContext) -> Any:
        info = self.service.begin_transaction(request.session, conv.transaction_options_from_pb(request.options),
                                              conv.request_options_from_pb(request))
        return conv.transaction_to_pb(info)

    def Commit(self, request: Any, context: grpc.ServicerContext) -> Any:
        mutations = [conv.mutation_from_pb(m) for m in request.mutations]
        which = request.WhichOneof("transaction")
        options = conv.request_options_from_pb(request)
        tag = options.transaction_tag
        delay = conv.commit_delay_from_pb(request)
        if which == "transaction_id":
            result = self.service.commit(request.session, mutations, transaction_id=request.transaction_id, tag=tag,
                                         options=options, max_commit_delay_nanos=delay)
        elif which == "single_use_transaction":
            result = self.service.commit(request.session, mutations, tag=tag, options=options, max_commit_delay_nanos=delay,
                                         single_use=conv.transaction_options_from_pb(request.single_use_transaction))
        else:
            raise errors.commit_without_transaction()
        response = CommitResponsePb()
        response.commit_timestamp.CopyFrom(conv.timestamp_pb(result.commit_timestamp_nanos))
        if request.return_commit_stats:
            response.commit_stats.mutation_count = result.mutation_count
        return response

    def Rollback(self, request: Any, context: grpc.ServicerContext) -> Any:
        self.service.rollback(request.session, request.transaction_id)
        return empty_pb2.Empty()

    def BatchWrite(self, request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
        groups = [[conv.mutation_from_pb(m) for m in g.mutations] for g in request.mutation_groups]
        response_cls = S.BatchWriteResponse.pb()
        for result in self.service.batch_write(request.session, groups, conv.request_options_from_pb(request),
                                                 exclude_txn_from_change_streams=request.exclude_txn_from_change_streams):
            response = response_cls(indexes=result.indexes)
            response.status.CopyFrom(_status_pb(result.error, "BatchWrite"))
            if result.commit_timestamp_nanos is not None:
                response.commit_timestamp.CopyFrom(conv.timestamp_pb(result.commit_timestamp_nanos))
            yield response

    def PartitionQuery(self, request: Any, context: grpc.ServicerContext) -> Any:
        statement = conv.statement_from_pb(request.sql, request.params, request.param_types)
        tokens, info = self.service.partition_query(request.session, statement, conv.selector_from_pb(request),
                                                    request.partition_options.max_partitions)
        return _partition_response(tokens, info)

    def PartitionRead(self, request: Any, context: grpc.ServicerContext) -> Any:
        tokens, info = self.service.partition_read(
            request.session, request.table, list(request.columns), conv.key_set_from_pb(request.key_set),
            conv.selector_from_pb(request), index=request.index, max_partitions=request.partition_options.max_partitions)
        return _partition_response(tokens, info)


def _partition_response(tokens: list[bytes], info: Any) -> Any:
    response = S.PartitionResponse.pb()(partitions=[S.Partition.pb()(partition_token=t) for t in tokens])
    if info is not None:
        response.transaction.CopyFrom(conv.transaction_to_pb(info))
    return response
