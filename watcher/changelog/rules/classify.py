"""Classification: INSERT, UPDATE, DELETE, or UPSERT when the truth is not knowable.

Each new change is compared with the row before it for the same key (in the current
state, or an earlier change of the same run). The rules (:data:`RULES`), first match wins:

===================================  ========  ================================================
condition                            mod_type  why
===================================  ========  ================================================
input carries a mod_type             as given  history-table and reconcile input know it
older than the key's current state   UPSERT    a late change: its neighbours are not known
row is soft-deleted                  DELETE    the table's configured soft-delete column is set
previous row exists and is live      UPDATE
previous row exists and was deleted  INSERT    the key comes back
table complete before this commit    INSERT    a backfill/reconcile would have shown the key
otherwise                            UPSERT    first sighting: it may have existed unseen
===================================  ========  ================================================

A soft-delete column marks a row deleted when its value is set and not ``false`` (a BOOL
flag or a ``DeletedAt`` timestamp both work).

The rules are data: each one's condition is a conjunction of checks (:class:`Check`) over the per-key
window's columns, each an op of :data:`OPS`, which has a SQL and a Python rendering. The Spark
job's CASE expression (:func:`mod_type_sql`) and the Python rendering's function (:mod:`..engines.driver`)
(:func:`mod_type_function`) are both generated from :data:`RULES`, and so is the table above.

Example:
    >>> rules_table() in __doc__
    True
    >>> RULES[3].sql()
    '_prev_ts IS NOT NULL AND NOT _prev_deleted'
    >>> mod_type_function()(in_mod_type=None, _is_late=False, _soft_deleted=False, _prev_ts="2024-05-01",
    ...                     _prev_deleted=False, _complete_ts=None, commit_timestamp="2024-05-02")
    'UPDATE'
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass

MOD_TYPES = ("INSERT", "UPDATE", "DELETE", "UPSERT")
#: Values of an input mod_type the job accepts (history tables, reconcile).
INPUT_MOD_TYPES = ("INSERT", "UPDATE", "DELETE")

#: What a check may say of a column: (SQL, Python), each a template over ``{column}`` and ``{operand}``.
#: A check holds only where SQL's value is TRUE (a null is not): the Python renderings say so too.
OPS: dict[str, tuple[str, str]] = {
    "set": ("{column} IS NOT NULL", "{column} is not None"),
    "true": ("{column}", "{column} is True"),
    "false": ("NOT {column}", "{column} is False"),
    "after": ("{column} > {operand}", "({column} is not None and {operand} is not None and {column} > {operand})"),
}


@dataclass(frozen=True, slots=True)
class Check:
    """One check of a window column (``op`` of :data:`OPS`; ``operand``: the column ``after`` compares with)."""

    column: str
    op: str
    operand: str = ""

    def __post_init__(self) -> None:
        if self.op not in OPS:
            raise ValueError(f"classification check on column {self.column!r}: unknown op {self.op!r} "
                             f"(known: {', '.join(OPS)})")
        for name in (self.column, self.operand) if self.op == "after" else (self.column,):
            if not name.isidentifier():
                raise ValueError(f"classification check {self.op!r}: {name!r} is not a column name")

    def render(self, language: int) -> str:
        """The check in SQL (``language`` 0) or Python (1)."""
        return OPS[self.op][language].format(column=self.column, operand=self.operand)


@dataclass(frozen=True, slots=True)
class Rule:
    """Where every check of ``when`` holds (none: always), the mod_type is ``result``: one of
    :data:`MOD_TYPES`, or the name of a column holding it. ``condition`` and ``why`` are the docs'."""

    when: tuple[Check, ...]
    result: str
    condition: str
    why: str = ""

    def sql(self) -> str:
        """The condition in SQL."""
        return " AND ".join(check.render(0) for check in self.when) or "TRUE"

    def python(self) -> str:
        """The condition as a Python expression over the columns, as parameters."""
        return " and ".join(check.render(1) for check in self.when) or "True"

    def columns(self) -> tuple[str, ...]:
        """The columns the rule reads, in order."""
        names = [n for t in self.when for n in ((t.column, t.operand) if t.op == "after" else (t.column,))]
        return (*names, *(() if self.result in MOD_TYPES else (self.result,)))


#: The rules over the per-key window columns, first match wins.
RULES: tuple[Rule, ...] = (
    Rule((Check("in_mod_type", "set"),), "in_mod_type",
         "input carries a mod_type", "history-table and reconcile input know it"),
    Rule((Check("_is_late", "true"),), "UPSERT",
         "older than the key's current state", "a late change: its neighbours are not known"),
    Rule((Check("_soft_deleted", "true"),), "DELETE",
         "row is soft-deleted", "the table's configured soft-delete column is set"),
    Rule((Check("_prev_ts", "set"), Check("_prev_deleted", "false")), "UPDATE", "previous row exists and is live"),
    Rule((Check("_prev_ts", "set"), Check("_prev_deleted", "true")), "INSERT",
         "previous row exists and was deleted", "the key comes back"),
    Rule((Check("_complete_ts", "set"), Check("commit_timestamp", "after", "_complete_ts")), "INSERT",
         "table complete before this commit", "a backfill/reconcile would have shown the key"),
    Rule((), "UPSERT", "otherwise", "first sighting: it may have existed unseen"),
)


