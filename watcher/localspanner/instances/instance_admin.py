"""Instance administration of the local service: instance configs, instances and instance partitions.

:class:`InstanceAdministration` is the part of :class:`~watcher.localspanner.service.LocalSpannerService`
that InstanceAdmin calls; it keeps its state in the service's attributes, under the service's
lock, and saves it with the service's state file. The rules live in ``instance_rules.py``,
``instance_configs.py`` and ``instance_partitions.py``.

Example:
    >>> from watcher.localspanner.service import LocalSpannerService
    >>> svc = LocalSpannerService()
    >>> svc.create_instance("projects/p/instances/i", config="nam3", edition="ENTERPRISE").edition
    'ENTERPRISE'
    >>> svc.create_instance_partition("projects/p/instances/i/instancePartitions/ip", config="eur3").processing_units
    1000
    >>> svc.delete_instance("projects/p/instances/i"); svc.close()
"""

from __future__ import annotations

import dataclasses
import re
import threading
from collections.abc import Iterable
from typing import Any

from .. import errors
from ..common.clock import Clock
from ..common.requests import DatabaseInfo, InstanceInfo
from . import instance_rules
from .instance_configs import USER_CONFIG_PREFIX, InstanceConfigInfo, Replica, UserConfigs, google_config
from .instance_partitions import InstancePartitionInfo, InstancePartitions, instance_of

_INSTANCE_NAME = re.compile(r"^projects/([^/]+)/instances/([a-z][-a-z0-9]{1,62}[a-z0-9]|[a-z][-a-z0-9]*)$")


