"""De-duplication: a deterministic change_id, and the tests that find a change seen twice.

A change is identified by (table, primary key, exact commit timestamp), and, where a source
logs several versions of a key at one commit timestamp (history tables), by the version's
sequence too (``version_seq``; null elsewhere, which leaves the id as it was); a batch staged
twice (a crash between staging and the watcher's checkpoint) or a row polled by two
loops yields the same change_id, and the job keeps it once. Within a run, duplicates
are found in the per-key window (same key and commit timestamp as the row before it);
against earlier runs, the current state catches re-deliveries of a key's latest change,
and late changes (older than the state) are checked against the changelog partitions
they belong to.

Change streams name a change by (server_transaction_id, record_sequence, mod index). One mod is
one row version (a transaction writes a key once; transactions sharing a commit timestamp
never share a key), so that identity and (table, key, commit timestamp) name the same change,
and the change_id is computed from the latter for every capture mode: a stream record staged
twice is removed like a polled one, and a table watched by polling and a change stream at once
yields each version once. Within a run, of a polled and a streamed row of one version the
stream's is kept (it knows the mod_type and the old values: the per-key order puts it first,
:func:`watcher.changelog.engines.spark.pipeline.key_order`). A version an earlier run wrote stays as written,
except that a stream's row of a version an earlier run wrote from a poll replaces the polled
row (:mod:`watcher.changelog.rules.supersede`).

The id's hashed text is data (:data:`CHANGE_ID`, a :class:`.hashed_text.HashedText`), rendered to
the job's SQL (:data:`CHANGE_ID_SQL`) and to the Python of :mod:`..engines.driver` and the Kafka sink
(:func:`change_id`).

Example:
    >>> CHANGE_ID_SQL == CHANGE_ID.sql()
    True
    >>> change_id("T", '{"Id":"1"}', "2024-05-01T00:00:00.000000000Z")
    'e8c5cc5645b7096cb0304acff4f71b0f'
"""

from __future__ import annotations

from typing import Any

from .hashed_text import HashedText

#: The change_id: (table, key as JSON object text, commit timestamp, version sequence), by a
#: separator that cannot occur in a table name, a JSON text or a timestamp. Without a version
#: sequence (null but for history tables) the id is that of format-1 input.
CHANGE_ID = HashedText(("table_name", "keys", "commit_timestamp", "version_seq"), "\x1f", 32,
                       frozenset({"version_seq"}))
CHANGE_ID_SQL = CHANGE_ID.sql()


def change_id_sql() -> str:
    """SQL for the change_id of a row with table_name, keys (JSON object text), commit_timestamp and version_seq."""
    return CHANGE_ID_SQL


def change_id(table: str, keys: str, commit_timestamp: str, version_seq: int | None = None) -> str:
    """The change_id of a row (:data:`CHANGE_ID`), as the job's SQL computes it (``version_seq``: a
    history table's, None elsewhere)."""
    ident = CHANGE_ID.python((table, keys, commit_timestamp, version_seq))
    assert ident is not None  # of several parts never null: a null one is left out
    return ident


def same_version_sql(previous_commit: str = "_prev_ts", previous_version: str = "_prev_version") -> str:
    """SQL: the key's previous row (in commit order) is the same version: same commit timestamp and sequence.

    >>> same_version_sql()
    '(_prev_ts IS NOT NULL AND _prev_ts = commit_timestamp AND _prev_version <=> version_seq)'
    """
    return (f"({previous_commit} IS NOT NULL AND {previous_commit} = commit_timestamp "
            f"AND {previous_version} <=> version_seq)")


def duplicate_sql(previous_commit: str = "_prev_ts", previous_version: str = "_prev_version") -> str:
    """SQL: a new row whose key's previous row (in commit order) is the same version of the key."""
    return f"(_src = 1 AND {same_version_sql(previous_commit, previous_version)})"


def drop_known(changes: Any, known_ids: Any) -> Any:
    """``changes`` without the change_ids in ``known_ids`` (a DataFrame with a change_id column)."""
    return changes.join(known_ids.select("change_id").distinct(), "change_id", "left_anti")