def _result(rule: Rule, language: int) -> str:
    if rule.result not in MOD_TYPES:
        return rule.result
    return sql_literal(rule.result) if language == 0 else repr(rule.result)


def mod_type_sql(rules: tuple[Rule, ...] = RULES) -> str:
    """The rules as one CASE expression (null where none matches).

    >>> mod_type_sql(RULES[-2:])
    "CASE WHEN _complete_ts IS NOT NULL AND commit_timestamp > _complete_ts THEN 'INSERT' WHEN TRUE THEN 'UPSERT' END"
    """
    return "CASE " + " ".join(f"WHEN {rule.sql()} THEN {_result(rule, 0)}" for rule in rules) + " END"


def rule_columns(rules: tuple[Rule, ...] = RULES) -> tuple[str, ...]:
    """The window columns the rules read, in order: the parameters of :func:`mod_type_function`.

    >>> rule_columns()
    ('in_mod_type', '_is_late', '_soft_deleted', '_prev_ts', '_prev_deleted', '_complete_ts', 'commit_timestamp')
    """
    return tuple(dict.fromkeys(name for rule in rules for name in rule.columns()))


def mod_type_python(rules: tuple[Rule, ...] = RULES) -> str:
    """The rules as the source of a Python function of :func:`rule_columns` (None where none matches).

    >>> print(mod_type_python(RULES[-2:]))
    def mod_type(_complete_ts, commit_timestamp):
        if _complete_ts is not None and (commit_timestamp is not None and _complete_ts is not None and commit_timestamp > _complete_ts):
            return 'INSERT'
        if True:
            return 'UPSERT'
        return None
    """
    lines = [f"def mod_type({', '.join(rule_columns(rules))}):"]
    for rule in rules:
        lines += [f"    if {rule.python()}:", f"        return {_result(rule, 1)}"]
    return "\n".join([*lines, "    return None"])


@functools.cache
def mod_type_function(rules: tuple[Rule, ...] = RULES) -> Callable[..., str | None]:
    """The rules as a Python function (:func:`mod_type_python`, compiled once), called with the
    columns of :func:`rule_columns` by name: the Python rendering's classification (:mod:`..engines.driver`)."""
    namespace: dict[str, object] = {}
    exec(compile(mod_type_python(rules), f"<{__name__} rules>", "exec"), namespace)  # noqa: S102 (our own rules)
    function = namespace["mod_type"]
    assert callable(function)
    return function


def rules_table(rules: tuple[Rule, ...] = RULES) -> str:
    """The rules as the reStructuredText table of the module's docstring."""
    rows = [("condition", "mod_type", "why"),
            *((rule.condition, rule.result if rule.result in MOD_TYPES else "as given", rule.why) for rule in rules)]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    rule_line = "  ".join("=" * w for w in widths)

    def line(row: tuple[str, str, str]) -> str:
        return "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()

    return "\n".join([rule_line, line(rows[0]), rule_line, *map(line, rows[1:]), rule_line])


def sql_literal(text: str) -> str:
    """A SQL string literal of ``text``."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def map_literal_sql(mapping: Mapping[str, str]) -> str:
    """A SQL map literal (string -> string); an empty, typed map when ``mapping`` is empty."""
    if not mapping:
        return "map_from_arrays(array_repeat('', 0), array_repeat('', 0))"
    return "map(" + ", ".join(f"{sql_literal(k)}, {sql_literal(v)}" for k, v in sorted(mapping.items())) + ")"


def _json_path(column: str) -> str:
    return "$['" + column + "']"


def soft_deleted_sql(soft_delete_columns: Mapping[str, str], row_json: str = "_json") -> str:
    """SQL: the row's soft-delete column (configured per table) is set and not false.

    ``row_json`` is the row's JSON object text; the column is read from it by a literal JSON
    path per table, so rows need not be parsed into maps.
    """
    if not soft_delete_columns:
        return "FALSE"
    cases = " ".join(f"WHEN {sql_literal(table)} THEN get_json_object({row_json}, {sql_literal(_json_path(column))})"
                     for table, column in sorted(soft_delete_columns.items()))
    value = f"(CASE table_name {cases} END)"
    return f"coalesce({value} IS NOT NULL AND lower({value}) <> 'false', FALSE)"


def row_deleted_sql(soft_delete_columns: Mapping[str, str]) -> str:
    """SQL: after this new row the key is deleted (state rows carry it as ``is_deleted``)."""
    return f"coalesce(in_mod_type = 'DELETE', FALSE) OR {soft_deleted_sql(soft_delete_columns)}"


def complete_ts_sql(markers: Mapping[str, str]) -> str:
    """SQL: the read timestamp from which the row's table is complete (null if not)."""
    return f"try_element_at({map_literal_sql(markers)}, table_name)"
