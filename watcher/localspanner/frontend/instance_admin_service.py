"""``google.spanner.admin.instance.v1.InstanceAdmin``: instance configs and instances.

The client package ships no servicer base class for this service; the RPC table in
:class:`InstanceAdminServicer` is all ``rpc.generic_handler`` needs.

Example:
    >>> config_name("projects/p", "emulator-config")
    'projects/p/instanceConfigs/emulator-config'
"""

from __future__ import annotations

import time
from typing import Any

import grpc
from google.cloud.spanner_admin_instance_v1.types import spanner_instance_admin as admin
from google.protobuf import empty_pb2

from .. import errors, instance_rules
from ..requests import InstanceInfo
from ..service import LocalSpannerService
from . import converters as conv
from .operations import OperationRegistry
from .rpc import Rpc

A = admin
InstancePb = A.Instance.pb()
InstanceConfigPb = A.InstanceConfig.pb()
_READY = int(A.Instance.State.READY)
_CONFIG_READY = int(A.InstanceConfig.State.READY)


def config_name(project: str, config: str) -> str:
    """The full name of an instance config (``config`` may already be one)."""
    return config if config.startswith("projects/") else f"{project}/instanceConfigs/{config}"


def _project_of(name: str) -> str:
    parts = name.split("/")
    if len(parts) < 2 or parts[0] != "projects" or not parts[1]:
        raise errors.bad_resource_name("resource", name, "projects/<project>/...")
    return "/".join(parts[:2])


def instance_to_pb(info: InstanceInfo) -> Any:
    return InstancePb(name=info.name, config=config_name(_project_of(info.name), info.config),
                      display_name=info.display_name, node_count=info.node_count,
                      processing_units=info.processing_units, state=_READY, labels=info.labels)


class InstanceAdminServicer:
    """Instance administration of the local server: configs and capacity are recorded and reported."""

    SERVICE = "google.spanner.admin.instance.v1.InstanceAdmin"
    RPCS = (
        Rpc("ListInstanceConfigs", A.ListInstanceConfigsRequest.pb()),
        Rpc("GetInstanceConfig", A.GetInstanceConfigRequest.pb()),
        Rpc("CreateInstance", A.CreateInstanceRequest.pb()),
        Rpc("GetInstance", A.GetInstanceRequest.pb()),
        Rpc("ListInstances", A.ListInstancesRequest.pb()),
        Rpc("UpdateInstance", A.UpdateInstanceRequest.pb()),
        Rpc("DeleteInstance", A.DeleteInstanceRequest.pb()),
    )

    def __init__(self, service: LocalSpannerService, operations: OperationRegistry) -> None:
        self.service = service
        self.operations = operations

    def _configs(self, project: str) -> list[Any]:
        names = [config_name(project, c) for c in self.service.list_instance_configs(project)]
        return [InstanceConfigPb(name=n, display_name=n.rsplit("/", 1)[-1], state=_CONFIG_READY,
                                 leader_options=instance_rules.leader_options(n.rsplit("/", 1)[-1])) for n in names]

    def ListInstanceConfigs(self, request: Any, context: grpc.ServicerContext) -> Any:
        return A.ListInstanceConfigsResponse.pb()(instance_configs=self._configs(_project_of(request.parent)))

    def GetInstanceConfig(self, request: Any, context: grpc.ServicerContext) -> Any:
        for config in self._configs(_project_of(request.name)):
            if config.name == request.name:
                return config
        raise errors.instance_config_not_found(request.name)

    def CreateInstance(self, request: Any, context: grpc.ServicerContext) -> Any:
        spec = request.instance
        info = self.service.create_instance(
            f"{request.parent}/instances/{request.instance_id}", config=spec.config,
            display_name=spec.display_name or request.instance_id, node_count=spec.node_count,
            processing_units=spec.processing_units, labels=dict(spec.labels))
        return self.operations.done(info.name, self._metadata(A.CreateInstanceMetadata, info), instance_to_pb(info))

    def UpdateInstance(self, request: Any, context: grpc.ServicerContext) -> Any:
        spec = request.instance
        info = self.service.update_instance(
            spec.name, list(request.field_mask.paths), config=spec.config, display_name=spec.display_name,
            node_count=spec.node_count, processing_units=spec.processing_units, labels=dict(spec.labels))
        return self.operations.done(info.name, self._metadata(A.UpdateInstanceMetadata, info), instance_to_pb(info))

    def GetInstance(self, request: Any, context: grpc.ServicerContext) -> Any:
        return instance_to_pb(self.service.get_instance(request.name))

    def ListInstances(self, request: Any, context: grpc.ServicerContext) -> Any:
        infos = self.service.list_instances(request.parent)
        return A.ListInstancesResponse.pb()(instances=[instance_to_pb(i) for i in infos])

    def DeleteInstance(self, request: Any, context: grpc.ServicerContext) -> Any:
        self.service.delete_instance(request.name)
        return empty_pb2.Empty()

    @staticmethod
    def _metadata(kind: Any, info: InstanceInfo) -> Any:
        metadata = kind.pb()()
        metadata.instance.CopyFrom(instance_to_pb(info))
        now = conv.timestamp_pb(time.time_ns())
        metadata.start_time.CopyFrom(now)
        metadata.end_time.CopyFrom(now)
        return metadata
