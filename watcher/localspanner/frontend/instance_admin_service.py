"""``google.spanner.admin.instance.v1.InstanceAdmin``: instance configs, instances and instance partitions.

The client package ships no servicer base class for this service; the RPC table in
:class:`InstanceAdminServicer` is all ``rpc.generic_handler`` needs. Methods it does not
list (MoveInstance, the IAM policy calls) are refused UNIMPLEMENTED by name
(``rpc.unserved_handler``).

Example:
    >>> [r.name for r in InstanceAdminServicer.RPCS][:3]
    ['ListInstanceConfigs', 'GetInstanceConfig', 'CreateInstanceConfig']
"""

from __future__ import annotations

from typing import Any

import grpc
from google.protobuf import empty_pb2

from ..service import LocalSpannerService
from .instance_messages import (
    A,
    config_metadata,
    config_to_pb,
    enum_name,
    instance_to_pb,
    partition_to_pb,
    project_of,
    replicas_from_pb,
    timed_metadata,
)
from .operations import OperationRegistry
from .rpc import Rpc


class InstanceAdminServicer:
    """Instance administration of the local server: configs, capacity and partitions are recorded and reported."""

    SERVICE = "google.spanner.admin.instance.v1.InstanceAdmin"
    RPCS = (
        Rpc("ListInstanceConfigs", A.ListInstanceConfigsRequest.pb()),
        Rpc("GetInstanceConfig", A.GetInstanceConfigRequest.pb()),
        Rpc("CreateInstanceConfig", A.CreateInstanceConfigRequest.pb()),
        Rpc("UpdateInstanceConfig", A.UpdateInstanceConfigRequest.pb()),
        Rpc("DeleteInstanceConfig", A.DeleteInstanceConfigRequest.pb()),
        Rpc("ListInstanceConfigOperations", A.ListInstanceConfigOperationsRequest.pb()),
        Rpc("CreateInstance", A.CreateInstanceRequest.pb()),
        Rpc("GetInstance", A.GetInstanceRequest.pb()),
        Rpc("ListInstances", A.ListInstancesRequest.pb()),
        Rpc("UpdateInstance", A.UpdateInstanceRequest.pb()),
        Rpc("DeleteInstance", A.DeleteInstanceRequest.pb()),
        Rpc("CreateInstancePartition", A.CreateInstancePartitionRequest.pb()),
        Rpc("GetInstancePartition", A.GetInstancePartitionRequest.pb()),
        Rpc("ListInstancePartitions", A.ListInstancePartitionsRequest.pb()),
        Rpc("UpdateInstancePartition", A.UpdateInstancePartitionRequest.pb()),
        Rpc("DeleteInstancePartition", A.DeleteInstancePartitionRequest.pb()),
        Rpc("ListInstancePartitionOperations", A.ListInstancePartitionOperationsRequest.pb()),
    )

    def __init__(self, service: LocalSpannerService, operations: OperationRegistry) -> None:
        self.service = service
        self.operations = operations

    # --- instance configs ------------------------------------------------------------------------------

    def ListInstanceConfigs(self, request: Any, context: grpc.ServicerContext) -> Any:
        configs = self.service.list_instance_configs(project_of(request.parent))
        return A.ListInstanceConfigsResponse.pb()(instance_configs=[config_to_pb(c) for c in configs])

    def GetInstanceConfig(self, request: Any, context: grpc.ServicerContext) -> Any:
        project_of(request.name)
        return config_to_pb(self.service.get_instance_config(request.name))

    def CreateInstanceConfig(self, request: Any, context: grpc.ServicerContext) -> Any:
        spec = request.instance_config
        info = self.service.create_instance_config(
            f"{project_of(request.parent)}/instanceConfigs/{request.instance_config_id}", base_config=spec.base_config,
            display_name=spec.display_name, replicas=replicas_from_pb(spec.replicas), labels=dict(spec.labels),
            validate_only=request.validate_only)
        return self.operations.done(info.name, config_metadata(A.CreateInstanceConfigMetadata, info), config_to_pb(info))

    def UpdateInstanceConfig(self, request: Any, context: grpc.ServicerContext) -> Any:
        spec = request.instance_config
        info = self.service.update_instance_config(
            spec.name, list(request.update_mask.paths), display_name=spec.display_name, labels=dict(spec.labels),
            etag=spec.etag, validate_only=request.validate_only)
        return self.operations.done(info.name, config_metadata(A.UpdateInstanceConfigMetadata, info), config_to_pb(info))

    def DeleteInstanceConfig(self, request: Any, context: grpc.ServicerContext) -> Any:
        project_of(request.name)
        self.service.delete_instance_config(request.name, etag=request.etag, validate_only=request.validate_only)
        return empty_pb2.Empty()

    def ListInstanceConfigOperations(self, request: Any, context: grpc.ServicerContext) -> Any:
        ops = self.operations.list(f"{project_of(request.parent)}/instanceConfigs/", request.filter)
        return A.ListInstanceConfigOperationsResponse.pb()(operations=ops)

    # --- instances -------------------------------------------------------------------------------------

    def CreateInstance(self, request: Any, context: grpc.ServicerContext) -> Any:
        spec = request.instance
        info = self.service.create_instance(
            f"{request.parent}/instances/{request.instance_id}", config=spec.config,
            display_name=spec.display_name or request.instance_id, node_count=spec.node_count,
            processing_units=spec.processing_units, labels=dict(spec.labels), **_settings(spec))
        pb = instance_to_pb(info)
        return self.operations.done(info.name, timed_metadata(A.CreateInstanceMetadata, "instance", pb), pb)

    def UpdateInstance(self, request: Any, context: grpc.ServicerContext) -> Any:
        spec = request.instance
        info = self.service.update_instance(
            spec.name, list(request.field_mask.paths), config=spec.config, display_name=spec.display_name,
            node_count=spec.node_count, processing_units=spec.processing_units, labels=dict(spec.labels),
            **_settings(spec))
        pb = instance_to_pb(info)
        return self.operations.done(info.name, timed_metadata(A.UpdateInstanceMetadata, "instance", pb), pb)

    def GetInstance(self, request: Any, context: grpc.ServicerContext) -> Any:
        return instance_to_pb(self.service.get_instance(request.name))

    def ListInstances(self, request: Any, context: grpc.ServicerContext) -> Any:
        infos = self.service.list_instances(request.parent)
        return A.ListInstancesResponse.pb()(instances=[instance_to_pb(i) for i in infos])

    def DeleteInstance(self, request: Any, context: grpc.ServicerContext) -> Any:
        self.service.delete_instance(request.name)
        return empty_pb2.Empty()

    # --- instance partitions ---------------------------------------------------------------------------

    def CreateInstancePartition(self, request: Any, context: grpc.ServicerContext) -> Any:
        spec = request.instance_partition
        info = self.service.create_instance_partition(
            f"{request.parent}/instancePartitions/{request.instance_partition_id}", config=spec.config,
            display_name=spec.display_name, node_count=spec.node_count, processing_units=spec.processing_units)
        pb = partition_to_pb(info)
        return self.operations.done(info.name, timed_metadata(A.CreateInstancePartitionMetadata, "instance_partition", pb), pb)

    def GetInstancePartition(self, request: Any, context: grpc.ServicerContext) -> Any:
        return partition_to_pb(self.service.get_instance_partition(request.name))

    def ListInstancePartitions(self, request: Any, context: grpc.ServicerContext) -> Any:
        parts = self.service.list_instance_partitions(request.parent)
        return A.ListInstancePartitionsResponse.pb()(instance_partitions=[partition_to_pb(p) for p in parts])

    def UpdateInstancePartition(self, request: Any, context: grpc.ServicerContext) -> Any:
        spec = request.instance_partition
        info = self.service.update_instance_partition(
            spec.name, list(request.field_mask.paths), display_name=spec.display_name, node_count=spec.node_count,
            processing_units=spec.processing_units, etag=spec.etag)
        pb = partition_to_pb(info)
        return self.operations.done(info.name, timed_metadata(A.UpdateInstancePartitionMetadata, "instance_partition", pb), pb)

    def DeleteInstancePartition(self, request: Any, context: grpc.ServicerContext) -> Any:
        self.service.delete_instance_partition(request.name, request.etag)
        return empty_pb2.Empty()

    def ListInstancePartitionOperations(self, request: Any, context: grpc.ServicerContext) -> Any:
        self.service.get_instance(request.parent)
        ops = self.operations.list(f"{request.parent}/instancePartitions/", request.filter)
        return A.ListInstancePartitionOperationsResponse.pb()(operations=ops)


def _settings(spec: Any) -> dict[str, str]:
    """An Instance message's edition and default backup schedule type, as the service takes them."""
    return {"edition": enum_name(A.Instance.Edition, spec.edition),
            "default_backup_schedule_type": enum_name(A.Instance.DefaultBackupScheduleType,
                                                      spec.default_backup_schedule_type)}
