"""Instance configs: Google's, as the local server offers them, and user-managed ones built on them.

A user-managed config (``CreateInstanceConfig``) has an id starting with ``custom-`` and a
``base_config`` naming a Google-managed config; its replicas are the base config's and any
READ_ONLY replicas it adds, as Spanner allows. :class:`UserConfigs` keeps them; the service
holds its lock around every call and persists :meth:`UserConfigs.to_state`.

Example:
    >>> [r.location for r in google_replicas("regional-us-east1")]
    ['us-east1', 'us-east1', 'us-east1']
    >>> configs = UserConfigs()
    >>> info = configs.create("projects/p/instanceConfigs/custom-a", display_name="A", base_config="nam3")
    >>> info.base_config, len(info.replicas), info.user_managed
    ('nam3', 4, True)
"""

from __future__ import annotations

import dataclasses
import re
import uuid
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .. import errors
from . import instance_rules

USER_CONFIG_PREFIX = "custom-"
REPLICA_TYPES = ("READ_WRITE", "READ_ONLY", "WITNESS")
#: The fields UpdateInstanceConfig's mask may name.
UPDATABLE_FIELDS = ("display_name", "labels")
_USER_CONFIG_ID = re.compile(rf"{USER_CONFIG_PREFIX}[a-z0-9][-a-z0-9]{{0,55}}\Z")
#: Replicas per region: a regional config keeps three, a multi-region config two in each leader region.
_REGIONAL_REPLICAS = 3
_MULTI_REGION_REPLICAS = 2


@dataclass(frozen=True)
class Replica:
    """One replica of a config: its region, READ_WRITE / READ_ONLY / WITNESS, whether it is the default leader's."""

    location: str
    type: str
    default_leader_location: bool = False


@dataclass(frozen=True)
class InstanceConfigInfo:
    """An instance config as the admin API shows it (``base_config`` an id; empty for Google's)."""

    name: str
    display_name: str
    replicas: tuple[Replica, ...]
    base_config: str = ""
    labels: dict[str, str] = field(default_factory=dict)
    etag: str = ""
    user_managed: bool = False

    @property
    def leader_options(self) -> tuple[str, ...]:
        """The regions a database's default_leader may name: the READ_WRITE replicas' (default leader first)."""
        ordered = sorted((r for r in self.replicas if r.type == "READ_WRITE"), key=lambda r: not r.default_leader_location)
        return tuple(dict.fromkeys(r.location for r in ordered))


def google_replicas(config: str) -> tuple[Replica, ...]:
    """The replicas of a Google-managed config (an id); none for another id."""
    if config.startswith("regional-"):
        region = config.removeprefix("regional-")
        return tuple(Replica(region, "READ_WRITE", i == 0) for i in range(_REGIONAL_REPLICAS))
    leaders = instance_rules.leader_options(config)
    return tuple(Replica(region, "READ_WRITE", i == 0 and j == 0) for i, region in enumerate(leaders)
                 for j in range(_MULTI_REGION_REPLICAS if config != instance_rules.EMULATOR_CONFIG else 1))


def google_config(project: str, config: str) -> InstanceConfigInfo:
    """The config ``config`` (an id) of ``project`` as Spanner manages it."""
    return InstanceConfigInfo(f"{project}/instanceConfigs/{config}", config, google_replicas(config))


def check_replicas(base_config: str, replicas: Iterable[Replica]) -> tuple[Replica, ...]:
    """The replicas of a new user-managed config on ``base_config`` (an id): all of the base's, plus READ_ONLY ones.

    None given: the base config's.

    >>> len(check_replicas("regional-us-east1", [*google_replicas("regional-us-east1"), Replica("us-west1", "READ_ONLY")]))
    4
    """
    given = tuple(replicas)
    base = google_replicas(base_config)
    if not given:
        return base
    for i, r in enumerate(given):
        if not r.location or r.type not in REPLICA_TYPES:
            raise errors.replica_incomplete(i)
    left = Counter((r.location, r.type) for r in given)
    for r in base:
        if left[(r.location, r.type)] == 0:
            raise errors.replicas_missing_base_replica(r.location, r.type, base_config)
        left[(r.location, r.type)] -= 1
    for (location, kind), count in left.items():
        if count and kind != "READ_ONLY":
            raise errors.replica_not_optional(location, kind)
    return given


