"""Where ``watch`` sends its batches: the ``[[sinks]]`` entries and the ``[kafka]`` table of the configuration.

Without either, every batch is staged into ``[watch] staging_dir`` (one staging sink). A
``[kafka]`` table alone publishes to Kafka as well: the staging sink, then the Kafka sink. With
``[[sinks]]`` the entries are exactly the sinks, in order (each ``type = "staging"`` or
``"kafka"``), and a ``[kafka]`` table beside them holds the defaults of their Kafka entries.
A batch goes to every sink in turn; the checkpoint moves once all of them acknowledged it::

    [kafka]                                    # or in a [[sinks]] entry with type = "kafka"
    bootstrap_servers = "127.0.0.1:9092"       # required: host:port[,host:port...] (or a list)
    topic_template = "%database%.%table%"      # default "%table%"; placeholders %table%, %database%,
                                               # %instance%, %project%
    # topic_prefix = "shop"                    # instead: Debezium's topic names, shop.<table>
    format = "debezium"                        # or "record" (a staged batch file's line)
    create_topics = true                       # create a missing topic (default false: an error naming it)
    partitions = 3                             # of a topic the sink creates (default 1)
    replication_factor = 1                     # of a topic the sink creates (default 1)
    delivery_timeout = 30                      # seconds the broker has to acknowledge a message
    connect_timeout = 5                        # seconds the brokers have to answer at start
    tombstones = false                         # a tombstone after each DELETE (compacted topics)
    server_name = "shop"                       # Debezium's source.name (default: the database id)
    dead_letter_topic = "shop.dead-letters"    # where a message that cannot be published goes
    name = "kafka"                             # the sink's name in metrics and messages (default: its type)

    [kafka.producer]                           # librdkafka producer settings, passed through
    "compression.type" = "lz4"
    "linger.ms" = 5

    [[sinks]]                                  # a second form: every sink listed, in order
    type = "staging"
    staging_dir = "staging"                    # default: [watch] staging_dir
    [[sinks]]
    type = "kafka"
    topic_template = "audit.%table%"           # the other keys from [kafka]

The same in Python (what ``watch`` builds from it)::

    from watcher.sinks import attach_sinks
    from watcher.sinks.kafka import KafkaSink
    from watcher.staging.sink import StagingSink

    kafka = KafkaSink("127.0.0.1:9092", topic="%database%.%table%", event_format="debezium", create_topics=True,
                      partitions=3, dead_letter_topic="shop.dead-letters",
                      config={"compression.type": "lz4", "linger.ms": 5})
    attach_sinks(watcher, [StagingSink("staging"), kafka])

Example:
    >>> from watcher.cli.config import parse_config
    >>> cfg = parse_config('[kafka]\\nbootstrap_servers = "k1:9092"\\ntopic_template = "shop.%table%"', "w.toml")
    >>> [(s.type, s.name) for s in cfg.sink_settings()]
    [('staging', 'staging'), ('kafka', 'kafka')]
    >>> parse_config('[[sinks]]\\ntype = "kafka"\\nbootstrap_servers = "k:1"\\ntopic_template = "%foo%"', "watch.toml")
    Traceback (most recent call last):
    ...
    watcher.cli.config.ConfigError: watch.toml: sinks[0].topic_template: unknown placeholder %foo% (known: %database%, %instance%, %project%, %table%) (line 4)
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ConfigurationError

if TYPE_CHECKING:
    from ..sinks.base import Sink
    from ..sinks.kafka import KafkaSink
    from .config import _Reader

__all__ = ["KafkaSinkSettings", "SinkSettings", "StagingSinkSettings", "read_sinks"]

STAGING, KAFKA = "staging", "kafka"
SINK_TYPES = (STAGING, KAFKA)
STAGING_KEYS = ("type", "name", "staging_dir")
KAFKA_KEYS = ("type", "name", "bootstrap_servers", "topic_template", "topic_prefix", "format", "create_topics",
              "partitions", "replication_factor", "delivery_timeout", "connect_timeout", "tombstones", "server_name",
              "dead_letter_topic", "producer")
#: KafkaSink's defaults (repeated so that reading a configuration does not load the Kafka client).
DEFAULT_TOPIC_TEMPLATE = "%table%"
DEFAULT_FORMAT = "debezium"
DEFAULT_DELIVERY_TIMEOUT = 30.0
DEFAULT_CONNECT_TIMEOUT = 5.0

_SERVER = re.compile(r"^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+):([0-9]{1,5})$")
_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")


@dataclass(frozen=True)
class StagingSinkSettings:
    """A staging sink: durable batch files under ``staging_dir`` (a Path, or a URL of another filesystem)."""

    key: str
    name: str
    staging_dir: Path | str
    type: str = STAGING

    def build(self, *, watcher_id: str | None = None) -> Sink:
        """The :class:`~watcher.staging.sink.StagingSink` these settings describe."""
        from ..staging.sink import StagingSink

        return StagingSink(self.staging_dir, watcher_id=watcher_id)


@dataclass(frozen=True)
class KafkaSinkSettings:
    """A Kafka sink (:class:`~watcher.sinks.kafka.KafkaSink`); ``key`` is where it was configured."""

    key: str
    name: str
    bootstrap_servers: str
    topic_template: str = DEFAULT_TOPIC_TEMPLATE
    format: str = DEFAULT_FORMAT
    create_topics: bool = False
    partitions: int = 1
    replication_factor: int = 1
    delivery_timeout: float = DEFAULT_DELIVERY_TIMEOUT
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT
    tombstones: bool = False
    server_name: str | None = None
    dead_letter_topic: str | None = None
    producer: Mapping[str, Any] = field(default_factory=dict)
    type: str = KAFKA

    def key_of(self, name: str) -> str:
        """The configuration key of field ``name``.

        >>> KafkaSinkSettings("sinks[1]", "kafka-2", "k:1").key_of("producer")
        'sinks[1].producer'
        """
        return f"{self.key}.{name}"

    def arguments(self) -> dict[str, Any]:
        """KafkaSink's keyword arguments."""
        return dict(topic=self.topic_template, event_format=self.format, create_topics=self.create_topics,
                    partitions=self.partitions, replication_factor=self.replication_factor,
                    delivery_timeout=self.delivery_timeout, connect_timeout=self.connect_timeout,
                    tombstones=self.tombstones, server_name=self.server_name,
                    dead_letter_topic=self.dead_letter_topic, config=dict(self.producer))

    def build(self, *, watcher_id: str | None = None, database: Any = None) -> KafkaSink:
        """The :class:`~watcher.sinks.kafka.KafkaSink` these settings describe (nothing connects yet;
        ``database`` None: the attached watcher's)."""
        from ..sinks.kafka import KafkaSink

        return KafkaSink(self.bootstrap_servers, watcher_id=watcher_id, database=database, **self.arguments())


