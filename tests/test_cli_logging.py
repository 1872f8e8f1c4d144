"""The logging options: accepted before or after the subcommand, ``-v`` repeatable, JSON lines for containers."""

from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from watcher.cli.log_setup import configure_logging, level_of
from watcher.cli.main import build_parser

REPO = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "watcher"]
#: A command that prints DDL and touches no database: cheap to run as a user does.
DDL = ["ddl", "index", "Singers"]


@pytest.fixture(scope="module")
def parser():  # type: ignore[no-untyped-def]
    return build_parser()


@pytest.fixture
def restore_root_logger() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


@pytest.mark.parametrize("argv, level", [
    (["-v", *DDL], "INFO"),
    ([*DDL, "-v"], "INFO"),
    ([*DDL, "-v", "-v"], "DEBUG"),
    (["-v", *DDL, "-v"], "DEBUG"),
    ([*DDL, "-vv"], "DEBUG"),
    ([*DDL], "WARNING"),
    ([*DDL, "-q"], "ERROR"),
    (["-q", *DDL], "ERROR"),
    (["--log-level", "ERROR", *DDL, "-vv"], "ERROR"),
    (["--log-level", "ERROR", *DDL, "--log-level", "info"], "INFO"),
    (["ddl", "-v", "index", "Singers"], "INFO"),
])
def test_levels_from_options_before_and_after_the_subcommand(parser, argv: list[str], level: str) -> None:  # type: ignore[no-untyped-def]
    assert level_of(parser.parse_args(argv)) == level


def test_log_format_is_accepted_after_the_subcommand(parser) -> None:  # type: ignore[no-untyped-def]
    assert parser.parse_args(["--log-format", "json", *DDL]).log_format == "json"
    assert parser.parse_args([*DDL, "--log-format", "json"]).log_format == "json"
    assert parser.parse_args(DDL).log_format == "text"


def test_json_lines_carry_time_level_logger_message_and_exception(parser, restore_root_logger: None) -> None:  # type: ignore[no-untyped-def]
    out = io.StringIO()
    configure_logging(parser.parse_args([*DDL, "--log-format", "json", "-v"]), out)
    configure_logging(parser.parse_args([*DDL, "--log-format", "json", "-v"]), out)  # replaces, not adds
    log = logging.getLogger("watcher.test")
    log.debug("not at INFO")
    log.info("hello %s", "there")
    try:
        raise ValueError("boom")
    except ValueError:
        log.exception("failed")
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [(e["level"], e["logger"], e["message"]) for e in lines] == [
        ("INFO", "watcher.test", "hello there"), ("ERROR", "watcher.test", "failed")]
    assert "exception" not in lines[0]
    assert "ValueError: boom" in lines[1]["exception"] and "Traceback" in lines[1]["exception"]
    for entry in lines:
        assert entry["time"].endswith("Z") and "T" in entry["time"]


def test_a_bad_log_format_is_a_usage_error(parser, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(SystemExit) as exited:
        parser.parse_args([*DDL, "--log-format", "yaml"])
    assert exited.value.code == 2
    assert "--log-format: invalid choice: 'yaml'" in capsys.readouterr().err


def test_the_command_line_logs_debug_given_twice_after_the_subcommand_as_json_lines() -> None:
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([*CLI, *DDL, "-v", "-v", "--log-format", "json"], capture_output=True, text=True,
                          env=env, cwd=REPO, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "CREATE NULL_FILTERED INDEX" in done.stdout
    entries = [json.loads(line) for line in done.stderr.splitlines()]
    assert entries and all(set(e) >= {"time", "level", "logger", "message"} for e in entries), entries
    assert ("DEBUG", "watcher.cli.main") in {(e["level"], e["logger"]) for e in entries}, entries
