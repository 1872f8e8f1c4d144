"""``spanner-watcher demo --sink kafka``: the demo's writes published to a real broker and read back by a
plain consumer (in-process, short), and its command line's one-line refusals (no mvn, --mode both)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.test_cli_commands import CLI, REPO, _env
from watcher.devtools.demo_kafka import TOPIC_PREFIX, run_kafka_demo


def test_the_kafka_demo_publishes_every_key_s_last_version_and_a_consumer_reads_them(broker, tmp_path: Path) -> None:
    summary = run_kafka_demo(seconds=1.5, workdir=str(tmp_path / "demo"), writers=2, keys=100, quiet=True,
                             bootstrap_servers=broker.bootstrap_servers, poll_interval=0.05)
    assert summary["writer_errors"] == 0 and summary["mutations_written"] > 0
    assert summary["keys_missing"] == 0 and summary["rows_in_table"] == summary["keys_written"] > 0
    assert summary["messages_per_topic"] == {f"{TOPIC_PREFIX}.Singers": summary["messages_consumed"]}
    assert summary["messages_consumed"] == summary["changes_published"] >= summary["rows_in_table"]
    assert len(summary["sample"]) == 3 and all(s.startswith(f"{TOPIC_PREFIX}.Singers key=") for s in summary["sample"])


def test_the_kafka_demo_on_a_postgresql_database(_server, broker, tmp_path: Path) -> None:
    """The same demo on a PostgreSQL database of the suite's server: Singers from the DDL helpers, the watcher's
    tables from the PostgreSQL migrations, the same events."""
    import os

    from watcher.dialects import POSTGRESQL

    summary = run_kafka_demo(seconds=1.5, workdir=str(tmp_path / "demo"), writers=2, keys=100, quiet=True,
                             bootstrap_servers=broker.bootstrap_servers, poll_interval=0.05, dialect=POSTGRESQL,
                             emulator_host=os.environ["SPANNER_EMULATOR_HOST"], topic_prefix="demo-postgresql")
    assert summary["dialect"] == "PostgreSQL" and summary["writer_errors"] == 0 and summary["mutations_written"] > 0
    assert summary["keys_missing"] == 0 and summary["rows_in_table"] == summary["keys_written"] > 0
    assert summary["messages_per_topic"] == {"demo-postgresql.Singers": summary["messages_consumed"]}
    assert summary["messages_consumed"] == summary["changes_published"] >= summary["rows_in_table"]


def _demo(*args: str, path: str | None = None) -> subprocess.CompletedProcess:
    env = _env()
    if path is not None:
        env["PATH"] = path
        env.pop("JAVA_HOME", None)
    return subprocess.run([*CLI, "demo", "--sink", "kafka", *args], env=env, cwd=REPO, capture_output=True,
                          text=True, timeout=120)


def test_without_maven_the_kafka_demo_is_one_line_and_status_2(tmp_path: Path) -> None:
    result = _demo("--workdir", str(tmp_path / "demo"), path=str(Path(sys.executable).parent))
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert result.stderr.strip() == ("spanner-watcher demo: error: mvn and java not found on the PATH (the Kafka demo's "
                                     "broker needs Maven and Java 17+, e.g. apt-get install maven "
                                     "openjdk-17-jdk-headless)"), result.stderr
    assert not (tmp_path / "demo").exists()  # nothing started


def test_mode_both_is_refused_with_the_kafka_sink() -> None:
    result = _demo("--mode", "both")
    assert result.returncode == 2
    assert result.stderr.strip() == ("spanner-watcher demo: error: --mode both does not go with --sink kafka "
                                     "(choose poll or change_stream)")