SinkSettings = StagingSinkSettings | KafkaSinkSettings


def read_sinks(r: _Reader, sinks: Any, kafka: Any, staging_dir: Path | str) -> tuple[SinkSettings, ...]:
    """The sinks of ``[[sinks]]`` and ``[kafka]``; () for the default (one staging sink into ``staging_dir``)."""
    if kafka is not None and not isinstance(kafka, dict):
        raise r.fail("kafka", f"expected a table ([kafka]), got {r.kind(kafka)}")
    if sinks is None:
        if kafka is None:
            return ()
        name = _name(r, "kafka", kafka, KAFKA, [STAGING])
        return (StagingSinkSettings("watch.staging_dir", STAGING, staging_dir),
                KafkaSinkSettings("kafka", name, **_kafka_values(r, "kafka", kafka, {}, required=True)))
    if kafka is not None and "name" in kafka:
        raise r.fail("kafka.name", "with [[sinks]], [kafka] holds their defaults: name each [[sinks]] entry instead")
    defaults = _kafka_values(r, "kafka", kafka, {}, required=False) if kafka is not None else {}
    if not isinstance(sinks, list) or not all(isinstance(v, dict) for v in sinks):
        raise r.fail("sinks", f"expected [[sinks]] entries (an array of tables), got {r.kind(sinks)}")
    if not sinks:
        raise r.fail("sinks", "an empty list sends nothing anywhere; list at least one sink")
    out: list[SinkSettings] = []
    for i, entry in enumerate(sinks):  # each entry on its own, so the mistakes of several are reported together
        if (sink := r.attempt(None, _entry, r, f"sinks[{i}]", entry, out, defaults, staging_dir)) is not None:
            out.append(sink)
    return tuple(out)