class InstanceAdministration:
    """InstanceAdmin's methods on the service's state (a mixin of ``LocalSpannerService``)."""

    _lock: threading.RLock
    clock: Clock
    _instances: dict[str, InstanceInfo]
    _databases: dict[str, DatabaseInfo]
    _user_configs: UserConfigs
    _partitions: InstancePartitions

    def _save_state(self) -> None:
        raise NotImplementedError

    def _drop(self, name: str) -> None:
        raise NotImplementedError

    def _check_user_config(self, resource: str, config: str) -> None:
        """NOT_FOUND when ``config`` (an id) names a user-managed config that ``resource``'s project lacks."""
        if config.startswith(USER_CONFIG_PREFIX):
            name = f"{'/'.join(resource.split('/')[:2])}/instanceConfigs/{config}"
            if self._user_configs.get(name) is None:
                raise errors.instance_config_not_found(name)

    # --- instance configs --------------------------------------------------------------------------------

    def list_instance_configs(self, project: str) -> list[InstanceConfigInfo]:
        """The configurations offered: Spanner's usual ones, the user-managed ones, then any other one an instance uses."""
        with self._lock:
            used = [i.config for n, i in sorted(self._instances.items()) if n.startswith(project + "/")]
            user = self._user_configs.in_project(project)
        listed = {*instance_rules.KNOWN_CONFIGS, *(c.name.rsplit("/", 1)[-1] for c in user)}
        others = [c for c in dict.fromkeys(used) if c not in listed]
        return ([google_config(project, c) for c in instance_rules.KNOWN_CONFIGS] + user
                + [InstanceConfigInfo(f"{project}/instanceConfigs/{c}", c, (), user_managed=True) for c in others])

    def get_instance_config(self, name: str) -> InstanceConfigInfo:
        project = "/".join(name.split("/")[:2])
        for config in self.list_instance_configs(project):
            if config.name == name:
                return config
        raise errors.instance_config_not_found(name)

    def create_instance_config(self, name: str, *, base_config: str, display_name: str = "",
                               replicas: Iterable[Replica] = (), labels: dict[str, str] | None = None,
                               validate_only: bool = False) -> InstanceConfigInfo:
        """CreateInstanceConfig: a user-managed config (``instance_configs.py`` has its rules)."""
        with self._lock:
            info = self._user_configs.create(name, display_name=display_name, base_config=base_config,
                                             replicas=replicas, labels=labels, validate_only=validate_only)
            if not validate_only:
                self._save_state()
            return info

    def update_instance_config(self, name: str, fields: Iterable[str], *, display_name: str = "",
                               labels: dict[str, str] | None = None, etag: str = "",
                               validate_only: bool = False) -> InstanceConfigInfo:
        """UpdateInstanceConfig: display_name and labels of a user-managed config."""
        with self._lock:
            info = self._user_configs.update(name, fields, display_name=display_name, labels=labels, etag=etag,
                                             validate_only=validate_only)
            if not validate_only:
                self._save_state()
            return info

    def delete_instance_config(self, name: str, *, etag: str = "", validate_only: bool = False) -> None:
        """DeleteInstanceConfig: a user-managed config no instance or instance partition uses."""
        config, project = name.rsplit("/", 1)[-1], "/".join(name.split("/")[:2])
        with self._lock:
            users = [n for n, i in sorted(self._instances.items()) if i.config == config and n.startswith(project + "/")]
            users += [p.name for p in self._partitions.in_project(project) if p.config == config]
            self._user_configs.delete(name, etag=etag, used_by=users[0] if users else None, validate_only=validate_only)
            if not validate_only:
                self._save_state()

    def create_instance(self, name: str, *, config: str, display_name: str = "", node_count: int = 0,
                        labels: dict[str, str] | None = None, processing_units: int = 0, edition: str = "",
                        default_backup_schedule_type: str = "") -> InstanceInfo:
        """CreateInstance; ``edition`` and ``default_backup_schedule_type`` are enum names (empty: Spanner's default)."""
        if not _INSTANCE_NAME.match(name):
            raise errors.bad_resource_name("instance", name, "projects/<project>/instances/<instance-id>")
        config = instance_rules.config_id(config)
        nodes, units = instance_rules.capacity(node_count=node_count, processing_units=processing_units)
        edition = instance_rules.setting("edition", edition, instance_rules.EDITIONS)
        schedule = instance_rules.setting("default_backup_schedule_type", default_backup_schedule_type,
                                          instance_rules.BACKUP_SCHEDULE_TYPES)
        with self._lock:
            if name in self._instances:
                raise errors.instance_already_exists(name)
            self._check_user_config(name, config)
            now = self.clock.wall_nanos()
            info = InstanceInfo(name, config, display_name or name.rsplit("/", 1)[-1], nodes, dict(labels or {}), units,
                                edition, schedule, now, now)
            self._instances[name] = info
            self._save_state()
            return info

    def update_instance(self, name: str, fields: list[str], *, config: str = "", display_name: str = "",
                        node_count: int = 0, processing_units: int = 0,
                        labels: dict[str, str] | None = None, edition: str = "",
                        default_backup_schedule_type: str = "") -> InstanceInfo:
        """Change the fields named (UpdateInstance's field mask); the others keep their values."""
        changes: dict[str, Any] = {}
        for path in fields:
            if path == "config":
                changes["config"] = instance_rules.config_id(config) if config else None
            elif path == "display_name":
                changes["display_name"] = display_name
            elif path == "labels":
                changes["labels"] = dict(labels or {})
            elif path == "edition":
                changes["edition"] = instance_rules.setting(path, edition, instance_rules.EDITIONS)
            elif path == "default_backup_schedule_type":
                changes[path] = instance_rules.setting(path, default_backup_schedule_type,
                                                       instance_rules.BACKUP_SCHEDULE_TYPES)
            elif path in ("node_count", "processing_units"):
                nodes, units = instance_rules.capacity(
                    node_count=node_count if path == "node_count" else 0,
                    processing_units=processing_units if path == "processing_units" else 0)
                changes.update(node_count=nodes, processing_units=units)
            else:
                raise errors.instance_update_field_unknown(path)
        with self._lock:
            info = self.get_instance(name)
            if changes.get("config"):
                self._check_user_config(name, changes["config"])
            updated = dataclasses.replace(info, **{k: v for k, v in changes.items() if v is not None and v != ""},
                                          update_time_nanos=self.clock.wall_nanos())
            self._instances[name] = updated
            self._save_state()
            return updated

    def get_instance(self, name: str) -> InstanceInfo:
        with self._lock:
            info = self._instances.get(name)
        if info is None:
            raise errors.instance_not_found(name)
        return info

    def list_instances(self, project: str) -> list[InstanceInfo]:
        prefix = project.rstrip("/") + "/instances/"
        with self._lock:
            return [i for n, i in sorted(self._instances.items()) if n.startswith(prefix)]

    def delete_instance(self, name: str) -> None:
        with self._lock:
            self.get_instance(name)
            held = [d for d in self._databases if d.startswith(name + "/databases/")]
            for db in held:
                if self._databases[db].drop_protection:
                    raise errors.instance_holds_protected_database(name, db)
            for db in held:
                self._drop(db)
            self._partitions.drop_instance(name)
            del self._instances[name]
            self._save_state()

    # --- instance partitions ---------------------------------------------------------------------------------

    def create_instance_partition(self, name: str, *, config: str, display_name: str = "", node_count: int = 0,
                                  processing_units: int = 0) -> InstancePartitionInfo:
        """CreateInstancePartition: capacity as an instance's (``instance_partitions.py``)."""
        with self._lock:
            self.get_instance(instance_of(name))
            if config:
                self._check_user_config(name, instance_rules.config_id(config))
            info = self._partitions.create(name, config=config, display_name=display_name, node_count=node_count,
                                           processing_units=processing_units, now_nanos=self.clock.wall_nanos())
            self._save_state()
            return info

    def get_instance_partition(self, name: str) -> InstancePartitionInfo:
        with self._lock:
            self.get_instance(instance_of(name))
            return self._partitions.get(name)

    def list_instance_partitions(self, instance: str) -> list[InstancePartitionInfo]:
        with self._lock:
            self.get_instance(instance)
            return self._partitions.of_instance(instance)

    def update_instance_partition(self, name: str, fields: Iterable[str], *, display_name: str = "",
                                  node_count: int = 0, processing_units: int = 0, etag: str = "") -> InstancePartitionInfo:
        with self._lock:
            self.get_instance(instance_of(name))
            info = self._partitions.update(name, fields, display_name=display_name, node_count=node_count,
                                           processing_units=processing_units, etag=etag,
                                           now_nanos=self.clock.wall_nanos())
            self._save_state()
            return info

    def delete_instance_partition(self, name: str, etag: str = "") -> None:
        with self._lock:
            self.get_instance(instance_of(name))
            self._partitions.delete(name, etag)
            self._save_state()
