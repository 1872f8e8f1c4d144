"""Instance admin messages: the backend's instances, configs and partitions as protobuf, and back.

Enums travel as their names in the backend (``instance_rules.EDITIONS``,
``instance_configs.REPLICA_TYPES``); this module maps them to the proto numbers.

Example:
    >>> config_name("projects/p", "emulator-config")
    'projects/p/instanceConfigs/emulator-config'
    >>> enum_name(A.Instance.Edition, 2), enum_name(A.Instance.Edition, 0)
    ('ENTERPRISE', '')
"""

from __future__ import annotations

import time
from typing import Any

from google.cloud.spanner_admin_instance_v1.types import spanner_instance_admin as admin

from .. import errors
from ..common.requests import InstanceInfo
from ..instances.instance_configs import InstanceConfigInfo, Replica
from ..instances.instance_partitions import InstancePartitionInfo
from . import converters as conv

A = admin
InstancePb = A.Instance.pb()
InstanceConfigPb = A.InstanceConfig.pb()
InstancePartitionPb = A.InstancePartition.pb()
ReplicaInfoPb = A.ReplicaInfo.pb()
_READY = int(A.Instance.State.READY)
_CONFIG_READY = int(A.InstanceConfig.State.READY)
_PARTITION_READY = int(A.InstancePartition.State.READY)
_USER_MANAGED = int(A.InstanceConfig.Type.USER_MANAGED)
_GOOGLE_MANAGED = int(A.InstanceConfig.Type.GOOGLE_MANAGED)


def config_name(project: str, config: str) -> str:
    """The full name of an instance config (``config`` may already be one)."""
    return config if config.startswith("projects/") else f"{project}/instanceConfigs/{config}"


def project_of(name: str) -> str:
    """``projects/<p>`` of a resource name; INVALID_ARGUMENT when it names no project."""
    parts = name.split("/")
    if len(parts) < 2 or parts[0] != "projects" or not parts[1]:
        raise errors.bad_resource_name("resource", name, "projects/<project>/...")
    return "/".join(parts[:2])


def enum_name(enum: Any, number: int) -> str:
    """The name of a proto-plus enum's ``number``; empty for 0 (unspecified), the number itself when unknown."""
    if not number:
        return ""
    try:
        return enum(number).name
    except ValueError:
        return str(number)


def _timestamp(nanos: int) -> Any:
    return conv.timestamp_pb(nanos) if nanos else None


def instance_to_pb(info: InstanceInfo) -> Any:
    return InstancePb(name=info.name, config=config_name(project_of(info.name), info.config),
                      display_name=info.display_name, node_count=info.node_count,
                      processing_units=info.processing_units, state=_READY, labels=info.labels,
                      edition=int(A.Instance.Edition[info.edition]),
                      default_backup_schedule_type=int(A.Instance.DefaultBackupScheduleType[info.default_backup_schedule_type]),
                      create_time=_timestamp(info.create_time_nanos), update_time=_timestamp(info.update_time_nanos))


def config_to_pb(info: InstanceConfigInfo) -> Any:
    project = project_of(info.name)
    replicas = [ReplicaInfoPb(location=r.location, type_=int(A.ReplicaInfo.ReplicaType[r.type]),
                              default_leader_location=r.default_leader_location) for r in info.replicas]
    return InstanceConfigPb(name=info.name, display_name=info.display_name, replicas=replicas,
                            config_type=_USER_MANAGED if info.user_managed else _GOOGLE_MANAGED,
                            base_config=config_name(project, info.base_config) if info.base_config else "",
                            labels=info.labels, etag=info.etag, leader_options=list(info.leader_options),
                            state=_CONFIG_READY)


def replicas_from_pb(replicas: Any) -> list[Replica]:
    return [Replica(r.location, enum_name(A.ReplicaInfo.ReplicaType, r.type_), r.default_leader_location)
            for r in replicas]


def partition_to_pb(info: InstancePartitionInfo) -> Any:
    """A partition's capacity is a oneof: whole nodes as node_count, less than a node as processing_units."""
    capacity = {"node_count": info.node_count} if info.node_count else {"processing_units": info.processing_units}
    return InstancePartitionPb(name=info.name, config=config_name(project_of(info.name), info.config),
                               display_name=info.display_name, **capacity, state=_PARTITION_READY,
                               create_time=_timestamp(info.create_time_nanos),
                               update_time=_timestamp(info.update_time_nanos), etag=info.etag)


def timed_metadata(kind: Any, field: str, resource: Any) -> Any:
    """``kind`` (a proto-plus metadata type) with ``field`` set to ``resource``, started and ended now."""
    metadata = kind.pb()()
    getattr(metadata, field).CopyFrom(resource)
    now = conv.timestamp_pb(time.time_ns())
    metadata.start_time.CopyFrom(now)
    metadata.end_time.CopyFrom(now)
    return metadata


def config_metadata(kind: Any, info: InstanceConfigInfo) -> Any:
    """Create/UpdateInstanceConfigMetadata of a finished operation on ``info``."""
    metadata = kind.pb()()
    metadata.instance_config.CopyFrom(config_to_pb(info))
    now = conv.timestamp_pb(time.time_ns())
    metadata.progress.progress_percent = 100
    metadata.progress.start_time.CopyFrom(now)
    metadata.progress.end_time.CopyFrom(now)
    return metadata
