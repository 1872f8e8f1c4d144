"""One local Spark session for the whole run (local[2], 2 shuffle partitions, UI off),
and fixtures that stage batches directly with the real StagingSink (see support.py).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from tests.changelog.support import Stager


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    session = (SparkSession.builder.master("local[2]").appName("spanner-watcher-tests")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.default.parallelism", "2")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.session.timeZone", "UTC")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture
def stager(tmp_path) -> Stager:
    return Stager(tmp_path / "staging")


@pytest.fixture
def dirs(tmp_path) -> dict[str, str]:
    return {"staging": str(tmp_path / "staging"), "warehouse": str(tmp_path / "warehouse")}