def _new_etag() -> str:
    return uuid.uuid4().hex[:16]


class UserConfigs:
    """The user-managed configs of one server, by full name (not thread-safe: the service locks)."""

    def __init__(self) -> None:
        self._configs: dict[str, InstanceConfigInfo] = {}

    def get(self, name: str) -> InstanceConfigInfo | None:
        return self._configs.get(name)

    def in_project(self, project: str) -> list[InstanceConfigInfo]:
        return [c for n, c in sorted(self._configs.items()) if n.startswith(project + "/instanceConfigs/")]

    def create(self, name: str, *, display_name: str, base_config: str, replicas: Iterable[Replica] = (),
               labels: dict[str, str] | None = None, validate_only: bool = False) -> InstanceConfigInfo:
        """A new user-managed config (refused when the id, base config or replicas break Spanner's rules)."""
        config_id = name.rsplit("/", 1)[-1]
        if not re.fullmatch(r"projects/[^/]+/instanceConfigs/[^/]+", name):
            raise errors.bad_resource_name("instance config", name, "projects/<project>/instanceConfigs/<config>")
        if not _USER_CONFIG_ID.match(config_id):
            raise errors.instance_config_id_invalid(config_id)
        base = base_config.rsplit("/", 1)[-1]
        if base not in instance_rules.KNOWN_CONFIGS:
            raise errors.base_config_invalid(base_config)
        if name in self._configs:
            raise errors.instance_config_already_exists(name)
        info = InstanceConfigInfo(name, display_name or config_id, check_replicas(base, replicas), base,
                                  dict(labels or {}), _new_etag(), user_managed=True)
        if not validate_only:
            self._configs[name] = info
        return info

    def update(self, name: str, fields: Iterable[str], *, display_name: str = "", labels: dict[str, str] | None = None,
               etag: str = "", validate_only: bool = False) -> InstanceConfigInfo:
        """Set the ``fields`` named (``UPDATABLE_FIELDS``); ``etag``, when given, must be the current one."""
        paths = list(fields)
        if not paths:
            raise errors.update_mask_empty("UpdateInstanceConfig")
        for path in paths:
            if path not in UPDATABLE_FIELDS:
                raise errors.update_mask_field_unknown("UpdateInstanceConfig", path, UPDATABLE_FIELDS)
        info = self._existing(name, "updated", etag)
        changes: dict[str, Any] = {"etag": _new_etag()}
        if "display_name" in paths:
            changes["display_name"] = display_name or info.display_name
        if "labels" in paths:
            changes["labels"] = dict(labels or {})
        updated = dataclasses.replace(info, **changes)
        if not validate_only:
            self._configs[name] = updated
        return updated

    def delete(self, name: str, *, etag: str = "", used_by: str | None = None, validate_only: bool = False) -> None:
        """Remove a user-managed config; refused while ``used_by`` (an instance) uses it."""
        self._existing(name, "deleted", etag)
        if used_by is not None:
            raise errors.instance_config_in_use(name, used_by)
        if not validate_only:
            del self._configs[name]

    def _existing(self, name: str, action: str, etag: str) -> InstanceConfigInfo:
        info = self._configs.get(name)
        if info is None:
            if name.rsplit("/", 1)[-1] in instance_rules.KNOWN_CONFIGS:
                raise errors.google_managed_config_immutable(name, action)
            raise errors.instance_config_not_found(name)
        if etag and etag != info.etag:
            raise errors.etag_mismatch("instance config", name, etag, info.etag)
        return info

    def to_state(self) -> list[dict[str, Any]]:
        """The configs as JSON-ready dicts (``load`` reads them back)."""
        return [dataclasses.asdict(c) for c in self._configs.values()]

    def load(self, state: Iterable[dict[str, Any]]) -> None:
        for c in state:
            replicas = tuple(Replica(**r) for r in c.get("replicas", ()))
            info = InstanceConfigInfo(**{**c, "replicas": replicas})
            self._configs[info.name] = info
