"""Is a row read at one timestamp a change the current state lacks? The rule backfill and reconcile share.

Backfill and reconcile read a whole table at a read timestamp R and compare each row with
its key's committed current state. Index pruning (:mod:`watcher.schema_tools.pruning`) takes
old rows out of the poll's index without changing their data: timestamp mode sets the
commit-timestamp column to NULL, processed mode sets the Processed flag (the shard column
then computes to NULL) and keeps the commit timestamp. Such rows must not be taken for
changes. A row without a commit timestamp is read as committed at R (:mod:`..snapshots.spanner_source`),
so its values decide. The rules, first match wins:

============================================  =========  ==============================================
row read at R, against its key's state        verdict    why
============================================  =========  ==============================================
the state lacks the key                       new        staged: the changelog never saw it
the state's commit timestamp is at or after   held       the state holds this version (processed-mode
the row's                                                pruning keeps the timestamp) or a later one
no commit timestamp, the state's row live     unchanged  pruned (or never stamped) and otherwise as
and equal but for :data:`PRUNING_COLUMNS`                recorded: nothing happened to it
otherwise                                     changed    staged: a write the watchers could not see
============================================  =========  ==============================================

Values are compared over the columns of the row read at R (a column the state's row lacks
counts as NULL, one the table dropped is not compared), as typed-JSON texts. A pruned row
written again without a commit timestamp (``UPDATE ... SET Name = ...`` leaving it NULL) differs
in a value and is ``changed``; once recorded, the state holds its values and the next read
finds it ``unchanged``. A row with a commit timestamp is known by it (the change identity of
the whole changelog): processed-mode rows stay ``held`` while their timestamp does not move.

Example:
    >>> [verdict for _, verdict in RULES]
    ['new', 'held', 'unchanged', 'changed']
    >>> STAGED
    ('new', 'changed')
    >>> same_values_sql("Ts")
    "forall(map_keys(_vals), c -> c IN ('Ts') OR try_element_at(_vals, c) <=> try_element_at(_state_vals, c))"
"""

from __future__ import annotations

from typing import Any

from . import records
from .classify import sql_literal
from .typed_json import keys_json_sql

#: Columns whose value pruning changes: the commit-timestamp column (``{commit_timestamp}``).
#: Processed mode's flag and shard column change with it, but it keeps the commit timestamp, so
#: those rows are ``held`` by the rule before values are compared.
PRUNING_COLUMNS = ("{commit_timestamp}",)

#: (condition, verdict) in SQL over a row read at R joined with its key's state, first match wins.
#: ``{stamped}`` and ``{same_values}`` are filled in by :func:`verdict_sql`.
RULES: tuple[tuple[str, str], ...] = (
    ("_state_ts IS NULL", "new"),
    ("_state_ts >= commit_timestamp", "held"),
    ("NOT {stamped} AND NOT _state_deleted AND {same_values}", "unchanged"),
    ("TRUE", "changed"),
)
#: The verdicts whose rows are staged.
STAGED = ("new", "changed")
#: The column a judged frame carries its verdict in.
VERDICT = "verdict"
#: What a row read at R has of its key's state while it is judged.
_STATE_COLUMNS = ("_state_ts", "_state_deleted", "_state_vals")
_MAP = "map<string, string>"
#: The staged record's field of its values, as Spark reads it (column -> typed-JSON text).
_VALUES_FIELDS = tuple(f for f in records.STAGING_FIELDS if f[0] == "values")


def pruning_columns(commit_timestamp_column: str) -> tuple[str, ...]:
    """The columns left out of the comparison for a table polled by ``commit_timestamp_column``.

    >>> pruning_columns("LastUpdated")
    ('LastUpdated',)
    """
    return tuple(c.format(commit_timestamp=commit_timestamp_column) for c in PRUNING_COLUMNS)


def same_values_sql(commit_timestamp_column: str) -> str:
    """SQL: the row read at R (``_vals``) equals its state's row (``_state_vals``) but for the pruning columns."""
    ignored = ", ".join(sql_literal(c) for c in pruning_columns(commit_timestamp_column))
    return (f"forall(map_keys(_vals), c -> c IN ({ignored}) OR "
            "try_element_at(_vals, c) <=> try_element_at(_state_vals, c))")


def verdict_sql(commit_timestamp_column: str) -> str:
    """The rules as one CASE expression for a table polled by ``commit_timestamp_column``.

    >>> verdict_sql("Ts").startswith("CASE WHEN _state_ts IS NULL THEN 'new' WHEN _state_ts >= commit_timestamp")
    True
    """
    stamped = f"(try_element_at(_vals, {sql_literal(commit_timestamp_column)}) IS NOT NULL)"
    parts = {"stamped": stamped, "same_values": same_values_sql(commit_timestamp_column)}
    return "CASE " + " ".join(f"WHEN {cond.format(**parts)} THEN {sql_literal(verdict)}"
                              for cond, verdict in RULES) + " END"


def snapshot_frame(lines: Any) -> Any:
    """Staging lines (batch_id, value) read at R as rows to judge: keys (the state's JSON form),
    commit_timestamp and the line (``value``)."""
    from pyspark.sql import functions as F

    staged = F.from_json("value", records.schema(records.STAGING_FIELDS))
    return (lines.select(staged.alias("r"), "value")
            .select(F.expr(keys_json_sql("r.key_columns", "from_json(r.keys, 'array<string>')", "r.types")).alias("keys"),
                    F.col("r.commit_timestamp").alias("commit_timestamp"), "value"))


def judge(snapshot: Any, state: Any, commit_timestamp_column: str) -> Any:
    """``snapshot`` (from :func:`snapshot_frame`) with each row's :data:`VERDICT` against ``state`` (one table's
    committed current state, deleted keys included)."""
    from pyspark.sql import functions as F

    held = state.select("keys", F.col("commit_timestamp").alias("_state_ts"), F.col("is_deleted").alias("_state_deleted"),
                        F.expr(f"from_json(new_values, '{_MAP}')").alias("_state_vals"))
    # The values are parsed from the line here, not kept beside it: reconcile holds the snapshot in memory.
    values = F.from_json("value", records.schema(_VALUES_FIELDS)).getField(_VALUES_FIELDS[0][0])
    return (snapshot.join(held, "keys", "left").withColumn("_vals", values)
            .withColumn(VERDICT, F.expr(verdict_sql(commit_timestamp_column)))
            .drop("_vals", *_STATE_COLUMNS))


def staged_sql() -> str:
    """SQL: the judged row is staged.

    >>> staged_sql()
    "verdict IN ('new', 'changed')"
    """
    return f"{VERDICT} IN ({', '.join(sql_literal(v) for v in STAGED)})"