def _entry(r: _Reader, key: str, entry: dict[str, Any], out: list[SinkSettings], defaults: dict[str, Any],
           staging_dir: Path | str) -> SinkSettings:
    """One ``[[sinks]]`` entry (``out``: the entries before it, whose names and folders it must not reuse)."""
    kind = entry.get("type")
    if kind is None:
        raise r.fail(f"{key}.type", f"missing: say which sink, one of {', '.join(SINK_TYPES)}")
    if kind not in SINK_TYPES:
        raise r.fail(f"{key}.type", f"unknown sink type {kind!r}{r.did_you_mean(str(kind), SINK_TYPES)} "
                                    f"(known: {', '.join(SINK_TYPES)})")
    taken = [s.name for s in out]
    if kind == STAGING:
        r.keys(key, entry, STAGING_KEYS)
        folder = r.folder(f"{key}.staging_dir", entry["staging_dir"]) if "staging_dir" in entry else staging_dir
        if any(isinstance(s, StagingSinkSettings) and str(s.staging_dir) == str(folder) for s in out):
            raise r.fail(f"{key}.staging_dir", f"{folder} is the folder of another staging sink")
        return StagingSinkSettings(key, _name(r, key, entry, STAGING, taken), folder)
    values = _kafka_values(r, key, {k: v for k, v in entry.items() if k != "type"}, defaults, required=True)
    return KafkaSinkSettings(key, _name(r, key, entry, KAFKA, taken), **values)


def _name(r: _Reader, key: str, entry: dict[str, Any], kind: str, taken: list[str]) -> str:
    """The sink's own name, or its type (``kafka-2`` for the second of a type) when it has none."""
    if "name" in entry:
        name = r.text(f"{key}.name", entry["name"])
        if not _NAME.match(name):
            raise r.fail(f"{key}.name", f"{name!r}: use letters, digits, '.', '_' and '-'")
        if name in taken:
            raise r.fail(f"{key}.name", f"another sink is named {name}")
        return name
    n, name = 1, kind
    while name in taken:
        n += 1
        name = f"{kind}-{n}"
    return name


def _kafka_values(r: _Reader, key: str, table: dict[str, Any], defaults: dict[str, Any], *,
                  required: bool) -> dict[str, Any]:
    """The checked Kafka keys of ``table`` over ``defaults`` (KafkaSinkSettings' fields, ``key`` and name aside)."""
    from ..sinks import events
    from ..sinks.topics import SourceNames, TopicTemplate, debezium_topic

    r.keys(key, table, KAFKA_KEYS[1:])  # an entry's type was read already; [kafka] has none
    out = dict(defaults)
    if "bootstrap_servers" in table:
        out["bootstrap_servers"] = _servers(r, f"{key}.bootstrap_servers", table["bootstrap_servers"])
    elif required and "bootstrap_servers" not in out:
        raise r.fail(f"{key}.bootstrap_servers", "missing: name the Kafka brokers, e.g. \"127.0.0.1:9092\"")
    if "topic_template" in table and "topic_prefix" in table:
        raise r.fail(f"{key}.topic_prefix", "give topic_template or topic_prefix, not both")
    for name in ("topic_template", "topic_prefix"):
        if name not in table:
            continue
        text = r.text(f"{key}.{name}", table[name])
        try:
            template = TopicTemplate(text if name == "topic_template" else debezium_topic(text))
            template.topic("Table", SourceNames("project", "instance", "database"))  # legal characters and length
        except ConfigurationError as exc:
            raise r.fail(f"{key}.{name}", _without_template(str(exc))) from None
        out["topic_template"] = template.template
    if "format" in table:
        try:
            out["format"] = events.check_format(r.text(f"{key}.format", table["format"]))
        except ConfigurationError:
            raise r.fail(f"{key}.format", f"unknown format {table['format']!r}"
                                          f"{r.did_you_mean(table['format'], events.FORMATS)} "
                                          f"(known: {', '.join(events.FORMATS)})") from None
    for name in ("create_topics", "tombstones"):
        if name in table:
            if not isinstance(table[name], bool):
                raise r.fail(f"{key}.{name}", f"expected true or false, got {r.kind(table[name])}")
            out[name] = table[name]
    for name in ("partitions", "replication_factor"):
        if name in table:
            out[name] = r.integer(f"{key}.{name}", table[name], minimum=1)
    for name in ("delivery_timeout", "connect_timeout"):
        if name in table:
            out[name] = r.number(f"{key}.{name}", table[name], minimum=0.001)
    if "server_name" in table:
        out["server_name"] = r.text(f"{key}.server_name", table["server_name"])
    if "dead_letter_topic" in table:
        out["dead_letter_topic"] = _plain_topic(r, f"{key}.dead_letter_topic", table["dead_letter_topic"])
    if "producer" in table:
        out["producer"] = {**out.get("producer", {}), **_producer(r, f"{key}.producer", table["producer"])}
    return out


