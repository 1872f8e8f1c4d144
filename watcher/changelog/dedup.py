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
:func:`watcher.changelog.pipeline.key_order`); a version an earlier run wrote stays as written.

Example:
    >>> "sha2" in CHANGE_ID_SQL
    True
"""

from __future__ import annotations

from typing import Any

#: Separator that cannot occur in a table name, a JSON text or a timestamp.
_SEP = "\\u001f"
# concat_ws skips nulls: a change without a version sequence keeps the id of format-1 input.
CHANGE_ID_SQL = (f"substring(sha2(concat_ws('{_SEP}', table_name, keys, commit_timestamp, "
                 f"cast(version_seq AS string)), 256), 1, 32)")


def change_id_sql() -> str:
    """SQL for the change_id of a row with table_name, keys (JSON object text), commit_timestamp and version_seq."""
    return CHANGE_ID_SQL


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
