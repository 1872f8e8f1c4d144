"""Instance partitions: named slices of an instance's capacity, each in its own config.

The local server records and reports them; their capacity follows the instance rule
(``instance_rules.capacity``). :class:`InstancePartitions` keeps them; the service holds
its lock around every call, checks the parent instance, and persists :meth:`InstancePartitions.to_state`.

Example:
    >>> parts = InstancePartitions()
    >>> p = parts.create("projects/p/instances/i/instancePartitions/ip-1", config="nam3", processing_units=500,
    ...                  now_nanos=1)
    >>> p.config, p.node_count, p.processing_units, [x.name for x in parts.of_instance("projects/p/instances/i")]
    ('nam3', 0, 500, ['projects/p/instances/i/instancePartitions/ip-1'])
"""

from __future__ import annotations

import dataclasses
import re
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .. import errors
from . import instance_rules

#: The fields UpdateInstancePartition's mask may name.
UPDATABLE_FIELDS = ("display_name", "node_count", "processing_units")
_PARTITION_NAME = re.compile(r"(projects/[^/]+/instances/[^/]+)/instancePartitions/([^/]+)\Z")
_PARTITION_ID = re.compile(r"[a-z][-a-z0-9]{0,62}[a-z0-9]\Z")


@dataclass(frozen=True)
class InstancePartitionInfo:
    """An instance partition as the admin API shows it (``config`` an id)."""

    name: str
    config: str
    display_name: str
    node_count: int
    processing_units: int
    create_time_nanos: int
    update_time_nanos: int
    etag: str

    @property
    def instance(self) -> str:
        return self.name.split("/instancePartitions/", 1)[0]


def instance_of(name: str) -> str:
    """The instance a partition name belongs to; INVALID_ARGUMENT when the name is not well formed.

    >>> instance_of("projects/p/instances/i/instancePartitions/ip")
    'projects/p/instances/i'
    """
    m = _PARTITION_NAME.match(name)
    if not m:
        raise errors.bad_resource_name("instance partition", name,
                                       "projects/<project>/instances/<instance>/instancePartitions/<partition>")
    return m.group(1)


def _new_etag() -> str:
    return uuid.uuid4().hex[:16]


class InstancePartitions:
    """The instance partitions of one server, by full name (not thread-safe: the service locks)."""

    def __init__(self) -> None:
        self._partitions: dict[str, InstancePartitionInfo] = {}

    def create(self, name: str, *, config: str, now_nanos: int, display_name: str = "", node_count: int = 0,
               processing_units: int = 0) -> InstancePartitionInfo:
        instance_of(name)
        partition_id = name.rsplit("/", 1)[-1]
        if not _PARTITION_ID.match(partition_id):
            raise errors.instance_partition_id_invalid(partition_id)
        if not config:
            raise errors.instance_partition_config_missing(name)
        config_id = instance_rules.config_id(config)
        nodes, units = instance_rules.capacity(node_count=node_count, processing_units=processing_units)
        if name in self._partitions:
            raise errors.instance_partition_already_exists(name)
        info = InstancePartitionInfo(name, config_id, display_name or partition_id, nodes, units, now_nanos, now_nanos,
                                     _new_etag())
        self._partitions[name] = info
        return info

    def get(self, name: str) -> InstancePartitionInfo:
        instance_of(name)
        info = self._partitions.get(name)
        if info is None:
            raise errors.instance_partition_not_found(name)
        return info

    def of_instance(self, instance: str) -> list[InstancePartitionInfo]:
        prefix = instance + "/instancePartitions/"
        return [p for n, p in sorted(self._partitions.items()) if n.startswith(prefix)]

    def in_project(self, project: str) -> list[InstancePartitionInfo]:
        return [p for n, p in sorted(self._partitions.items()) if n.startswith(project + "/")]

    def update(self, name: str, fields: Iterable[str], *, now_nanos: int, display_name: str = "", node_count: int = 0,
               processing_units: int = 0, etag: str = "") -> InstancePartitionInfo:
        """Set the ``fields`` named (``UPDATABLE_FIELDS``); ``etag``, when given, must be the current one."""
        paths = list(fields)
        if not paths:
            raise errors.update_mask_empty("UpdateInstancePartition")
        for path in paths:
            if path not in UPDATABLE_FIELDS:
                raise errors.update_mask_field_unknown("UpdateInstancePartition", path, UPDATABLE_FIELDS)
        info = self._current(name, etag)
        changes: dict[str, Any] = {"update_time_nanos": now_nanos, "etag": _new_etag()}
        if "display_name" in paths:
            changes["display_name"] = display_name or info.display_name
        if "node_count" in paths or "processing_units" in paths:
            nodes, units = instance_rules.capacity(
                node_count=node_count if "node_count" in paths else 0,
                processing_units=processing_units if "processing_units" in paths else 0)
            changes.update(node_count=nodes, processing_units=units)
        updated = dataclasses.replace(info, **changes)
        self._partitions[name] = updated
        return updated

    def delete(self, name: str, etag: str = "") -> None:
        self._current(name, etag)
        del self._partitions[name]

    def drop_instance(self, instance: str) -> None:
        """Remove every partition of ``instance`` (deleted with it)."""
        for p in self.of_instance(instance):
            del self._partitions[p.name]

    def _current(self, name: str, etag: str) -> InstancePartitionInfo:
        info = self.get(name)
        if etag and etag != info.etag:
            raise errors.etag_mismatch("instance partition", name, etag, info.etag)
        return info

    def to_state(self) -> list[dict[str, Any]]:
        """The partitions as JSON-ready dicts (``load`` reads them back)."""
        return [dataclasses.asdict(p) for p in self._partitions.values()]

    def load(self, state: Iterable[dict[str, Any]]) -> None:
        for p in state:
            info = InstancePartitionInfo(**p)
            self._partitions[info.name] = info
