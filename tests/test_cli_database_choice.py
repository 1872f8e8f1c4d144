"""Which database a command talks to: nothing named is an error, ``--embedded`` asks for the embedded
server, the environment names a database, and the connection and request options are checked.

Commands run as a user runs them (subprocesses, side by side) where the process environment
matters; option checks that fail before any connection run in this process. The Spanner side is
read back through the official client only.
"""

from __future__ import annotations

import os
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import INSTANCE, PROJECT, SINGERS_DDL, emulator_lacks
from tests.test_cli_commands import CLI, REPO, TIMEOUT, _env, _one_line_error, _run_all, _tables
from watcher.cli.database_choice import DatabaseChoice, NoDatabaseError, choose
from watcher.cli.main import main
from watcher.errors import ConfigurationError

#: The six commands that write to or read from a database on a schedule.
NEEDS_A_DATABASE = {
    "watch": ["watch", "--config", "{config}"],
    "migrate": ["migrate"],
    "backfill": ["backfill", "--table", "Singers", "--staging", "{tmp}/s", "--warehouse", "{tmp}/w"],
    "reconcile": ["reconcile", "--table", "Singers", "--staging", "{tmp}/s", "--warehouse", "{tmp}/w"],
    "export": ["export", "--warehouse", "{tmp}/wh", "--format", "spanner"],
    "ddl_prune": ["ddl", "prune", "Singers", "--execute"],
}
NO_DATABASE_WORDS = ("no database named", "--project", "--instance", "--database", "SPANNER_PROJECT",
                     "SPANNER_INSTANCE", "SPANNER_DATABASE", "SPANNER_EMULATOR_HOST", "--embedded")
ENV_NAMES = ("SPANNER_PROJECT", "SPANNER_INSTANCE", "SPANNER_DATABASE")


def _clean_env(emulator: str | None = None, **names: str) -> dict[str, str]:
    """The test environment without any database named in it (plus ``names``)."""
    env = {k: v for k, v in _env(emulator).items() if k not in ENV_NAMES}
    env.update(names)
    return env


def _argv(command: str, tmp: Path, config: Path) -> list[str]:
    return [part.format(tmp=tmp, config=config) for part in NEEDS_A_DATABASE[command]]


# --- the rule, as a pure function ----------------------------------------------------------------------

def test_each_name_comes_from_the_flag_else_the_toml_else_the_environment() -> None:
    toml = type("Toml", (), {"project": "toml-p", "instance": "toml-i", "database": None})()
    env = {"SPANNER_PROJECT": "env-p", "SPANNER_INSTANCE": "env-i", "SPANNER_DATABASE": "env-d"}
    chosen = choose({"project": "flag-p"}, toml, env)
    assert (chosen.kind, chosen.project, chosen.instance, chosen.database) == ("spanner", "flag-p", "toml-i", "env-d")
    assert choose({}, None, env) == DatabaseChoice("spanner", "env-p", "env-i", "env-d")


def test_nothing_named_is_an_error_unless_embedded_is_asked_for_or_the_default() -> None:
    with pytest.raises(NoDatabaseError, match="--embedded"):
        choose({}, None, {})
    assert choose({"embedded": True}, None, {}).kind == "embedded"
    assert choose({}, None, {}, embedded_by_default=True).kind == "embedded"
    assert choose({"data_dir": "/tmp/d"}, None, {}).kind == "embedded"  # a data folder is the embedded server's
    assert choose({}, type("T", (), {"embedded": True})(), {}).kind == "embedded"
    emulator = choose({}, None, {"SPANNER_EMULATOR_HOST": "localhost:9010"})
    assert (emulator.kind, emulator.database) == ("emulator", "watcher")


@pytest.mark.parametrize(("flags", "env", "words"), [
    ({"project": "p"}, {}, ("--instance, --database missing", "SPANNER_INSTANCE, SPANNER_DATABASE")),
    ({"embedded": True}, {"SPANNER_EMULATOR_HOST": "h:1"}, ("--embedded", "SPANNER_EMULATOR_HOST=h:1")),
    ({"credentials_file": "k.json"}, {"SPANNER_EMULATOR_HOST": "h:1"}, ("--credentials", "not the emulator")),
    ({"api_endpoint": "x:443", "embedded": True}, {}, ("--endpoint", "embedded local Spanner")),
])
def test_choices_that_cannot_work_name_the_options(flags: dict[str, Any], env: dict[str, str],
                                                   words: tuple[str, ...]) -> None:
    with pytest.raises(ConfigurationError) as info:
        choose(flags, None, env)
    for word in words:
        assert word in str(info.value)


# --- the commands --------------------------------------------------------------------------------------

