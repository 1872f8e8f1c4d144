"""``google.spanner.admin.database.v1.DatabaseAdmin``: databases and their schema.

Schema changes run synchronously, so their long-running operations are done when
returned. A schema change whose later statement fails ends as Spanner's does: the
operation carries the error, and its metadata the commit timestamps of the statements
applied before it.

Example:
    >>> "UpdateDatabaseDdl" in [r.name for r in DatabaseAdminServicer.RPCS]
    True
"""

from __future__ import annotations

import time
from typing import Any

import grpc
from google.cloud.spanner_admin_database_v1.types import common
from google.cloud.spanner_admin_database_v1.types import spanner_database_admin as admin
from google.cloud.spanner_v1.testing import spanner_database_admin_pb2_grpc
from google.protobuf import empty_pb2

from .. import errors
from ..common.requests import DatabaseInfo
from ..database.split_points import SplitPoint
from ..dialects import dialects
from ..errors import SchemaChangeStopped
from ..service import LocalSpannerService
from . import converters as conv
from .operations import OperationRegistry
from .pb_values import list_to_wire
from .rpc import Rpc
from .status import status_pb

A = admin
DatabasePb = A.Database.pb()
EncryptionInfoPb = common.EncryptionInfo.pb()
_READY = int(A.Database.State.READY)
_CUSTOMER_MANAGED = int(common.EncryptionInfo.Type.CUSTOMER_MANAGED_ENCRYPTION)
#: Spanner's version retention period when ALTER DATABASE did not set one.
_DEFAULT_VERSION_RETENTION = "1h"


def _add_timestamps(metadata: Any, commit_nanos: list[int]) -> None:
    for nanos in commit_nanos:
        metadata.commit_timestamps.add().CopyFrom(conv.timestamp_pb(nanos))


def database_to_pb(info: DatabaseInfo, options: dict[str, str | None] | None = None,
                   dialect: str = dialects.GOOGLE_STANDARD_SQL) -> Any:
    options = options or {}
    pb = DatabasePb(name=info.name, state=_READY, database_dialect=dialects.NUMBER[dialect],
                    version_retention_period=options.get("version_retention_period") or _DEFAULT_VERSION_RETENTION,
                    default_leader=options.get("default_leader") or "", enable_drop_protection=info.drop_protection)
    pb.create_time.CopyFrom(conv.timestamp_pb(info.create_time_nanos))
    pb.earliest_version_time.CopyFrom(conv.timestamp_pb(info.version_time_nanos))
    _add_encryption(pb, info.kms_key_names)
    return pb


def split_point_from_pb(pb: Any) -> SplitPoint:
    """A ``SplitPoints`` message as a :class:`SplitPoint` (key parts as wire values).

    >>> pb = A.SplitPoints.pb()(table="T"); pb.keys.add().key_parts.values.add().string_value = "7"
    >>> split_point_from_pb(pb)
    SplitPoint(table='T', index='', keys=[['7']], expire_time_nanos=None)
    """
    expire = conv.nanos_from_timestamp(pb.expire_time) if pb.HasField("expire_time") else None
    return SplitPoint(pb.table, pb.index, [list_to_wire(k.key_parts) for k in pb.keys], expire)


def kms_key_names_from_pb(config: Any) -> list[str]:
    """The keys of a CreateDatabase encryption_config: its kms_key_name, or its kms_key_names.

    >>> kms_key_names_from_pb(common.EncryptionConfig.pb()(kms_key_names=["a", "b"]))
    ['a', 'b']
    """
    if config.kms_key_name and config.kms_key_names:
        raise errors.kms_key_name_and_names()
    return [config.kms_key_name] if config.kms_key_name else list(config.kms_key_names)


def _add_encryption(pb: Any, keys: tuple[str, ...]) -> None:
    """The keys echoed as Spanner shows them: one as kms_key_name, several as kms_key_names; one
    customer-managed encryption_info per key (the local server keeps no key versions: version 1)."""
    if not keys:
        return
    if len(keys) == 1:
        pb.encryption_config.kms_key_name = keys[0]
    else:
        pb.encryption_config.kms_key_names.extend(keys)
    for key in keys:
        pb.encryption_info.append(EncryptionInfoPb(encryption_type=_CUSTOMER_MANAGED, kms_key_version=f"{key}/cryptoKeyVersions/1"))


