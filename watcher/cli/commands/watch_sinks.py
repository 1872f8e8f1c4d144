"""The sinks of ``spanner-watcher watch``: checked before anything starts, built, described and summed up.

Each sink of the configuration (:mod:`watcher.cli.config_sinks`) is wrapped in a
:class:`~watcher.sinks.metered.MeteredSink` named after it, so ``/metrics`` reports its figures.
Before anything connects to the database, a staging sink's folder must be usable, and a Kafka
sink's producer settings known and its brokers answering (within its ``connect_timeout``):
otherwise one line names the key (and the bootstrap servers), and ``watch`` exits with status 2.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def check_sinks(cfg: Any) -> list[Any]:
    """The configuration's sinks, in order, each a MeteredSink named as configured, once every one can work:
    staging folders usable, Kafka producer settings known to librdkafka, Kafka brokers answering (else a
    CommandError naming the key, and no staging folder made). Not attached yet: :func:`attach_sinks`."""
    from ...errors import ConfigurationError, StorageURLError
    from ...extras import require
    from ...sinks.errors import BrokerUnreachableError
    from ...sinks.metered import MeteredSink
    from ...storage_urls import open_filesystem
    from ..config_sinks import KafkaSinkSettings
    from ..main import CommandError

    built: dict[str, Any] = {}
    for s in cfg.sink_settings():
        if isinstance(s, KafkaSinkSettings):
            continue
        folder, key = s.staging_dir, s.key if s.key == "watch.staging_dir" else f"{s.key}.staging_dir"
        if isinstance(folder, Path) and folder.exists() and not folder.is_dir():
            raise CommandError(str(cfg.error(key, f"{folder} exists and is not a folder")))
        try:
            open_filesystem(folder)  # a URL whose filesystem is missing: said before anything connects
        except StorageURLError as exc:
            raise CommandError(str(cfg.error(key, str(exc)))) from None
    # One watcher_id in every sink's records (without [watch] watcher_id, the first sink's random one).
    watcher_id = cfg.watcher_id
    for s in cfg.sink_settings():
        if not isinstance(s, KafkaSinkSettings):
            continue
        try:
            require("kafka", "a Kafka sink")  # a MissingExtraError (an ImportError) naming the extra
            from ...sinks.kafka_settings import check_producer_settings, setting_named

            check_producer_settings(s.producer)
            sink = s.build(watcher_id=watcher_id)  # the database's names come from the watcher it is attached to
            sink.connect()
        except ImportError as exc:
            raise CommandError(str(cfg.error(s.key, str(exc)))) from None
        except BrokerUnreachableError as exc:
            raise CommandError(str(cfg.error(s.key_of("bootstrap_servers"), str(exc)))) from None
        except ConfigurationError as exc:
            named = setting_named(str(exc))
            raise CommandError(str(cfg.error(s.key_of("producer") + (f".{named}" if named else ""), str(exc)))) from None
        built[s.key] = sink
        watcher_id = sink.watcher_id
    # Staging sinks last: making one makes its folder, which a refused Kafka sink must not leave behind.
    sinks = []
    for s in cfg.sink_settings():
        if s.key not in built:
            built[s.key] = s.build(watcher_id=watcher_id)
            watcher_id = built[s.key].watcher_id
        sinks.append(MeteredSink(built[s.key], s.name))
    return sinks


def attach_sinks(watcher: Any, sinks: list[Any]) -> None:
    """Attach ``sinks`` in order: the checkpoint moves once every one acknowledged a batch."""
    from ...sinks import attach_sinks as attach

    attach(watcher, sinks)


def describe(sinks: list[Any]) -> str:
    """Where the batches go, for the first line: ``staging to DIR; publishing to Kafka at B``."""
    return "; ".join(_where(m) for m in sinks)


def _where(metered: Any) -> str:
    from ...staging.sink import StagingSink

    sink = metered.sink
    if isinstance(sink, StagingSink):
        return f"staging to {sink.directory}" + (f" (sink {metered.name})" if metered.name != "staging" else "")
    return f"publishing to Kafka at {sink.bootstrap_servers} (topics {sink.template.template}, sink {metered.name})"


def summary(sinks: list[Any]) -> str:
    """What each sink did, for the last line."""
    from ...staging.sink import StagingSink

    parts = []
    for m in sinks:
        sink, figures = m.sink, m.metrics.snapshot()
        if isinstance(sink, StagingSink):
            parts.append(f"{sink.records_written:,} changes staged in {sink.batches_written:,} batches under "
                         f"{sink.directory}")
        else:
            failed = f", {figures['failures']:,} batches refused" if figures["failures"] else ""
            parts.append(f"{figures['acknowledged']:,} changes published to Kafka at {sink.bootstrap_servers} "
                         f"(sink {m.name}{failed})")
    return "; ".join(parts)


def close_sinks(sinks: list[Any]) -> None:
    """Close every sink (a Kafka sink waits for messages still queued), the first error raised after all closed."""
    errors = []
    for m in sinks:
        try:
            m.close()
        except Exception as exc:  # noqa: BLE001 - raised below, once the others are closed too
            errors.append(exc)
    if errors:
        raise errors[0]
