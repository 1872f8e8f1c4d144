"""The Spark options of the Spark commands (changelog, backfill, reconcile, export): --master, --remote, --conf.

Example:
    >>> conf_pair("spark.executor.memory=2g")
    ('spark.executor.memory', '2g')
    >>> conf_pair("spark.master")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: expected KEY=VALUE, got 'spark.master'
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator
from typing import Any

from ...changelog.spark import cluster
from ..main import CommandError


def conf_pair(text: str) -> tuple[str, str]:
    """One ``--conf KEY=VALUE`` (the value may hold '=')."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key.strip(), value


def add_spark_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--master`` or ``--remote``, and the repeatable ``--conf KEY=VALUE``."""
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--master", default=None,
                       help="Spark master, e.g. spark://host:7077 (default: Spark's own configuration -- "
                            "spark-submit's --master, PYSPARK_SUBMIT_ARGS, spark-defaults.conf -- else local[*])")
    where.add_argument("--remote", default=None, metavar="sc://HOST:PORT",
                       help="run on a Spark Connect server instead of starting Spark here "
                            "(default: SPARK_REMOTE when set and no --master is given)")
    parser.add_argument("--conf", type=conf_pair, action="append", default=[], metavar="KEY=VALUE",
                        help="a Spark setting, as spark-submit's --conf (repeatable)")


def session(args: argparse.Namespace, app: str) -> Any:
    """The Spark session for a command's ``--master`` / ``--remote`` and ``--conf``."""
    from ...changelog.spark.session import get_session

    return get_session(args.master, app, dict(args.conf), remote=getattr(args, "remote", None))


@contextlib.contextmanager
def executor_failures() -> Iterator[None]:
    """Turn a Spark job that failed because an executor could not import a module into one line (exit 2).

    What executors lack is the user's to fix (install it there, or ship it); a Java stack trace
    would only hide that.
    """
    try:
        yield
    except CommandError:
        raise
    except Exception as exc:
        name = cluster.missing_module(exc)
        if name is None:
            raise
        raise CommandError(cluster.missing_module_message(name)) from None
