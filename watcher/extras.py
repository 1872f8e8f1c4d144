"""The package's extras: which import names each brings, and which commands need which.

``pip install spanner-watcher`` is the core: watchers, the staging sink, the embedded local
Spanner, migrations and DDL. The Spark changelog (and backfill, reconcile, exports, the demo),
the Kafka sink and the benchmark application come with extras (pyproject.toml lists their
packages). A command that needs one checks with :func:`require` before it starts, so a missing
extra is one line naming what to install (:class:`~watcher.errors.MissingExtraError`), not a
traceback from deep inside a job.

Example:
    >>> EXTRAS["spark"]
    ('pyspark', 'delta', 'deltalake', 'pandas')
    >>> COMMANDS["changelog"]
    'spark'
    >>> print(MissingExtraError("spark", "spanner-watcher changelog", "pyspark"))
    spanner-watcher changelog needs pyspark, which the core install leaves out: pip install 'spanner-watcher[spark]'
    >>> extra_of("matplotlib.pyplot"), extra_of("google.cloud.spanner")
    ('bench', None)
"""

from __future__ import annotations

import importlib.util

from .errors import MissingExtraError

#: Extra -> the top-level import names it brings (what a command needs of it; their dependencies follow).
EXTRAS: dict[str, tuple[str, ...]] = {
    "spark": ("pyspark", "delta", "deltalake", "pandas"),
    "kafka": ("confluent_kafka",),
    "bench": ("matplotlib", "numpy"),
}

#: Subcommand -> the extra it cannot run without (the demo chooses by its --sink: staging needs spark, kafka kafka).
COMMANDS: dict[str, str] = {
    "changelog": "spark",
    "backfill": "spark",
    "reconcile": "spark",
    "export": "spark",
    "bench": "bench",
}


def missing_module(extra: str) -> str | None:
    """The first import name of ``extra`` this interpreter cannot find, or None when all are there.

    Looks without importing (a Spark import takes seconds).

    >>> missing_module("spark") in (None, *EXTRAS["spark"])
    True
    """
    for name in EXTRAS[extra]:
        if importlib.util.find_spec(name) is None:
            return name
    return None


def require(extra: str, needed_by: str) -> None:
    """Raise :class:`~watcher.errors.MissingExtraError` unless every package of ``extra`` is installed.

    ``needed_by`` names what needs it, as the user knows it (``spanner-watcher changelog``).

    >>> require("kafka", "KafkaSink") if missing_module("kafka") is None else None
    """
    module = missing_module(extra)
    if module is not None:
        raise MissingExtraError(extra, needed_by, module)


def require_for_command(command: str, needed_by: str) -> None:
    """:func:`require` the extra that ``command`` (a subcommand's name) needs, if it needs one.

    >>> require_for_command("watch", "spanner-watcher watch")  # the core: nothing to check
    """
    extra = COMMANDS.get(command)
    if extra is not None:
        require(extra, needed_by)


def extra_of(module: str) -> str | None:
    """The extra that brings the (possibly dotted) module ``module``, or None for the core's and others'."""
    top = module.split(".")[0]
    return next((extra for extra, names in EXTRAS.items() if top in names), None)


def explain(exc: ModuleNotFoundError, needed_by: str) -> MissingExtraError | None:
    """The one-line error for an import of an extra's module that failed, or None if no extra brings it.

    >>> print(explain(ModuleNotFoundError("No module named 'pyspark'", name="pyspark"), "spanner-watcher export"))
    spanner-watcher export needs pyspark, which the core install leaves out: pip install 'spanner-watcher[spark]'
    """
    extra = extra_of(exc.name or "")
    return MissingExtraError(extra, needed_by, exc.name.split(".")[0]) if extra and exc.name else None