def _without_template(message: str) -> str:
    """The topic template's own message without its leading ``topic template '...': `` (the key names it)."""
    return re.sub(r"^topic template '[^']*':? ", "", message)


def _servers(r: _Reader, key: str, value: Any) -> str:
    """``host:port[,host:port...]`` from a string or a list of strings, each checked."""
    if isinstance(value, list):
        if not value or not all(isinstance(v, str) for v in value):
            raise r.fail(key, "expected a list of \"host:port\" strings")
        parts = [v.strip() for v in value]
    else:
        parts = [p.strip() for p in r.text(key, value).split(",")]
    for part in parts:
        match = _SERVER.match(part)
        if match is None or not 0 < int(match.group(2)) < 65536:
            raise r.fail(key, f"expected host:port, got {part!r}")
    return ",".join(parts)


def _plain_topic(r: _Reader, key: str, value: Any) -> str:
    """One topic name, without placeholders, that Kafka accepts."""
    from ..sinks.topics import SourceNames, TopicTemplate

    text = r.text(key, value)
    try:
        template = TopicTemplate(text)
        name = template.topic("Table", SourceNames("project", "instance", "database"))
    except ConfigurationError as exc:
        raise r.fail(key, _without_template(str(exc))) from None
    if template.uses:
        raise r.fail(key, f"{text!r}: one topic for every table, without placeholders")
    return name


def _producer(r: _Reader, key: str, value: Any) -> dict[str, Any]:
    """librdkafka settings: names to strings, numbers or booleans; not those the sink fixes or its keys give."""
    if not isinstance(value, dict):
        raise r.fail(key, f"expected a table of librdkafka settings ([{key}]), got {r.kind(value)}")
    reserved = _reserved()
    out: dict[str, Any] = {}
    for name, setting in value.items():
        where = f"{key}.{name}"
        if isinstance(setting, dict | list):
            raise r.fail(where, f"expected a string, number or true/false, got {r.kind(setting)}")
        if name in reserved:
            raise r.fail(where, reserved[name])
        out[name] = setting
    return out


def _reserved() -> dict[str, str]:
    """Producer settings a configuration may not give -> why (KafkaSink fixes them, or its keys give them)."""
    try:
        from ..sinks.kafka import ARGUMENT_SETTINGS, PRODUCER_SETTINGS
    except ImportError:  # without the Kafka client the sink cannot be built anyway; said when it is
        return {}
    fixed = {name: f"fixed by the sink ({name}={str(v).lower()}): its delivery guarantee needs it"
             for name, v in PRODUCER_SETTINGS.items()}
    given = {name: (f"fixed by the sink ({argument})" if " " in argument else f"set by the sink's own key {argument}")
             for name, argument in ARGUMENT_SETTINGS.items()}
    return {**fixed, **given}
