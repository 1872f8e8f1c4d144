"""The help texts speak to users: no class or module names of the code, the logging options named once."""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator

import pytest

from watcher.cli.main import build_parser

#: Words that only a reader of the code understands: class names, module paths.
INSIDER = re.compile(r"\b\w+(ShardProvider|Watchers?)\b|\bwatcher\.\w+\.\w+|Java library")


def _helps(parser: argparse.ArgumentParser, name: str) -> Iterator[tuple[str, str]]:
    yield name, parser.format_help()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub_name, sub in action.choices.items():
                yield from _helps(sub, f"{name} {sub_name}")


HELPS = dict(_helps(build_parser(), "spanner-watcher"))


@pytest.mark.parametrize("name", sorted(HELPS))
def test_help_has_no_insider_words(name: str) -> None:
    text = " ".join(HELPS[name].split())
    assert not INSIDER.search(text), (name, INSIDER.search(text))


def test_every_subcommand_names_the_logging_options_without_repeating_them() -> None:
    top = HELPS["spanner-watcher"]
    assert "--log-format {text,json}" in top and "-v, --verbose" in top
    for name, text in HELPS.items():
        if name == "spanner-watcher":
            continue
        assert "-v, -q, --log-level and --log-format work here too" in text, name
        assert "--log-format {text,json}" not in text, name
