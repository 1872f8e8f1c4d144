"""The request options of ``watch``, ``backfill`` and ``reconcile``: priority, tags, Data Boost.

They map onto :class:`watcher.request_settings.RequestSettings`; a flag wins over the
configuration's ``[watch]`` key, which wins over the default.

Example:
    >>> import argparse
    >>> p = argparse.ArgumentParser()
    >>> add_request_arguments(p, data_boost=True)
    >>> settings_from_args(p.parse_args(["--priority", "LOW", "--request-tag", "nightly", "--data-boost"]))
    RequestSettings(priority='LOW', request_tag='nightly', transaction_tag='spanner-watcher-checkpoint', data_boost=True)
"""

from __future__ import annotations

import argparse
from typing import Any

from ..request_settings import DEFAULT_REQUEST_TAG, DEFAULT_TRANSACTION_TAG, PRIORITIES, RequestSettings

#: The option of each RequestSettings field (for messages).
FLAGS = {"priority": "--priority", "request_tag": "--request-tag", "transaction_tag": "--transaction-tag",
         "data_boost": "--data-boost"}


def add_request_arguments(parser: argparse.ArgumentParser, *, data_boost: bool = False) -> None:
    """Add ``--priority``, ``--request-tag``, ``--transaction-tag`` (and ``--data-boost``)."""
    group = parser.add_argument_group("requests", "What the requests carry, to find them in Spanner's query and "
                                                  "transaction statistics and to keep them from crowding out the "
                                                  "application's.")
    group.add_argument("--priority", type=str.lower, choices=[p.lower() for p in PRIORITIES], default=None,
                       help="the priority of the reads (default: Spanner's, high)")
    group.add_argument("--request-tag", metavar="TAG", default=None,
                       help=f"the request tag of every statement (default {DEFAULT_REQUEST_TAG!r}; at most 50 "
                            "printable ASCII characters)")
    group.add_argument("--transaction-tag", metavar="TAG", default=None,
                       help=f"the transaction tag of every checkpoint write (default {DEFAULT_TRANSACTION_TAG!r})")
    if data_boost:
        group.add_argument("--data-boost", action="store_true", default=False,
                           help="run the partitioned reads on Data Boost (independent compute, billed apart; Cloud "
                                "Spanner only)")


def settings_from_args(args: argparse.Namespace, configured: RequestSettings | None = None) -> RequestSettings:
    """The RequestSettings of the flags over ``configured`` (a configuration's, else the defaults).

    Raises:
        CommandError: a tag Spanner would refuse, naming its flag.
    """
    from ..errors import ConfigurationError
    from .main import CommandError

    base = configured or RequestSettings()
    given: dict[str, Any] = {name: getattr(args, name, None) for name in FLAGS}
    try:
        return RequestSettings(priority=given["priority"] or base.priority,
                               request_tag=given["request_tag"] if given["request_tag"] is not None else base.request_tag,
                               transaction_tag=(given["transaction_tag"] if given["transaction_tag"] is not None
                                                else base.transaction_tag),
                               data_boost=bool(given["data_boost"]) or base.data_boost)
    except ConfigurationError as exc:
        flag = next((FLAGS[name] for name in FLAGS if str(exc).startswith(name)), "--request-tag")
        raise CommandError(f"{flag}: {exc}") from None
