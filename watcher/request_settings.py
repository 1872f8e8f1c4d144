"""What the watcher attaches to the requests it sends: priority, tags, Data Boost.

A DBA finds the watcher in Spanner's query and transaction statistics by its tags
(``SPANNER_SYS.QUERY_STATS_*`` carry ``REQUEST_TAG``, ``SPANNER_SYS.TXN_STATS_*`` carry
``TRANSACTION_TAG``). Every statement the watcher sends carries ``request_tag``; every
checkpoint write carries ``transaction_tag``. Polls and change-stream reads run at
``priority`` (None: Spanner's default, which is HIGH). ``data_boost`` asks for Data
Boost on the partitioned reads of backfill and reconcile (it applies to nothing else).
A watcher given no settings uses :data:`DEFAULT_SETTINGS`: the default tags, no priority.
The database role (fine-grained access control) belongs to the client's ``Database``
(``instance.database(id, database_role="watcher")``): every session it creates carries it.

Example:
    >>> s = RequestSettings(priority="low")
    >>> s.priority, s.request_tag, s.transaction_tag, s.data_boost
    ('LOW', 'spanner-watcher', 'spanner-watcher-checkpoint', False)
    >>> s.request_options()
    {'priority': 'PRIORITY_LOW', 'request_tag': 'spanner-watcher'}
    >>> s.commit_options()
    {'transaction_tag': 'spanner-watcher-checkpoint'}
    >>> RequestSettings(priority="urgent")
    Traceback (most recent call last):
    ...
    watcher.errors.ConfigurationError: Request priority 'urgent' is not one of LOW, MEDIUM, HIGH (or none, for Spanner's default).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .errors import ConfigurationError

#: The tags used when none is given: the names a DBA looks for in the statistics tables.
DEFAULT_REQUEST_TAG = "spanner-watcher"
DEFAULT_TRANSACTION_TAG = "spanner-watcher-checkpoint"
#: Spanner refuses longer tags.
MAX_TAG_LENGTH = 50
PRIORITIES = ("LOW", "MEDIUM", "HIGH")


@dataclass(frozen=True)
class RequestSettings:
    """Priority, tags and Data Boost for the requests the watcher sends.

    Args:
        priority: LOW, MEDIUM or HIGH (any case) for polls and change-stream reads; None for Spanner's default.
        request_tag: sent with every statement (query, read, DML) the watcher sends.
        transaction_tag: sent with every checkpoint write.
        data_boost: run backfill's and reconcile's partitioned reads on Data Boost.
    """

    priority: str | None = None
    request_tag: str = DEFAULT_REQUEST_TAG
    transaction_tag: str = DEFAULT_TRANSACTION_TAG
    data_boost: bool = False

    def __post_init__(self) -> None:
        if self.priority is not None:
            upper = str(self.priority).upper()
            if upper not in PRIORITIES:
                raise ConfigurationError(f"Request priority {self.priority!r} is not one of {', '.join(PRIORITIES)} "
                                         "(or none, for Spanner's default).")
            object.__setattr__(self, "priority", upper)
        for name in ("request_tag", "transaction_tag"):
            _check_tag(name, getattr(self, name))
        if not isinstance(self.data_boost, bool):
            raise ConfigurationError(f"data_boost must be true or false, not {self.data_boost!r}.")

    def request_options(self, *, with_priority: bool = True) -> dict[str, Any]:
        """The ``request_options`` argument for the client's execute_sql/read calls.

        The client takes the dict form (it builds its ``RequestOptions`` from it). Polls and
        change-stream reads carry the priority; other statements (schema discovery, checkpoint
        reads) pass ``with_priority=False`` and run at Spanner's default.

        >>> RequestSettings().request_options()
        {'request_tag': 'spanner-watcher'}
        >>> RequestSettings(priority="medium").request_options(with_priority=False)
        {'request_tag': 'spanner-watcher'}
        """
        options: dict[str, Any] = {}
        if with_priority and self.priority is not None:
            options["priority"] = f"PRIORITY_{self.priority}"
        if self.request_tag:
            options["request_tag"] = self.request_tag
        return options

    def commit_options(self) -> dict[str, Any]:
        """The ``request_options`` of a checkpoint write (``database.batch(request_options=...)``).

        >>> RequestSettings(transaction_tag="").commit_options()
        {}
        """
        return {"transaction_tag": self.transaction_tag} if self.transaction_tag else {}


def _check_tag(name: str, tag: str) -> None:
    """Refuse a tag Spanner would refuse, naming the option.

    >>> _check_tag("request_tag", "x" * 51)
    Traceback (most recent call last):
    ...
    watcher.errors.ConfigurationError: request_tag is 51 characters long; Spanner allows at most 50.
    """
    if not isinstance(tag, str):
        raise ConfigurationError(f"{name} must be a string, not {type(tag).__name__}.")
    if len(tag) > MAX_TAG_LENGTH:
        raise ConfigurationError(f"{name} is {len(tag)} characters long; Spanner allows at most {MAX_TAG_LENGTH}.")
    if any(not (32 <= ord(c) < 127) for c in tag):
        raise ConfigurationError(f"{name} {tag!r} has characters other than printable ASCII, which Spanner refuses.")


#: What a watcher, store or snapshot read given no settings sends: the default tags, no priority.
DEFAULT_SETTINGS = RequestSettings()


def settings_or_default(settings: RequestSettings | None) -> RequestSettings:
    """``settings``, or :data:`DEFAULT_SETTINGS` for None.

    >>> settings_or_default(None) is DEFAULT_SETTINGS
    True
    """
    return DEFAULT_SETTINGS if settings is None else settings
