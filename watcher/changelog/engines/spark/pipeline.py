"""The changelog job's DataFrames: staged records -> per-key window -> changelog and state rows.

All of it is Spark SQL (no Python UDFs), so executors need no Python package and the
job scales like a plain Spark read and write. The steps, each from its own module:

1. ``normalize``: staged records become change rows with a JSON-object ``keys``;
2. ``per_key_window``: new rows and the current state of their tables, ordered by
   commit timestamp (and version sequence, for sources that log several versions at one
   timestamp) per key, give each new row its previous row: partial rows are filled in
   (partial_rows), duplicates are flagged
   (dedup), the mod_type is chosen (classify), old values computed (old_values), the
   deterministic ``change_id`` set, and the latest row of each key marked (``_is_final``);
3. ``changelog_rows`` / ``state_rows``: the outputs (grouping adds transaction groups).

Change-stream records (read_method ``change_stream``, :mod:`watcher.staging.contract`'s format 3)
take the same path, with what the stream knows kept: their ``mod_type`` as the stream says
(classify's first rule), old values as the stream gives them (null where its value capture
type carries none; never guessed from the previous row), every version (each has its own
commit timestamp), partial rows (NEW_VALUES, OLD_AND_NEW_VALUES) filled from the key's previous
row so that ``new_values`` and the current state are whole rows, and their transaction
(``_stream``: id, order, counts, tag) for the transaction groups (:mod:`...rules.grouping`).

**Both capture modes on one table.** A change's identity is (table, key, commit timestamp)
for polled rows and (server_transaction_id, record_sequence, mod index) for change-stream
rows; one mod is one row version, so the two name the same change and the change_id
(:mod:`...rules.dedup`) is computed from (table, key, commit timestamp) for both. When a poll and a
stream staged the same row version, the per-key order puts the stream's row first
(``_rank``), so the stream's row is the change (it knows the mod_type and the old values)
and the polled row is its duplicate. Across runs a version already written by an earlier
run stays as written, except that the stream's later row of a version an earlier run wrote
from a poll replaces that row (``_replaces`` marks the candidates; :mod:`...rules.supersede`).

A row travels as the JSON text it was staged with (``_json``, which becomes ``new_values``
unchanged) and its column types as JSON text (``_types_json``, stored as ``column_types``;
the views show maps): nothing is re-rendered, the shuffle of the per-key window stays
small, and maps are parsed only where an update's columns changed (old_values' exact path).

Example:
    >>> CHANGE_COLUMNS[:3]
    ('table_name', 'key_columns', 'keys')
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from watcher.staging.contract import CHANGE_STREAM, NEW_VALUES, OLD_VALUES_CAPTURE_TYPES, PARTIAL_CAPTURE_TYPES, STREAM_FORMAT

from ...rules import classify, dedup, grouping, partial_rows, placement, records, sql_steps
from ...rules.old_values import (
    SAME_COLUMNS_SQL,
    column_names_sql,
    entries_ok_sql,
    entries_sql,
    jvm_fast_sql,
    old_values_sql,
    trusted_names_sql,
)
from ...rules.typed_json import staged_keys_sql

#: Columns shared by new change rows and state rows before the window.
CHANGE_COLUMNS = ("table_name", "key_columns", "keys", "_json", "_types_json", "commit_timestamp",
                  "read_timestamp", "shard", "watcher_id", "read_method", "in_mod_type", "batch_id", "seq", "version_seq",
                  "_partial", "_rank", "_stream",
                  "batch", "v", "_bad",
                  "_soft_deleted", "_row_deleted", "state_change_id", "state_mod_type", "state_run_version", "_src")
_MAP = "map<string,string>"
#: What a change-stream record keeps for the changelog, as one (null for other rows) struct column.
STREAM_COLUMNS = ("value_capture_type", "old_values", "server_transaction_id", "record_sequence", "mod_index",
                  "number_of_records_in_transaction", "number_of_partitions_in_transaction", "transaction_tag",
                  "is_system_transaction", "stream_watermark")
_STREAM_TYPE = ("struct<value_capture_type:string, old_values:string, server_transaction_id:string, "
                "record_sequence:string, mod_index:bigint, number_of_records_in_transaction:bigint, "
                "number_of_partitions_in_transaction:bigint, transaction_tag:string, is_system_transaction:boolean, "
                "stream_watermark:string>")
_IS_STREAM = f"coalesce(v >= {STREAM_FORMAT}, FALSE)"


def _in(column: str, values: Iterable[str]) -> str:
    return f"{column} IN ({', '.join(classify.sql_literal(v) for v in values)})"


#: A new row holds only the key and the written columns: a history table's NEW_VALUES row, or a
#: change stream's INSERT or UPDATE of a partial capture type (its DELETE holds the key, and stays so).
PARTIAL_SQL = (f"coalesce(CASE WHEN {_IS_STREAM} THEN {_in('upper(value_capture_type)', PARTIAL_CAPTURE_TYPES)} "
               f"AND NOT coalesce(in_mod_type = 'DELETE', FALSE) "
               f"ELSE upper(value_capture_type) = '{NEW_VALUES}' END, FALSE)")
#: The old values of a change-stream row: the stream's, or null where its capture type carries none.
STREAM_OLD_VALUES_SQL = (f"CASE WHEN {_in('_stream.value_capture_type', OLD_VALUES_CAPTURE_TYPES)} "
                         f"THEN coalesce(_stream.old_values, '{{}}') END")


def normalize(staged: Any, soft_delete_columns: Mapping[str, str]) -> Any:
    """Staged records as new change rows (``_src = 1``).

    ``staged`` is :func:`...input.staging_reader.read_batches`' frame; its ``batch``, ``v`` and ``_bad``
    travel along, so that the batches can be checked on the window's output (:mod:`...run`).
    """
    plain = ("key_columns", "commit_timestamp", "read_timestamp", "shard", "watcher_id", "read_method", "batch_id",
             "seq", "batch", "v", "_bad", "version_seq", *STREAM_COLUMNS)
    rows = sql_steps.select(staged, {
        "table_name": "`table`", "keys": staged_keys_sql("key_columns", "keys", "types"), "_json": "`values`",
        "_types_json": "`types`", "in_mod_type": "upper(mod_type)", **{name: name for name in plain}})
    stream = ", ".join(f"{classify.sql_literal(name)}, {sql_steps.quote(name)}" for name in STREAM_COLUMNS)
    derived = {"_partial": PARTIAL_SQL, "_rank": f"CASE WHEN {_IS_STREAM} THEN 0 ELSE 1 END",
               "_stream": f"CAST(CASE WHEN {_IS_STREAM} THEN named_struct({stream}) END AS {_STREAM_TYPE})",
               "state_change_id": "CAST(NULL AS string)", "state_mod_type": "CAST(NULL AS string)",
               "state_run_version": "CAST(NULL AS int)", "_src": "1",
               "_soft_deleted": classify.soft_deleted_sql(soft_delete_columns),
               "_row_deleted": classify.row_deleted_sql(soft_delete_columns)}
    # One step for all: each would make Spark analyse the plan again; SQL text, as each Column
    # operation would be several calls into the JVM (sql_steps).
    return sql_steps.select(rows, {name: derived.get(name, name) for name in CHANGE_COLUMNS})


def state_as_changes(state: Any) -> Any:
    """Current-state rows in the CHANGE_COLUMNS layout (``_src = 0``)."""
    none = {name: f"CAST(NULL AS {kind})" for name, kind in
            (("read_timestamp", "string"), ("shard", "string"), ("watcher_id", "string"), ("read_method", "string"),
             ("in_mod_type", "string"), ("batch_id", "string"), ("seq", "bigint"), ("batch", "string"),
             ("v", "int"), ("_bad", "boolean"), ("_rank", "int"), ("_stream", _STREAM_TYPE))}
    renamed = {"_json": "new_values", "_types_json": "column_types", "_row_deleted": "is_deleted",
               "state_change_id": "change_id", "state_mod_type": "mod_type", "state_run_version": "run_version"}
    columns = {**none, **renamed,
               # A state row is whole: a later run's partial rows are filled from it (null would not count).
               "_soft_deleted": "FALSE", "_partial": "FALSE", "_src": "0"}
    return sql_steps.select(state, {name: columns.get(name, name) for name in CHANGE_COLUMNS})


def key_order(with_state: bool = True) -> tuple[str, ...]:
    """The order of a key's rows: by commit and version sequence, the state's row first, then a
    change stream's row before a polled one of the same version (``_rank``), then as staged.

    Without state rows ``_src`` is a constant, which Spark drops from a sort but not from a
    window's required order: it must not be named then, or Spark sorts twice.
    """
    if with_state:
        return ("commit_timestamp", "version_seq", "_src", "_rank", "batch_id", "seq")
    return ("commit_timestamp", "version_seq", "_rank", "batch_id", "seq")


#: The per-key window's partition: the placement column, then the key (see :func:`key_window_sql`).
KEY_PARTITION = f"{placement.COLUMN}, table_name, keys"
#: A window frame over all rows of a key.
WHOLE_KEY = "ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING"


def key_window_sql(with_state: bool = True, frame: str = "") -> str:
    """SQL: the per-key window (partitioned by table and key, in :func:`key_order`), with ``frame`` if given.

    The partition names :data:`...rules.placement.COLUMN` first, a function of the table and key: the
    rows are shuffled by it (:func:`per_key_window`), and Spark needs the window's partition to
    name what the rows are partitioned by.

    Every window column of the job uses this one partitioning and order (frames may differ), so
    that Spark evaluates them all in one Window operator over the one sort.

    >>> key_window_sql(False, WHOLE_KEY)
    'OVER (PARTITION BY _p, table_name, keys ORDER BY commit_timestamp, version_seq, _rank, batch_id, seq ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)'
    """
    order = ", ".join(key_order(with_state))
    return f"OVER (PARTITION BY {KEY_PARTITION} ORDER BY {order}{' ' + frame if frame else ''})"


#: Window helper columns that the outputs do not need (dropped before the rows are kept).
_SCRATCH = ("_soft_deleted", "_prev_ts", "_prev_version", "_state_version", "_max_pos", "_rank", "_prev_deleted", "_prev_json", "_prev_vals", "_vals", "_types", "_entries",
            "_entries_ok", "_prev_entries", "_prev_entries_ok", "_fast", "_fast_old", "_names", "_columns", "_prev_columns",
            "_state_ts", "_has_new", "_prev_src", "_prev_partial",
            "_complete_ts", "in_mod_type", "state_change_id", "state_mod_type")
#: The position of a key's newest version (the row of the key's state after the run).
_POSITION_SQL = "struct(commit_timestamp, coalesce(version_seq, -1))"


def per_key_window(changes: Any, state: Any | None, *, markers: Mapping[str, str],
                   prune: Iterable[str] = (), placement_sql: str = placement.SPREAD_SQL, fill_partial: bool = True,
                   old_values_function: str | None = None) -> Any:
    """New changes and the state before them, with each new row's previous row, mod_type and old values.

    ``state`` is None when the touched tables have no state yet (then no change can be late).
    It may hold several rows of a key: the newest is the key's state, and only one row of a
    commit timestamp counts as the final one.
    For the tables in ``prune`` only keys with new rows are kept, right after the shuffle (the
    job then writes only those keys' state). ``placement_sql`` is the INT the rows are
    shuffled by (:mod:`...rules.placement`; it must be the same for all rows of a key). The rows
    keep it as :data:`...rules.placement.COLUMN` (the transaction groups join back on it).

    ``old_values_function``: the name of the package's JVM old-values function in the session
    (:mod:`...spark.jvm`), which then takes updates' fast path instead of the entries columns (same
    values); None for the SQL path.

    ``fill_partial``: fill partial rows (:mod:`...rules.partial_rows`). Its window columns copy each
    key's latest whole row onto every row after it, a cost every row pays; a caller that knows
    no new row is partial may leave it out, which changes nothing else. The kept rows carry
    ``_partial``, so that a caller can tell (:func:`.tally.tally` counts them).

    Every step is SQL text (:mod:`...rules.sql_steps`): a Column operation costs several calls into the
    driver's JVM, and an incremental run builds this plan anew each time.
    """
    with_state = state is not None
    over, whole = key_window_sql(with_state), key_window_sql(with_state, WHOLE_KEY)
    rows = changes if state is None else changes.unionByName(state_as_changes(state))
    # Updates' old values compare a row with the previous one: each row is split into its entries
    # once (old_values), and all window functions share one spec, so that Spark evaluates them in
    # one Window operator over the sorted rows (each further operator would copy the wide rows).
    # Shuffled and sorted first, explicitly: else Spark would split the rows before the shuffle
    # and move the (as large) entries too.
    rows = sql_steps.with_columns(rows, {placement.COLUMN: f"CAST({placement_sql} AS INT)"})
    rows = (rows.repartition(placement.COLUMN)
            .sortWithinPartitions(placement.COLUMN, "table_name", "keys", *key_order(with_state)))
    if prune:  # before the costly columns: the state rows of keys without new rows go now
        rows = (sql_steps.with_columns(rows, {"_has_new": f"max(_src) {whole} = 1"})
                .where(f"_has_new OR NOT {sql_steps.in_list('table_name', prune)}"))
    entries = old_values_function is None  # the JVM function splits the two rows itself
    if entries:
        rows = sql_steps.with_columns(rows, {"_entries": entries_sql("_json")})
        rows = sql_steps.with_columns(rows, {"_entries_ok": entries_ok_sql("_entries", "_json"),
                                             "_columns": trusted_names_sql(column_names_sql("_entries"))})
    # Partial rows are filled in the same Window operator (partial_rows): the lags above see the
    # rows as staged, and a partial row's (or a partial previous row's) JSON, entries and names
    # are replaced right after, before anything reads them.
    lagged = [("_prev_ts", "commit_timestamp"), ("_prev_version", "version_seq"), ("_prev_deleted", "_row_deleted"),
              ("_prev_json", "_json"), ("_prev_src", "_src")]
    if entries:
        lagged += [("_prev_entries", "_entries"), ("_prev_entries_ok", "_entries_ok"), ("_prev_columns", "_columns")]
    lags = {prev: f"lag({name}) {over}" for prev, name in lagged}
    in_state = "CASE WHEN _src = 0 THEN {} END"
    rows = sql_steps.with_columns(rows, {
        **lags,
        "_state_ts": f"max({in_state.format('commit_timestamp')}) {whole}" if with_state else "CAST(NULL AS string)",
        "_state_version": f"max({in_state.format('version_seq')}) {whole}" if with_state else "CAST(NULL AS bigint)",
        "_max_pos": f"max({_POSITION_SQL}) {whole}",
        **(partial_rows.window_columns(over, key_window_sql(with_state, partial_rows.BEFORE), key_order(with_state))
           if fill_partial else {})})
    if fill_partial:
        rows = _fill_partial_rows(rows, entries)
    # Columns are added in dependency layers, several per step: each step makes Spark analyse the
    # whole plan again, which an incremental run would feel.
    rows = sql_steps.with_columns(rows, {
        "_is_dup": dedup.duplicate_sql("_prev_ts"),
        # A version older than the state's at the state's timestamp is late too.
        "_is_late": ("_src = 1 AND _state_ts IS NOT NULL AND (commit_timestamp < _state_ts "
                     "OR (commit_timestamp = _state_ts AND version_seq < _state_version))"),
        "_complete_ts": classify.complete_ts_sql(markers)})
    rows = sql_steps.with_columns(rows, {
        # A stream row repeating the key's state: it replaces the state's version if that was polled.
        "_replaces": "coalesce(_is_dup AND _stream IS NOT NULL AND _prev_src = 0, FALSE)",
        "mod_type": f"CASE WHEN _src = 0 THEN state_mod_type ELSE {classify.mod_type_sql()} END"})
    # Old values are computed for polled and history rows only: a change stream's are given.
    update = "_src = 1 AND _stream IS NULL AND mod_type = 'UPDATE' AND _prev_json IS NOT NULL"
    if old_values_function is None:
        rows = sql_steps.with_columns(rows, {"_fast": f"{update} AND coalesce({SAME_COLUMNS_SQL}, FALSE)"})
        slow, old_values = f"{update} AND NOT _fast", old_values_sql()
    else:  # the function's value is null exactly where the rows leave the fast path
        rows = sql_steps.with_columns(rows, {"_fast_old": f"CASE WHEN {update} THEN {jvm_fast_sql(old_values_function)} END"})
        slow, old_values = f"{update} AND _fast_old IS NULL", old_values_sql("_fast_old IS NOT NULL", "_fast_old")
    rows = sql_steps.with_columns(rows, {name: f"CASE WHEN {slow} THEN from_json({text}, '{_MAP}') END"
                                         for name, text in (("_prev_vals", "_prev_json"), ("_vals", "_json"),
                                                            ("_types", "_types_json"))})
    last = {
        "old_values": (f"CASE WHEN _src = 1 AND _stream IS NOT NULL THEN {STREAM_OLD_VALUES_SQL} "
                       f"WHEN _src = 1 THEN {old_values} END"),
        "change_id": f"CASE WHEN _src = 1 THEN {dedup.change_id_sql()} ELSE state_change_id END",
        # The key's latest row: the first of its newest version (a later row of the same version
        # repeats it: a duplicate, or the same state row in two layers).
        "_is_final": f"{_POSITION_SQL} = _max_pos AND NOT coalesce({dedup.same_version_sql()}, FALSE)",
        "commit_date": "substring(commit_timestamp, 1, 10)",
        # Computed once here and kept: the groups' numbering and the changelog write both read it.
        "_group": f"CASE WHEN _src = 1 THEN {grouping.transaction_group_sql('_stream.server_transaction_id')} END"}
    kept = [name for name in rows.columns if name not in _SCRATCH]
    return sql_steps.select(rows, {**{name: name for name in kept}, **last})


def _fill_partial_rows(rows: Any, entries: bool = True) -> Any:
    """The window's rows with partial rows (and partial previous rows) filled: their JSON, types
    and (with ``entries``) entries and column names (:func:`...rules.partial_rows.filled_sql`), before
    anything reads them."""
    filled, filled_types, prev_filled = partial_rows.filled_sql()
    kept = [name for name in rows.columns if name not in partial_rows.HELPERS[:-1]]
    rows = sql_steps.with_columns(rows, {"_json": filled, "_types_json": filled_types, "_prev_json": prev_filled},
                                  keep=kept)
    if not entries:
        return rows
    pairs = (("_partial", ""), ("_prev_partial", "_prev"))
    rows = sql_steps.with_columns(rows, {
        f"{prefix}_entries": f"CASE WHEN {flag} THEN {entries_sql(f'{prefix}_json')} ELSE {prefix}_entries END"
        for flag, prefix in pairs})
    return sql_steps.with_columns(rows, {
        f"{prefix}{name}": f"CASE WHEN {flag} THEN {sql} ELSE {prefix}{name} END"
        for flag, prefix in pairs
        for name, sql in (("_entries_ok", entries_ok_sql(f"{prefix}_entries", f"{prefix}_json")),
                          ("_columns", trusted_names_sql(column_names_sql(f"{prefix}_entries"))))})


def changelog_rows(window_rows: Any, run_version: int, where: str = "_src = 1 AND NOT _is_dup") -> Any:
    """The new, non-duplicate changes (or the window rows ``where`` says) as changelog rows, with
    their ``transaction_group`` (the numbering in the group is :func:`...rules.grouping.add_grouping`'s,
    from ``_stream_record_sequence`` and ``_mod_index``)."""
    plain = {name: name for name in (placement.COLUMN, "change_id", "table_name", "keys", "key_columns", "mod_type")}
    columns = {
        **plain, "new_values": "_json", "old_values": "old_values",
        "value_capture_type": f"coalesce(_stream.value_capture_type, '{records.VALUE_CAPTURE_TYPE}')",
        "column_types": "_types_json", "commit_timestamp": "commit_timestamp",
        "commit_ts": "cast(commit_timestamp AS timestamp)", "commit_date": "commit_date",
        "read_timestamp": "read_timestamp",
        "read_method": f"coalesce(read_method, CASE WHEN _stream IS NOT NULL THEN '{CHANGE_STREAM}' END, 'cdc')",
        "shard": "shard", "watcher_id": "watcher_id", "batch_id": "batch_id", "run_version": str(run_version),
        "version_seq": "version_seq", "_is_late": "_is_late",
        **{name: f"_stream.{name}" for name in records.STREAM_CHANGELOG_COLUMNS},
        "_stream_record_sequence": "_stream.record_sequence", "_mod_index": "_stream.mod_index",
        "transaction_group": "_group"}
    # SQL text in one step: few calls into the JVM (sql_steps).
    return sql_steps.select(window_rows.where(where), columns)


def state_rows(window_rows: Any, run_version: int, *, tables: Iterable[str],
               delta_tables: Iterable[str] = ()) -> Any:
    """The latest row per key of ``tables`` (STATE_FIELDS).

    For ``delta_tables`` only the keys whose latest row is new (what a MERGE into the state needs):
    a key whose state row stays latest is already in the state.
    """
    def among(names: Iterable[str]) -> str:
        return f"table_name IN ({', '.join(classify.sql_literal(t) for t in sorted(names)) or 'NULL'})"

    wanted = f"_is_final AND {among(tables)}"
    if delta_tables:
        wanted += f" AND (_src = 1 OR NOT {among(delta_tables)})"
    columns = {"table_name": "table_name", "keys": "keys", "key_columns": "key_columns", "column_types": "_types_json",
               "new_values": "_json", "commit_timestamp": "commit_timestamp",
               "commit_ts": "cast(commit_timestamp AS timestamp)", "is_deleted": "_row_deleted",
               "mod_type": "mod_type", "change_id": "change_id", "version_seq": "version_seq",
               "run_version": f"CASE WHEN _src = 1 THEN {run_version} ELSE state_run_version END"}
    return sql_steps.select(window_rows.where(wanted), {name: columns[name] for name in records.names(records.STATE_FIELDS)})