def test_the_six_commands_stop_when_no_database_is_named_and_run_with_embedded(tmp_path: Path) -> None:
    config = tmp_path / "watcher.toml"
    config.write_text('[watch]\nstaging_dir = "staging"\n')
    (tmp_path / "wh").mkdir()
    data = tmp_path / "data"
    # An embedded database kept in a folder, so that export has a target that exists.
    assert subprocess.run([*CLI, "migrate", "--embedded", "--data-dir", str(data)], env=_clean_env(), cwd=REPO,
                          capture_output=True, text=True, timeout=TIMEOUT).returncode == 0
    embedded = {
        "watch": ["--embedded"], "migrate": ["--embedded"], "backfill": ["--embedded"], "reconcile": ["--embedded"],
        "export": ["--embedded", "--data-dir", str(data)], "ddl_prune": ["--embedded"],
    }
    r = _run_all({
        **{f"none {c}": (_argv(c, tmp_path, config), _clean_env()) for c in NEEDS_A_DATABASE},
        **{f"embedded {c}": ([*_argv(c, tmp_path, config), *embedded[c]], _clean_env()) for c in NEEDS_A_DATABASE},
    })
    for command in NEEDS_A_DATABASE:
        line = _one_line_error(r[f"none {command}"], *NO_DATABASE_WORDS)
        assert line.startswith(f"spanner-watcher {command.split('_')[0]}: error: "), line
    # With --embedded each one gets to the database and goes on to what it finds there.
    assert "on the embedded local Spanner" in r["embedded migrate"].stdout and r["embedded migrate"].returncode == 0
    _one_line_error(r["embedded watch"], "no table to watch", "allow_commit_timestamp")
    for command in ("backfill", "reconcile"):
        _one_line_error(r[f"embedded {command}"], "--table Singers", "not found")
    _one_line_error(r["embedded ddl_prune"], "--checkpoint-table", "embedded local Spanner")
    # export reaches its target, then finds no changelog in the (empty) warehouse after Spark started
    assert r["embedded export"].returncode == 2, r["embedded export"].stderr[-2000:]
    assert "no changelog in" in r["embedded export"].stderr.strip().splitlines()[-1]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data", "watcher.toml", "wh"]  # nothing staged or written


def test_the_environment_names_the_database_on_the_emulator(make_database, instance, tmp_path: Path) -> None:
    from google.cloud import spanner

    database = make_database(SINGERS_DDL)
    with database.batch() as batch:
        batch.insert("Singers", ("SingerId", "FirstName", "LastName", "LastUpdated"),
                     [(i, f"F{i}", f"L{i}", spanner.COMMIT_TIMESTAMP) for i in range(5)])
    other = make_database(SINGERS_DDL)  # named by the flag, which wins over the environment
    host = os.environ["SPANNER_EMULATOR_HOST"]
    env = _clean_env(host, SPANNER_PROJECT=PROJECT, SPANNER_INSTANCE=INSTANCE, SPANNER_DATABASE=database.database_id)
    config = tmp_path / "watcher.toml"
    config.write_text(textwrap.dedent("""
        [watch]
        poll_interval = 0.1
        initial_timestamp = "beginning"
        staging_dir = "staging"
        [tables]
        include = ["Singers"]
    """))
    r = _run_all({
        "migrate": (["migrate"], env),
        "watch": (["watch", "--config", str(config), "--until-caught-up", "--duration", "60", "--quiet"], env),
        "flag wins": (["migrate", "--database", other.database_id], env),
    })
    for name in r:
        assert r[name].returncode == 0, (name, r[name].stdout[-1000:], r[name].stderr[-2000:])
    assert f"databases/{database.database_id} on the emulator" in r["migrate"].stdout
    assert "SPANNER_WATCHER_MIGRATIONS" in _tables(database)
    assert "5 changes staged" in r["watch"].stdout and f"databases/{database.database_id}" in r["watch"].stdout
    assert f"databases/{other.database_id} on the emulator" in r["flag wins"].stdout
    assert "SPANNER_WATCHER_MIGRATIONS" in _tables(other)


# --- connection and request options ----------------------------------------------------------------------

