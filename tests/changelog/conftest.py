"""Fixtures that stage batches directly with the real StagingSink (see support.py); the engine each
changelog test runs on (``each_engine``) is the suite's (tests/conftest.py), as the CLI's tests use it too.
"""

from __future__ import annotations

import pytest

from tests.changelog.support import Stager


@pytest.fixture
def stager(tmp_path) -> Stager:
    return Stager(tmp_path / "staging")


@pytest.fixture
def dirs(tmp_path) -> dict[str, str]:
    return {"staging": str(tmp_path / "staging"), "warehouse": str(tmp_path / "warehouse")}
