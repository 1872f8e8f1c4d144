"""Every error an export shows its user, built here: one function each, the message naming what is at fault.

Example:
    >>> raise bad_timestamp("--since", "yesterday")
    Traceback (most recent call last):
    ...
    watcher.errors.ConfigurationError: --since yesterday: not an RFC 3339 timestamp (e.g. 2024-05-01T10:00:00.000000001Z)
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ...errors import ChangelogError, ConfigurationError


def bad_timestamp(option: str, text: Any) -> ConfigurationError:
    return ConfigurationError(f"{option} {text}: not an RFC 3339 timestamp (e.g. 2024-05-01T10:00:00.000000001Z)")


def bad_source_name(part: str, value: Any) -> ConfigurationError:
    return ConfigurationError(f"--source-{part}: a source {part} is a non-empty name, got {value!r}")


def bad_tables(tables: Any) -> ConfigurationError:
    return ConfigurationError(f"--table: table names are non-empty strings, got {tables!r}")


def no_changelog(warehouse: str) -> ChangelogError:
    return ChangelogError(f"no changelog in {warehouse} yet (no Delta table {warehouse.rstrip('/')}/changelog): "
                          "run `spanner-watcher changelog` first")


def unknown_tables(tables: Iterable[str], known: Iterable[str]) -> ConfigurationError:
    return ConfigurationError(f"--table {', '.join(sorted(tables))}: not in the changelog "
                              f"(tables: {', '.join(sorted(known)) or 'none'})")


def other_selection(target: str, recorded: str, given: str) -> ConfigurationError:
    return ConfigurationError(f"{target} holds an export of {recorded}, not of {given}: export the same selection "
                              "to it, or give another target")


def other_format(target: str, recorded: str, given: str) -> ConfigurationError:
    return ConfigurationError(f"{target} holds a {recorded} export, not {given}: give another --out")


def other_warehouse(target: str, recorded: str, found: str) -> ChangelogError:
    return ChangelogError(f"{target} was exported from the changelog table {recorded}, not from this warehouse's "
                          f"({found}): give another target for this warehouse (its run numbers start anew)")


def not_an_export_folder(out: str, names: Iterable[str]) -> ConfigurationError:
    shown = sorted(names)
    return ConfigurationError(f"--out {out} holds other files ({', '.join(shown[:3])}{', ...' if len(shown) > 3 else ''}) "
                              "and no export progress: name an empty or new folder, or one an export wrote")


def bad_state(where: str, problem: str) -> ChangelogError:
    return ChangelogError(f"export progress {where}: {problem}; remove the target's exports to start over")


def newer_state(where: str, version: Any, known: int) -> ChangelogError:
    return ChangelogError(f"export progress {where} has format version {version}; this spanner-watcher reads up to "
                          f"{known}: upgrade it")


def bad_option(name: str, value: Any, wanted: str) -> ConfigurationError:
    return ConfigurationError(f"{name} must be {wanted}, got {value!r}")


def bad_spanner_target(out: str) -> ConfigurationError:
    return ConfigurationError("a Spanner export target looks like projects/P/instances/I/databases/D[/tables/T], "
                              f"got {out!r}")


def table_lacks_columns(table: str, database: str, missing: Iterable[str], kind: str) -> ChangelogError:
    return ChangelogError(f"table {table} in {database} exists but lacks the {kind} columns {', '.join(missing)}; "
                          "drop it or choose another table name")
