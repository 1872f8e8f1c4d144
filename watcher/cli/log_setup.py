"""The command line's logging: its options (accepted before or after the subcommand) and the one
place that configures Python's logging from them.

Options: ``-v`` (repeatable: INFO, then DEBUG), ``-q`` (errors only), ``--log-level LEVEL``
(wins over ``-v``/``-q``) and ``--log-format {text,json}``. ``json`` writes one JSON object per
line with ``time`` (RFC 3339, UTC), ``level``, ``logger``, ``message`` and, when a record carries
one, ``exception`` (the formatted traceback): the form log collectors of containers read.

Example:
    >>> import argparse
    >>> parser = argparse.ArgumentParser()
    >>> add_logging_options(parser)
    >>> level_of(parser.parse_args(["-v", "-v"])), level_of(parser.parse_args(["-q"]))
    ('DEBUG', 'ERROR')
    >>> level_of(parser.parse_args(["-v", "--log-level", "WARNING"]))
    'WARNING'
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import logging
import sys
from typing import Any, TextIO

__all__ = ["FORMATS", "LEVELS", "JsonFormatter", "add_logging_options", "add_logging_options_everywhere",
           "configure_logging", "level_of"]

#: The levels ``--log-level`` takes, most verbose first; ``-v`` and ``-q`` step through them from WARNING.
LEVELS: tuple[str, ...] = ("DEBUG", "INFO", "WARNING", "ERROR")
DEFAULT_LEVEL = "WARNING"
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

#: ``--log-format`` choices: a name and the formatter it builds.
FORMATS: dict[str, type[logging.Formatter] | None] = {}  # filled below, once JsonFormatter exists

#: The attribute that holds the after-the-subcommand counts, so ``-v`` before and ``-v`` after add up
#: (argparse gives a subcommand a fresh namespace that would otherwise replace the count).
_AFTER = "_after"


class JsonFormatter(logging.Formatter):
    """One JSON object per record, on one line.

    >>> record = logging.makeLogRecord({"name": "watcher", "levelname": "INFO", "msg": "a %s", "args": ("b",),
    ...                                 "created": 0.0})
    >>> JsonFormatter().format(record)
    '{"time": "1970-01-01T00:00:00.000Z", "level": "INFO", "logger": "watcher", "message": "a b"}'
    """

    def format(self, record: logging.LogRecord) -> str:
        when = dt.datetime.fromtimestamp(record.created, dt.UTC).isoformat(timespec="milliseconds")
        entry: dict[str, Any] = {"time": when.replace("+00:00", "Z"), "level": record.levelname,
                                 "logger": record.name, "message": record.getMessage()}
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            entry["exception"] = record.exc_text
        if record.stack_info:
            entry["stack"] = self.formatStack(record.stack_info)
        return json.dumps(entry, ensure_ascii=False)


FORMATS.update({"text": None, "json": JsonFormatter})


def add_logging_options(parser: argparse.ArgumentParser, *, after: bool = False) -> None:
    """Add the logging options to ``parser``; ``after`` for a subcommand's parser (no defaults of its own,
    so a value given before the subcommand stays unless the subcommand's own one replaces it)."""
    def shown(text: str) -> str:  # a subcommand's help names the options once instead of repeating them
        return argparse.SUPPRESS if after else text

    group = parser.add_argument_group(
        "logging" if after else "logging (before or after the subcommand)",
        "-v, -q, --log-level and --log-format work here too (see spanner-watcher --help)" if after else None)
    group.add_argument("-v", "--verbose", action="count", dest="verbose" + (_AFTER if after else ""),
                       default=argparse.SUPPRESS if after else 0,
                       help=shown("log more to stderr: -v progress (INFO), -vv details (DEBUG)"))
    group.add_argument("-q", action="store_true", dest="log_quiet", default=argparse.SUPPRESS if after else False,
                       help=shown("log errors only (ERROR)"))
    group.add_argument("--log-level", choices=LEVELS, type=str.upper,
                       default=argparse.SUPPRESS if after else None,
                       help=shown("the lowest level logged (wins over -v and -q); default WARNING"))
    group.add_argument("--log-format", choices=tuple(FORMATS), default=argparse.SUPPRESS if after else "text",
                       help=shown("text (default) or json: one JSON object per line with time, level, logger, "
                                  "message and exception, for log collectors"))


def add_logging_options_everywhere(parser: argparse.ArgumentParser) -> None:
    """Add the options after the subcommand to every (sub)subcommand parser below ``parser``."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):  # aliases share a parser
                add_logging_options(sub, after=True)
                add_logging_options_everywhere(sub)


def level_of(args: argparse.Namespace) -> str:
    """The level the parsed options ask for: ``--log-level`` if given, else WARNING moved by ``-v`` and ``-q``."""
    if getattr(args, "log_level", None):
        return str(args.log_level)
    steps = getattr(args, "verbose", 0) + getattr(args, "verbose" + _AFTER, 0)
    at = LEVELS.index(DEFAULT_LEVEL) - steps + (1 if getattr(args, "log_quiet", False) else 0)
    return LEVELS[max(0, min(at, len(LEVELS) - 1))]


class _Handler(logging.StreamHandler):  # type: ignore[type-arg]
    """The handler this module installs, so configuring again replaces it instead of adding a second."""


def configure_logging(args: argparse.Namespace, stream: TextIO | None = None) -> None:
    """Configure the root logger from the parsed options: one handler on ``stream`` (default stderr)."""
    root = logging.getLogger()
    for old in [h for h in root.handlers if isinstance(h, _Handler)]:
        root.removeHandler(old)
    handler = _Handler(stream if stream is not None else sys.stderr)
    formatter = FORMATS[getattr(args, "log_format", "text")]
    handler.setFormatter(formatter() if formatter else logging.Formatter(TEXT_FORMAT))
    root.addHandler(handler)
    root.setLevel(level_of(args))
