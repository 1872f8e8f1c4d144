"""A configuration file's mistakes are reported all at once, each with its key and line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from watcher.cli.config import ConfigError, ConfigErrors, parse_config
from watcher.cli.config_lines import key_line

REPO = Path(__file__).resolve().parents[1]

#: Four mistakes: an unknown key, a wrong type, a bad value in a [tables] entry and one in a [[sinks]] entry.
MISTAKES = """\
[watch]
poll_intervall = 1
limit = "many"

[tables.Singers]
shards = { kind = "fixed", column = "ShardId", values = "5..1" }

[[sinks]]
type = "staging"

[[sinks]]
type = "kafka"
bootstrap_servers = "127.0.0.1:9092"
topic_template = "%foo%"
"""
EXPECTED = [  # (key, line, words of the problem)
    ("watch.poll_intervall", 2, "unknown key (did you mean poll_interval?)"),
    ("watch.limit", 3, "expected an integer, got a string"),
    ("tables.Singers.shards.values", 6, "the range '5..1' is empty"),
    ("sinks[1].topic_template", 14, "unknown placeholder %foo%"),
]


def test_every_mistake_of_a_file_is_reported_with_its_key_and_line() -> None:
    with pytest.raises(ConfigErrors) as info:
        parse_config(MISTAKES, "watcher.toml")
    errors = info.value.errors
    assert [(e.key, e.line) for e in errors] == [(key, line) for key, line, _ in EXPECTED]
    for error, (_, _, words) in zip(errors, EXPECTED, strict=True):
        assert words in error.problem, error
    lines = str(info.value).splitlines()
    assert lines[0] == "watcher.toml: 4 mistakes:"
    for text, (key, line, words) in zip(lines[1:], EXPECTED, strict=True):
        assert text.startswith(f"  watcher.toml: {key}: ") and text.endswith(f" (line {line})"), text
        assert words in text


def test_one_mistake_is_one_line_with_its_line_number() -> None:
    with pytest.raises(ConfigError) as info:
        parse_config("[watch]\n\nlimit = 0\n", "watcher.toml")
    assert not isinstance(info.value, ConfigErrors)
    assert str(info.value) == "watcher.toml: watch.limit: must be at least 1, got 0 (line 3)"
    assert info.value.errors == (info.value,)


def test_a_mistake_in_a_section_does_not_hide_one_in_the_next_entry() -> None:
    text = '[[sinks]]\ntype = "kafak"\n[[sinks]]\ntype = "staging"\nfolder = "x"\n'
    with pytest.raises(ConfigErrors) as info:
        parse_config(text, "w.toml")
    assert [(e.key, e.line) for e in info.value.errors] == [("sinks[0].type", 2), ("sinks[1].folder", 5)]


def test_a_toml_syntax_error_names_its_line_and_column() -> None:
    with pytest.raises(ConfigError) as info:
        parse_config("[watch]\nlimit = = 3\n", "w.toml")
    assert (info.value.line, info.value.column) == (2, 9)
    assert str(info.value).startswith("w.toml: not valid TOML: ") and str(info.value).endswith("(line 2, column 9)")


KEYS_TEXT = """\
[kafka]
bootstrap_servers = "k:1"
[kafka.producer]
"enable.idempotence" = false
[[sinks]]
type = "kafka"
[sinks.producer]
acks = 1
[tables]
include = [
  "A",
  "B",
]
"""


@pytest.mark.parametrize("key, line", [
    ("kafka.producer.enable.idempotence", 4),  # a quoted key with dots
    ("sinks[0].producer.acks", 8),             # a sub-table of an array entry
    ("sinks[0].name", 5),                      # a missing key: its entry's header
    ("tables.include[1]", 10),                 # an item of a list across lines: the list's line
    ("watch", None),
])
def test_key_lines(key: str, line: int | None) -> None:
    assert key_line(KEYS_TEXT, key) == line


def test_key_lines_skip_multi_line_strings() -> None:
    text = '[watch]\nwatcher_id = """\nlimit = 3\n"""\nlimit = 4\n'
    assert key_line(text, "watch.limit") == 5


def test_the_command_line_prints_every_mistake_and_exits_2(tmp_path: Path) -> None:
    path = tmp_path / "watcher.toml"
    path.write_text(MISTAKES)
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, "-m", "watcher", "watch", "--config", str(path)], capture_output=True,
                          text=True, env=env, cwd=tmp_path, timeout=300)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert lines[0] == f"spanner-watcher watch: error: {path}: 4 mistakes:", done.stderr
    assert [line.split(": ")[1] for line in lines[1:]] == [key for key, _, _ in EXPECTED], done.stderr