class DatabaseAdminServicer(spanner_database_admin_pb2_grpc.DatabaseAdminServicer):
    """Database administration of the local server."""

    SERVICE = "google.spanner.admin.database.v1.DatabaseAdmin"
    RPCS = (
        Rpc("CreateDatabase", A.CreateDatabaseRequest.pb()),
        Rpc("GetDatabase", A.GetDatabaseRequest.pb()),
        Rpc("ListDatabases", A.ListDatabasesRequest.pb()),
        Rpc("DropDatabase", A.DropDatabaseRequest.pb()),
        Rpc("UpdateDatabase", A.UpdateDatabaseRequest.pb()),
        Rpc("AddSplitPoints", A.AddSplitPointsRequest.pb()),
        Rpc("UpdateDatabaseDdl", A.UpdateDatabaseDdlRequest.pb()),
        Rpc("GetDatabaseDdl", A.GetDatabaseDdlRequest.pb()),
        Rpc("ListDatabaseOperations", A.ListDatabaseOperationsRequest.pb()),
        Rpc("ListDatabaseRoles", A.ListDatabaseRolesRequest.pb()),
    )

    def __init__(self, service: LocalSpannerService, operations: OperationRegistry) -> None:
        self.service = service
        self.operations = operations

    def CreateDatabase(self, request: Any, context: grpc.ServicerContext) -> Any:
        dialect = dialects.dialect_name(request.database_dialect)
        info = self.service.create_database(request.parent, request.create_statement, list(request.extra_statements),
                                            proto_descriptors=request.proto_descriptors or None, dialect=dialect,
                                            kms_key_names=kms_key_names_from_pb(request.encryption_config))
        return self.operations.done(info.name, A.CreateDatabaseMetadata.pb()(database=info.name),
                                    database_to_pb(info, dialect=dialect))

    def GetDatabase(self, request: Any, context: grpc.ServicerContext) -> Any:
        info = self.service.get_database(request.name)
        return database_to_pb(info, self.service.database_options(info.name), self.service.database_dialect(info.name))

    def ListDatabases(self, request: Any, context: grpc.ServicerContext) -> Any:
        infos = self.service.list_databases(request.parent)
        return A.ListDatabasesResponse.pb()(databases=[
            database_to_pb(i, self.service.database_options(i.name), self.service.database_dialect(i.name)) for i in infos])

    def UpdateDatabase(self, request: Any, context: grpc.ServicerContext) -> Any:
        name = request.database.name
        info = self.service.update_database(name, list(request.update_mask.paths),
                                            enable_drop_protection=request.database.enable_drop_protection)
        metadata = A.UpdateDatabaseMetadata.pb()()
        metadata.request.CopyFrom(request)
        metadata.progress.progress_percent = 100
        return self.operations.done(name, metadata, database_to_pb(info, self.service.database_options(name),
                                                                   self.service.database_dialect(name)))

    def AddSplitPoints(self, request: Any, context: grpc.ServicerContext) -> Any:
        self.service.add_split_points(request.database, [split_point_from_pb(p) for p in request.split_points])
        return A.AddSplitPointsResponse.pb()()

    def DropDatabase(self, request: Any, context: grpc.ServicerContext) -> Any:
        self.service.drop_database(request.database)
        return empty_pb2.Empty()

    def UpdateDatabaseDdl(self, request: Any, context: grpc.ServicerContext) -> Any:
        statements = list(request.statements)
        metadata = A.UpdateDatabaseDdlMetadata.pb()(database=request.database, statements=statements)
        try:
            commit_nanos = self.service.update_ddl(request.database, statements, request.proto_descriptors or None) or [time.time_ns()] * len(statements)
        except SchemaChangeStopped as stopped:
            # As on Spanner: the operation ends with the error; the metadata lists the completed statements only.
            _add_timestamps(metadata, stopped.commit_nanos)
            return self.operations.failed(request.database, metadata, status_pb(stopped), request.operation_id)
        _add_timestamps(metadata, commit_nanos)
        return self.operations.done(request.database, metadata, empty_pb2.Empty(), request.operation_id)

    def ListDatabaseOperations(self, request: Any, context: grpc.ServicerContext) -> Any:
        self.service.get_instance(request.parent)
        found = self.operations.list(request.parent + "/databases/", request.filter)
        return A.ListDatabaseOperationsResponse.pb()(operations=found)

    def ListDatabaseRoles(self, request: Any, context: grpc.ServicerContext) -> Any:
        names = self.service.list_database_roles(request.parent)
        return A.ListDatabaseRolesResponse.pb()(database_roles=[A.DatabaseRole.pb()(name=n) for n in names])

    def GetDatabaseDdl(self, request: Any, context: grpc.ServicerContext) -> Any:
        return A.GetDatabaseDdlResponse.pb()(statements=self.service.get_ddl(request.database),
                                             proto_descriptors=self.service.proto_descriptors(request.database))
