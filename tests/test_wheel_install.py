"""The package as a user installs it: a built wheel (and an editable install) finds its migrations and example.

``ddl/`` is the only copy of the migration files in the tree, ``examples/watcher.toml`` of the
example configuration; setup.py copies both into the wheel. These tests build the project, install it into a fresh virtual environment and run
``spanner-watcher migrate`` and ``spanner-watcher ddl setup`` there, from a folder outside
the source tree, against the embedded local Spanner (the default without --project etc.).

The core install (no extras) is checked as a user gets it: an environment that holds the
wheel and exactly the distributions its requirements pull in watches into a staging folder,
imports every public name without Spark, pandas, matplotlib or Kafka's client, and the
commands that need an extra say which in one line; the same wheel with ``[spark]`` builds the
changelog from that staging folder.

Everything works offline: the wheel is built once with ``--no-build-isolation`` by this
interpreter's setuptools, the new environments get the project with ``--no-deps``; for the
migrations test a ``.pth`` file lends the environment this interpreter's site-packages (only
plain paths are read from it, so the editable install that may live there is not activated),
for the install tests :mod:`tests.install_closure` links in only the distributions an install
of the wheel (with the extras named) would bring.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.venvs import overlay_env

REPO = Path(__file__).resolve().parents[1]
#: What a build needs from the source tree (a copy, so the build leaves nothing in the checkout).
BUILD_INPUTS = ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "LICENSE", "watcher", "ddl", "examples")
TIMEOUT = 300
MIGRATIONS = ("V001__watcher_checkpoints.sql", "V002__watcher_change_sets.sql", "V003__watcher_changelog.sql",
              "V004__watcher_change_stream_partitions.sql")


def _copy_source(target: Path) -> Path:
    target.mkdir()
    for name in BUILD_INPUTS:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, target / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(source, target / name)
    return target


def _pip(*args: str, cwd: Path) -> None:
    """Run this interpreter's pip; a failure shows pip's own output."""
    done = subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input", *args],
                          capture_output=True, text=True, cwd=cwd, timeout=TIMEOUT)
    assert done.returncode == 0, f"pip {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}"


def _cli(python: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    script = python.with_name("spanner-watcher")
    env = {k: v for k, v in os.environ.items() if k not in {"SPANNER_EMULATOR_HOST", "PYTHONPATH", "PYTHONHOME"}}
    return subprocess.run([str(script), *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=TIMEOUT)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project's wheel, built once for this module's tests from a copy of the source tree."""
    _need_setuptools()
    tmp = tmp_path_factory.mktemp("wheel")
    source = _copy_source(tmp / "src")
    _pip("wheel", "--no-deps", "--no-build-isolation", "--no-index", "-w", str(tmp / "dist"), str(source), cwd=tmp)
    wheels = sorted((tmp / "dist").glob("spanner_watcher-*.whl"))
    assert len(wheels) == 1, wheels
    shutil.rmtree(source)  # the installed wheel must stand alone
    return wheels[0]


def _need_setuptools() -> None:
    if importlib.util.find_spec("setuptools.command.bdist_wheel") is None:
        pytest.fail("building the wheel offline needs setuptools>=77 here: pip install -e '.[test]'")


def _install(python: Path, *what: str, cwd: Path) -> None:
    _pip("--python", str(python), "install", "--no-deps", "--no-build-isolation", "--no-index", *what, cwd=cwd)