@pytest.mark.parametrize(("argv", "words"), [
    (["watch", "--config", "w.toml", "--priority", "urgent"], ("--priority", "urgent", "low")),
    (["migrate", "--endpoint", "https://spanner.googleapis.com", "--project", "p", "--instance", "i", "--database", "d"],
     ("--endpoint", "HOST[:PORT]")),
    (["migrate", "--credentials", "/no/such/key.json", "--project", "p", "--instance", "i", "--database", "d"],
     ("--credentials", "/no/such/key.json", "no such file")),
    (["migrate", "--database-role", "bad-role", "--embedded"], ("--database-role", "bad-role")),
    (["watch", "--config", "{config}", "--embedded", "--request-tag", "x" * 51], ("--request-tag", "at most 50")),
    (["watch", "--config", "{config}", "--embedded", "--max-lag", "10"], ("--max-lag needs --metrics-port",)),
])
def test_bad_connection_and_request_options_exit_2_naming_the_option(argv: list[str], words: tuple[str, ...],
                                                                      tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.delenv("SPANNER_EMULATOR_HOST", raising=False)  # Cloud Spanner's settings, checked before connecting
    config = tmp_path / "w.toml"
    config.write_text("[watch]\n")
    try:
        status = main([part.format(config=config) for part in argv])
    except SystemExit as exc:  # argparse's own refusals (a --priority not among the choices)
        status = exc.code
    assert status == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1, err
    for word in words:
        assert word in err[0], (word, err[0])


def test_a_key_file_that_is_not_one_is_named_with_its_path(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.delenv("SPANNER_EMULATOR_HOST", raising=False)
    key = tmp_path / "key.json"
    key.write_text('{"type": "service_account"}')
    assert main(["migrate", "--credentials", str(key), "--project", "p", "--instance", "i", "--database", "d"]) == 2
    err = capsys.readouterr().err.strip()
    assert f"--credentials: {key}: not a Google credentials file" in err and "\n" not in err


def test_the_toml_names_its_connection_keys_and_help_lists_every_option(tmp_path: Path, capsys) -> None:
    from watcher.cli.config import ConfigError, parse_config

    cfg = parse_config(textwrap.dedent("""
        [database]
        project = "p"
        instance = "i"
        database = "d"
        credentials = "keys/watcher.json"
        endpoint = "eu-spanner.googleapis.com:443"
        database_role = "watcher"
        [watch]
        priority = "medium"
        request_tag = "orders-cdc"
        transaction_tag = "orders-checkpoint"
        max_lag = 120
    """), "w.toml", base_dir=tmp_path)
    assert cfg.database.credentials == tmp_path / "keys" / "watcher.json"
    assert (cfg.database.endpoint, cfg.database.database_role) == ("eu-spanner.googleapis.com:443", "watcher")
    assert (cfg.requests.priority, cfg.requests.request_tag, cfg.requests.transaction_tag, cfg.max_lag) == \
        ("MEDIUM", "orders-cdc", "orders-checkpoint", 120.0)
    for text, key in (('[database]\nendpoint = "http://x"', "database.endpoint"),
                      ('[database]\nembedded = "yes"', "database.embedded"),
                      ('[watch]\nmax_lag = 0', "watch.max_lag"),
                      ('[watch]\ntransaction_tag = "\u00e9t\u00e9"', "watch.transaction_tag")):
        with pytest.raises(ConfigError, match=f"w.toml: {key.replace('.', '[.]')}: "):
            parse_config(text, "w.toml")
    for command, options in (("watch", ("--embedded", "--credentials FILE", "--endpoint HOST[:PORT]",
                                        "--database-role ROLE", "--priority", "--request-tag TAG",
                                        "--transaction-tag TAG", "--max-lag SECONDS", "--until-caught-up",
                                        "SPANNER_PROJECT")),
                             ("backfill", ("--data-boost", "--priority", "--credentials FILE", "--embedded"))):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        usage = " ".join(capsys.readouterr().out.split())
        for option in options:
            assert option in usage, (command, option)


@emulator_lacks("the local request log (SPANNER_SYS.LOCAL_REQUEST_LOG)")
def test_watch_sends_its_request_tag_and_priority_with_its_database_role(make_database, tmp_path: Path) -> None:
    import uuid

    from google.cloud import spanner

    from watcher.checkpoints.java_table import DEFAULT_TABLE, create_table_ddl

    # The role reads Singers and keeps its checkpoints in a table made for it beforehand.
    database = make_database([*SINGERS_DDL, create_table_ddl(), "CREATE ROLE cdc_reader",
                              "GRANT SELECT ON TABLE Singers TO ROLE cdc_reader",
                              f"GRANT SELECT, INSERT, UPDATE ON TABLE {DEFAULT_TABLE} TO ROLE cdc_reader"])
    with database.batch() as batch:
        batch.insert("Singers", ("SingerId", "FirstName", "LastName", "LastUpdated"), [(1, "A", "B", spanner.COMMIT_TIMESTAMP)])
    tag = f"cli-test-{uuid.uuid4().hex[:8]}"
    config = tmp_path / "watcher.toml"
    config.write_text('[watch]\npoll_interval = 0.1\ninitial_timestamp = "beginning"\n[tables]\ninclude = ["Singers"]\n')
    result = subprocess.run([*CLI, "watch", "--config", str(config), "--until-caught-up", "--duration", "60", "--quiet",
                             "--request-tag", tag, "--priority", "low", "--database-role", "cdc_reader",
                             "--project", PROJECT,
                             "--instance", INSTANCE, "--database", database.database_id],
                            env=_clean_env(os.environ["SPANNER_EMULATOR_HOST"]), cwd=REPO, capture_output=True,
                            text=True, timeout=TIMEOUT)
    assert result.returncode == 0, result.stderr[-2000:]
    with database.snapshot() as snap:
        rows = list(snap.execute_sql("SELECT DATABASE_ROLE, PRIORITY FROM SPANNER_SYS.LOCAL_REQUEST_LOG "
                                     "WHERE REQUEST_TAG = @tag", params={"tag": tag},
                                     param_types={"tag": spanner.param_types.STRING}))
    assert rows, "no request carried the --request-tag"
    assert {role for role, _ in rows} == {"cdc_reader"}, rows
    assert "LOW" in {priority for _, priority in rows}, rows  # the polls run at --priority


def test_a_service_account_key_file_is_used_with_the_endpoint_and_role(tmp_path: Path, monkeypatch) -> None:
    import json

    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    from watcher import connect
    from watcher.connection import spanner_client

    monkeypatch.delenv("SPANNER_EMULATOR_HOST", raising=False)  # the client would follow it
    pem = rsa.generate_private_key(public_exponent=65537, key_size=2048).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode()
    key = tmp_path / "key.json"
    key.write_text(json.dumps({"type": "service_account", "project_id": "p", "private_key_id": "k1",
                               "private_key": pem, "client_email": "cdc@p.iam.gserviceaccount.com",
                               "client_id": "1", "token_uri": "https://oauth2.googleapis.com/token"}))
    client = spanner_client("p", credentials_file=key, api_endpoint="eu-spanner.googleapis.com:443")
    assert client.credentials.service_account_email == "cdc@p.iam.gserviceaccount.com"
    database = connect("p", "i", "d", credentials_file=key, database_role="cdc_reader")  # nothing is sent yet
    assert (database.name, database.database_role) == ("projects/p/instances/i/databases/d", "cdc_reader")

    # A Spark task of backfill or reconcile opens the database again with the same key, endpoint and role.
    import pickle

    from watcher.changelog.snapshots.spanner_source import SpannerLocation

    boosted = connect("p", "i", "d", credentials_file=key, api_endpoint="eu-spanner.googleapis.com:443",
                      database_role="cdc_reader")
    location = pickle.loads(pickle.dumps(SpannerLocation.of(boosted)))
    assert (location.credentials_file, location.api_endpoint, location.database_role) == (
        str(key), "eu-spanner.googleapis.com:443", "cdc_reader")
    in_task = location.open()
    assert in_task.database_role == "cdc_reader" and in_task.name == boosted.name
    assert spanner_client_of(in_task).credentials.service_account_email == "cdc@p.iam.gserviceaccount.com"


def spanner_client_of(database: Any) -> Any:
    return database._instance._client  # a test may look inside the client; the watcher does not


@emulator_lacks("the local request log (SPANNER_SYS.LOCAL_REQUEST_LOG)")
def test_backfill_reads_on_data_boost_with_its_request_tag(make_database, tmp_path: Path) -> None:
    import uuid

    from google.cloud import spanner

    database = make_database(SINGERS_DDL)
    with database.batch() as batch:
        batch.insert("Singers", ("SingerId", "FirstName", "LastName", "LastUpdated"),
                     [(i, "F", "L", spanner.COMMIT_TIMESTAMP) for i in range(3)])
    tag = f"cli-boost-{uuid.uuid4().hex[:8]}"
    result = subprocess.run([*CLI, "backfill", "--table", "Singers", "--staging", str(tmp_path / "s"), "--warehouse",
                             str(tmp_path / "w"), "--no-checkpoints", "--data-boost", "--request-tag", tag,
                             "--project", PROJECT, "--instance", INSTANCE, "--database", database.database_id],
                            env=_clean_env(os.environ["SPANNER_EMULATOR_HOST"]), cwd=REPO, capture_output=True,
                            text=True, timeout=TIMEOUT)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "3 rows read" in result.stdout
    with database.snapshot() as snap:
        rows = list(snap.execute_sql("SELECT DATA_BOOST_ENABLED FROM SPANNER_SYS.LOCAL_REQUEST_LOG "
                                     "WHERE REQUEST_TAG = @tag AND PARTITIONED", params={"tag": tag},
                                     param_types={"tag": spanner.param_types.STRING}))
    assert rows and all(boost for (boost,) in rows), rows
