"""Instance configurations and compute capacity, as Spanner and its emulator accept them.

The local server runs everything in one process, so a configuration and a capacity are only
recorded and reported. It accepts the configuration names applications and their test
suites use: ``emulator-config``, Google's regional and multi-region names, the user-managed
configs created with CreateInstanceConfig (``custom-...``, ``instance_configs.py``), and any
other well-formed id. Capacity follows Spanner's rules: processing units
are 100..900 in steps of 100 or whole nodes of 1000; ``node_count * 1000 = processing_units``.

Example:
    >>> capacity(node_count=2, processing_units=0), capacity(node_count=0, processing_units=500)
    ((2, 2000), (0, 500))
    >>> config_id("projects/p/instanceConfigs/nam3"), leader_options("regional-us-central1")
    ('nam3', ('us-central1',))
    >>> setting("edition", "", EDITIONS), setting("default_backup_schedule_type", "NONE", BACKUP_SCHEDULE_TYPES)
    ('STANDARD', 'NONE')
"""

from __future__ import annotations

import re

from .. import errors

PROCESSING_UNITS_PER_NODE = 1000
PROCESSING_UNITS_STEP_BELOW_A_NODE = 100
MAX_NODES = 10_000
EMULATOR_CONFIG = "emulator-config"

#: Multi-region configurations and their leader regions (the first is the default leader).
MULTI_REGION_LEADERS: dict[str, tuple[str, ...]] = {
    "nam3": ("us-east4", "us-east1"),
    "nam6": ("us-central1", "us-east1", "us-west1", "us-west2"),
    "nam7": ("us-central1", "us-east4"),
    "nam-eur-asia1": ("us-central1", "us-central2"),
    "eur3": ("europe-west1", "europe-west4"),
    "eur5": ("europe-west2", "europe-west1"),
    "eur6": ("europe-west4", "europe-west3"),
    "asia1": ("asia-northeast1", "asia-northeast2"),
}
#: Regions offered as ``regional-<region>`` configurations.
REGIONS = (
    "us-central1", "us-east1", "us-east4", "us-west1", "us-west2", "northamerica-northeast1",
    "europe-west1", "europe-west2", "europe-west3", "europe-west4", "asia-east1", "asia-northeast1",
    "asia-south1", "asia-southeast1", "australia-southeast1", "southamerica-east1",
)
#: The configurations ListInstanceConfigs lists, in order.
KNOWN_CONFIGS: tuple[str, ...] = (EMULATOR_CONFIG, *(f"regional-{r}" for r in REGIONS), *MULTI_REGION_LEADERS)

#: An instance's editions and default backup schedule types; the first is what an instance gets when none is given.
EDITIONS = ("STANDARD", "ENTERPRISE", "ENTERPRISE_PLUS")
BACKUP_SCHEDULE_TYPES = ("AUTOMATIC", "NONE")

_CONFIG_ID = re.compile(r"[a-z][-a-z0-9]{0,62}\Z")


def config_id(name: str) -> str:
    """The id of a configuration given by id or full name; INVALID_ARGUMENT when it is not well formed."""
    short = name.rsplit("/", 1)[-1]
    if "/" in name and not re.fullmatch(r"projects/[^/]+/instanceConfigs/[^/]+", name):
        raise errors.bad_resource_name("instance config", name, "projects/<project>/instanceConfigs/<config>")
    if not _CONFIG_ID.match(short):
        raise errors.instance_config_not_found(name)
    return short


def leader_options(config: str) -> tuple[str, ...]:
    """The regions a database's default_leader may name in ``config`` (an id)."""
    if config.startswith("regional-"):
        return (config.removeprefix("regional-"),)
    return MULTI_REGION_LEADERS.get(config, ("emulator-region",) if config == EMULATOR_CONFIG else ())


def capacity(*, node_count: int, processing_units: int) -> tuple[int, int]:
    """``(node_count, processing_units)`` from a request that may give either, both or neither (0: not given).

    Neither means one node, as the client's default. Both must agree.
    """
    if node_count < 0 or processing_units < 0:
        raise errors.instance_capacity_invalid(errors.capacity_negative(node_count, processing_units))
    if node_count and processing_units and node_count * PROCESSING_UNITS_PER_NODE != processing_units:
        raise errors.instance_capacity_invalid(
            errors.capacity_disagrees(node_count, processing_units, PROCESSING_UNITS_PER_NODE))
    units = processing_units or node_count * PROCESSING_UNITS_PER_NODE or PROCESSING_UNITS_PER_NODE
    if units < PROCESSING_UNITS_PER_NODE:
        ok = units % PROCESSING_UNITS_STEP_BELOW_A_NODE == 0
    else:
        ok = units % PROCESSING_UNITS_PER_NODE == 0 and units <= MAX_NODES * PROCESSING_UNITS_PER_NODE
    if not ok:
        raise errors.instance_capacity_invalid(
            errors.capacity_granularity(units, PROCESSING_UNITS_STEP_BELOW_A_NODE, PROCESSING_UNITS_PER_NODE))
    return units // PROCESSING_UNITS_PER_NODE, units


def setting(field: str, value: str, allowed: tuple[str, ...]) -> str:
    """``value`` of an instance's enum ``field`` (its name; empty: unspecified, the first of ``allowed``)."""
    if not value or value.endswith("_UNSPECIFIED"):
        return allowed[0]
    if value not in allowed:
        raise errors.instance_setting_invalid(field, value, allowed)
    return value