@pytest.fixture(params=["wheel", "editable"])
def installed(request, tmp_path: Path) -> tuple[Path, Path]:
    """(python of a fresh environment holding the project, a work folder outside every source tree)."""
    python = overlay_env(tmp_path / "env")
    if request.param == "wheel":
        _install(python, str(request.getfixturevalue("wheel")), cwd=tmp_path)
    else:
        _need_setuptools()
        _install(python, "-e", str(_copy_source(tmp_path / "src")), cwd=tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    return python, work


def test_the_installed_package_applies_its_migrations_and_prints_ddl(installed: tuple[Path, Path]):
    python, work = installed
    where = subprocess.run([str(python), "-c", "import watcher; print(watcher.__file__)"], capture_output=True, text=True,
                           cwd=work, env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, timeout=TIMEOUT)
    assert where.returncode == 0 and where.stdout.startswith(str(work.parent)), \
        f"watcher should come from the install under {work.parent}, not the checkout: {where.stdout}{where.stderr}"

    version = _cli(python, "--version", cwd=work)
    assert (version.returncode, version.stdout) == (0, f"spanner-watcher {importlib.metadata.version('spanner-watcher')}\n"), \
        version.stdout + version.stderr
    example = subprocess.run([str(python), "-c", "from watcher.cli.example_config import example_config_path; "
                              "print(example_config_path())"], capture_output=True, text=True, cwd=work,
                             env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, timeout=TIMEOUT)
    assert example.returncode == 0, example.stderr
    example_file = Path(example.stdout.strip())
    assert example_file.is_file() and example_file.read_text() == (REPO / "examples" / "watcher.toml").read_text()
    package = Path(where.stdout.strip()).parent
    if "site-packages" in package.parts:   # a wheel install carries its own copy, beside the CLI
        assert example_file == package / "cli" / "examples" / "watcher.toml"
        assert (package / "devtools" / "kafka" / "pom.xml").is_file()   # demo --sink kafka's broker
    help_text = _cli(python, "watch", "--help", cwd=work)
    unwrapped = "".join(help_text.stdout.split())   # argparse wraps the help, breaking a long path too
    assert help_text.returncode == 0 and f"anexample:{example_file})" in unwrapped, help_text.stdout

    migrate = _cli(python, "migrate", "--data-dir", str(work / "data"), cwd=work)
    assert migrate.returncode == 0, migrate.stdout + migrate.stderr
    for name in MIGRATIONS:
        assert f"watcher: applied {name}" in migrate.stdout, migrate.stdout
    assert f"done: {len(MIGRATIONS)} file(s) applied" in migrate.stdout

    again = _cli(python, "migrate", "--data-dir", str(work / "data"), cwd=work)
    assert again.returncode == 0 and "applied V00" not in again.stdout, again.stdout + again.stderr
    # The PostgreSQL default set ships beside it, under the same folder id.
    postgresql = subprocess.run([str(python), "-c", "from watcher.dialects import POSTGRESQL; "
                                 "from watcher.schema_tools.migration_files import default_migrations; "
                                 "s = default_migrations(POSTGRESQL); print(s.folder_id, *[f.filename for f in s.files])"],
                                capture_output=True, text=True, cwd=work,
                                env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, timeout=TIMEOUT)
    assert postgresql.returncode == 0 and postgresql.stdout.split() == ["watcher", *MIGRATIONS], \
        postgresql.stdout + postgresql.stderr

    setup = _cli(python, "ddl", "setup", "Singers", "--source", "FirstName", "--source", "LastName:STRING:not_null", cwd=work)
    assert setup.returncode == 0, setup.stdout + setup.stderr
    assert ("ALTER TABLE `Singers` ADD COLUMN `ShardId` INT64 AS (MOD(FARM_FINGERPRINT(COALESCE(`FirstName` || ' ', '') "
            "|| `LastName`), 19)) STORED;") in setup.stdout
    assert "CREATE NULL_FILTERED INDEX `Idx_Singers_ShardId_LastUpdated` ON `Singers` (`ShardId`, `LastUpdated`);" in setup.stdout


#: Packages the core install must not bring: the Spark side, the plots, Kafka's client (their extras do).
NOT_IN_CORE = {"pyspark": "spark", "delta": "spark", "deltalake": "spark", "pandas": "spark", "matplotlib": "bench",
               "numpy": "bench", "confluent_kafka": "kafka"}
#: Run in the core environment: every public name of the watcher package resolves without them (KafkaSink names
#: its extra), and none of them got imported on the way.
PUBLIC_NAMES = f"""
import importlib.util, sys, watcher
present = [m for m in {sorted(NOT_IN_CORE)!r} if importlib.util.find_spec(m) is not None]
assert not present, f"the core environment has {{present}}"
for name in watcher.__all__:
    if name == "KafkaSink":
        try:
            watcher.KafkaSink
        except ImportError as exc:
            assert "spanner-watcher[kafka]" in str(exc), exc
            continue
        raise AssertionError("KafkaSink imported without confluent-kafka")
    getattr(watcher, name)
import watcher.localspanner.server, watcher.staging.sink, watcher.cli.main, watcher.schema_tools.migrations
print(sorted({{m.split('.')[0] for m in sys.modules}} & {set(NOT_IN_CORE)!r}))
"""


def _env(**extra: str) -> dict[str, str]:
    """This process's environment without what points a child at this checkout or this interpreter's Spark."""
    drop = {"SPANNER_EMULATOR_HOST", "PYTHONPATH", "PYTHONHOME", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "SPARK_HOME"}
    return {**{k: v for k, v in os.environ.items() if k not in drop}, **extra}


def _one_line(result: subprocess.CompletedProcess, *words: str) -> str:
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode == 2 and len(lines) == 1, (result.returncode, result.stdout[-1000:], result.stderr[-3000:])
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


@pytest.fixture
def singers_with_rows(make_database):
    """A Singers table of the sample schema holding 20 rows."""
    from google.cloud import spanner

    from tests.conftest import SINGERS_DDL

    database = make_database(SINGERS_DDL)
    with database.batch() as batch:
        batch.insert("Singers", ("SingerId", "FirstName", "LastName", "LastUpdated"),
                     [(i, f"First{i}", f"Last{i}", spanner.COMMIT_TIMESTAMP) for i in range(20)])
    return database


def _watch_config(work: Path, name: str = "watch.toml", sinks: str = "", **settings: object) -> Path:
    from tests.cli_support import watch_config

    return watch_config(work / name, '''
        [tables]
        include = ["Singers"]
        [tables.Singers]
        shards = { kind = "fixed", column = "ShardId", values = "-18..18" }
    ''' + sinks, poll_interval=0.1, **settings)


def _watch(cli: str, config: Path, database, timeout: float = 60) -> tuple[list[str], dict[str, str]]:
    """The command line (argv, env) of watch until caught up with the test's database."""
    from tests.conftest import INSTANCE, PROJECT

    return ([cli, "watch", "--config", str(config), "--until-caught-up", "--duration", str(timeout), "--quiet",
             "--project", PROJECT, "--instance", INSTANCE, "--database", database.database_id],
            _env(SPANNER_EMULATOR_HOST=os.environ["SPANNER_EMULATOR_HOST"]))


def test_the_core_install_watches_into_staging_and_names_the_extras_it_lacks(wheel: Path, singers_with_rows,
                                                                             tmp_path: Path):
    """``pip install spanner-watcher`` (the wheel and exactly the distributions its requirements pull in) watches
    into staging, migrates and prints DDL with none of the extras' packages; the commands that need one name it
    in one line."""
    from packaging.requirements import Requirement

    from tests.cli_support import run_all
    from tests.install_closure import closure_env, wheel_requirements

    core_requires = {Requirement(r).name for r in wheel_requirements(wheel) if Requirement(r).marker is None}
    assert not core_requires & {"pyspark", "delta-spark", "deltalake", "pandas", "matplotlib", "numpy", "confluent-kafka"}
    core = closure_env(tmp_path / "core", wheel)
    _install(core, str(wheel), cwd=tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    config = _watch_config(work, staging_dir="staging")
    kafka = _watch_config(work, "kafka.toml", '''
        [[sinks]]
        type = "kafka"
        bootstrap_servers = "127.0.0.1:9"
    ''')
    cli = str(core.with_name("spanner-watcher"))
    r = run_all({
        "names": ([str(core), "-c", PUBLIC_NAMES], _env()),
        "version": ([cli, "--version"], _env()),
        "help": ([cli, "--help"], _env()),
        "watch": _watch(cli, config, singers_with_rows),
        "kafka": _watch(cli, kafka, singers_with_rows),
        "migrate": ([cli, "migrate", "--data-dir", str(work / "data")], _env()),   # the embedded server, in the core
        "ddl": ([cli, "ddl", "setup", "Singers", "--source", "LastName:STRING:not_null"], _env()),
        "changelog": ([cli, "changelog", "--staging", "staging", "--warehouse", "warehouse"], _env()),
        "demo": ([cli, "demo", "--seconds", "1"], _env()),
        "bench": ([cli, "bench", "--duration", "1"], _env()),
    }, cwd=work, timeout=TIMEOUT)
    assert r["names"].returncode == 0 and r["names"].stdout.strip() == "[]", r["names"].stdout + r["names"].stderr[-3000:]
    assert r["version"].returncode == 0 and r["version"].stdout.startswith("spanner-watcher "), r["version"].stderr
    assert r["help"].returncode == 0 and "changelog" in r["help"].stdout, r["help"].stderr
    assert r["watch"].returncode == 0, r["watch"].stdout[-2000:] + r["watch"].stderr[-3000:]
    assert "20 changes staged" in r["watch"].stdout, r["watch"].stdout
    assert len(list((work / "staging" / "table=Singers").glob("*.jsonl"))) >= 1
    assert r["migrate"].returncode == 0 and f"done: {len(MIGRATIONS)} file(s) applied" in r["migrate"].stdout, \
        r["migrate"].stdout + r["migrate"].stderr[-3000:]
    assert r["ddl"].returncode == 0 and "FARM_FINGERPRINT(`LastName`)" in r["ddl"].stdout, r["ddl"].stdout + r["ddl"].stderr
    _one_line(r["kafka"], "kafka.toml", "pip install 'spanner-watcher[kafka]'")
    for name, extra in (("changelog", "spark"), ("demo", "spark"), ("bench", "bench")):
        _one_line(r[name], f"spanner-watcher {name} needs", f"pip install 'spanner-watcher[{extra}]'")
    assert not (work / "warehouse").exists() and not (work / "spanner-watcher-demo").exists()


def test_the_spark_extra_builds_the_changelog(wheel: Path, singers_with_rows, tmp_path: Path):
    """``pip install 'spanner-watcher[spark]'``: the same wheel with the Spark side's distributions (and only
    those beyond the core) stages with watch and builds the changelog's Delta tables from it."""
    from tests.install_closure import closure_env

    if shutil.which("java") is None:
        pytest.skip("Spark needs Java 17 or newer (./run.sh setup installs it)")
    python = closure_env(tmp_path / "spark", wheel, extras=["spark"])
    _install(python, str(wheel), cwd=tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    cli = str(python.with_name("spanner-watcher"))
    argv, env = _watch(cli, _watch_config(work, staging_dir="staging"), singers_with_rows)
    watched = subprocess.run(argv, capture_output=True, text=True, cwd=work, env=env, timeout=TIMEOUT)
    assert watched.returncode == 0 and "20 changes staged" in watched.stdout, watched.stdout + watched.stderr[-3000:]
    imported = subprocess.run([str(python), "-c", "import pyspark, delta, deltalake, pandas, watcher.changelog.job"],
                              capture_output=True, text=True, cwd=work, env=_env(), timeout=TIMEOUT)
    assert imported.returncode == 0, imported.stderr[-3000:]
    # A relative --warehouse, as a user types it; Spark does the run (its MERGE names the tables by path in SQL).
    built = subprocess.run([cli, "changelog", "--staging", "staging", "--warehouse", "warehouse", "--spark-only"],
                           capture_output=True, text=True, cwd=work, env=_env(), timeout=TIMEOUT)
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-3000:]
    assert "20 changes" in built.stdout and "watermark Singers" in built.stdout, built.stdout
    read = subprocess.run([str(python), "-c", READ_WAREHOUSE], capture_output=True, text=True, cwd=work, env=_env(),
                          timeout=TIMEOUT)
    assert read.returncode == 0, read.stderr[-3000:]
    # A key first seen before the table's state is complete is an UPSERT (the changelog's semantics).
    assert json.loads(read.stdout) == {"changelog": [["Singers", i, "UPSERT"] for i in range(20)],
                                       "current_state": [["Singers", i] for i in range(20)]}, read.stdout


#: Run in the [spark] environment after the changelog run: the warehouse's rows as delta-rs reads them,
#: [table, SingerId, mod_type] of the changelog and [table, SingerId] of current_state, by key.
READ_WAREHOUSE = """
import json
from deltalake import DeltaTable
from watcher.changelog.tables.readers import arrow_table  # delta-rs' own reader can abort at exit (an Arrow thread)
def rows(name, *columns):
    found = arrow_table(DeltaTable(f"warehouse/{name}"), columns=["table_name", "keys", *columns]).to_pylist()
    return sorted([r["table_name"], int(json.loads(r["keys"])["SingerId"]), *(r[c] for c in columns)] for r in found)
print(json.dumps({"changelog": rows("changelog", "mod_type"), "current_state": rows("current_state")}))
"""
