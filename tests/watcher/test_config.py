"""The ``watch`` configuration: every key read into typed settings, every mistake named by its key."""

from __future__ import annotations

import datetime as dt
from dataclasses import replace
from pathlib import Path

import pytest

from watcher.capture.shards import FixedShardProvider, Interval, NotNullShardProvider, TimebasedShardProvider
from watcher.cli.config import ConfigError, WatchConfig, load_config, parse_config
from watcher.model import MIN_TIMESTAMP

FULL = """
[database]
project = "p"
instance = "i"
database = "d"
data_dir = "spanner-data"

[watch]
poll_interval = 0.25
limit = 500
fallback_to_with_query_seconds = 30
initial_timestamp = "2024-05-01T10:00:00Z"
checkpoint_table = "MY_CHECKPOINTS"
staging_dir = "out/staging"
watcher_id = "w-1"
max_batches_in_flight = 9

[tables]
include = ["Singers", "Albums", "Events", "Plain"]

[tables.Singers]
commit_timestamp_column = "LastUpdated"
hint = "@{FORCE_INDEX=Idx_Singers_ShardId_LastUpdated}"
shards = { kind = "fixed", column = "ShardId", values = "-18..18" }

[tables.Albums]
shards = { kind = "not_null", column = "ShardId" }

[tables.Events]
shards = { kind = "time", column = "ShardId", interval = "hour_of_day", previous_seconds = 90 }
"""


def test_every_key_is_read_into_typed_settings(tmp_path: Path) -> None:
    cfg = parse_config(FULL, "watcher.toml", base_dir=tmp_path)
    assert (cfg.database.project, cfg.database.instance, cfg.database.database) == ("p", "i", "d")
    assert cfg.database.data_dir == tmp_path / "spanner-data"
    assert (cfg.poll_interval, cfg.limit, cfg.fallback_to_with_query_seconds) == (0.25, 500, 30.0)
    assert cfg.initial_timestamp == dt.datetime(2024, 5, 1, 10, tzinfo=dt.UTC)
    assert cfg.start_timestamp() == dt.datetime(2024, 5, 1, 10, tzinfo=dt.UTC)
    assert cfg.checkpoint_table == "MY_CHECKPOINTS"
    assert cfg.staging_dir == tmp_path / "out" / "staging"
    assert cfg.watcher_id == "w-1"
    assert cfg.max_batches_in_flight == 9
    assert cfg.include == ("Singers", "Albums", "Events", "Plain") and cfg.exclude == ()
    singers = cfg.tables["Singers"]
    assert singers.commit_timestamp_column == "LastUpdated"
    assert singers.hint == "@{FORCE_INDEX=Idx_Singers_ShardId_LastUpdated}"
    provider = singers.shards.provider()
    assert isinstance(provider, FixedShardProvider) and provider.shard_value == list(range(-18, 19))
    assert isinstance(cfg.tables["Albums"].shards.provider(), NotNullShardProvider)
    events = cfg.tables["Events"].shards.provider()
    assert isinstance(events, TimebasedShardProvider)
    assert (events.interval, events.previous_seconds) == (Interval.HOUR_OF_DAY, 90)
    assert "Plain" not in cfg.tables  # watched with the defaults


def test_defaults_when_the_file_is_empty(tmp_path: Path) -> None:
    cfg = parse_config("", "w.toml", base_dir=tmp_path)
    assert cfg == WatchConfig("w.toml", staging_dir=tmp_path / "staging")
    assert (cfg.poll_interval, cfg.limit, cfg.fallback_to_with_query_seconds) == (1.0, 10_000, 60.0)
    assert cfg.include is None and cfg.start_timestamp() is None
    assert cfg.checkpoint_table == "LAST_SEEN_COMMIT_TIMESTAMPS" and cfg.max_batches_in_flight == 4


@pytest.mark.parametrize("text, values, single", [
    ('values = [1, 2, 3]', (1, 2, 3), False),
    ('values = ["a", "b"]', ("a", "b"), False),
    ('values = 7', (7,), True),
    ('values = "eu"', ("eu",), True),
    ('values = " -2 .. 1 "', (-2, -1, 0, 1), False),
])
def test_fixed_shard_values_forms(text: str, values: tuple, single: bool) -> None:
    cfg = parse_config(f'[tables.T]\nshards = {{ kind = "fixed", column = "S", {text} }}')
    shards = cfg.tables["T"].shards
    assert (shards.values, shards.single) == (values, single)
    assert shards.provider().shard_value == (values[0] if single else list(values))


@pytest.mark.parametrize("value, expected", [
    ('"now"', "now"), ('"NOW"', "now"), ('"beginning"', "beginning"),
    ("2024-05-01T12:00:00+02:00", dt.datetime(2024, 5, 1, 10, tzinfo=dt.UTC)),
    ('"2024-05-01T10:00:00.5Z"', dt.datetime(2024, 5, 1, 10, 0, 0, 500000, tzinfo=dt.UTC)),
])
def test_initial_timestamp_forms(value: str, expected: object) -> None:
    cfg = parse_config(f"[watch]\ninitial_timestamp = {value}")
    assert cfg.initial_timestamp == expected
    if expected == "beginning":
        assert cfg.start_timestamp() == MIN_TIMESTAMP


def test_include_all_with_exclude() -> None:
    cfg = parse_config('[tables]\ninclude = "all"\nexclude = ["AuditLog"]\n[tables.Singers]\nhint = "@{FORCE_INDEX=I}"')
    assert cfg.include is None and cfg.exclude == ("AuditLog",) and cfg.tables["Singers"].hint == "@{FORCE_INDEX=I}"


def test_a_table_may_be_named_like_a_key() -> None:
    # [tables.include] is a table's settings (a TOML table), not the include list.
    cfg = parse_config('[tables.include]\nhint = "@{FORCE_INDEX=I}"')
    assert cfg.include is None and cfg.tables["include"].hint == "@{FORCE_INDEX=I}"


ERRORS = [
    # (file text, the key the message must name, words it must contain)
    ("[watch]\npoll_intervall = 1", "watch.poll_intervall", "did you mean poll_interval"),
    ("[wacth]\nlimit = 1", "wacth", "did you mean watch"),
    ("[database]\nprojekt = 'p'", "database.projekt", "did you mean project"),
    ("[database]\nzzz = 'p'", "database.zzz", "takes project, instance, database, data_dir"),
    ("[database]\nproject = 3", "database.project", "expected a string"),
    ("[database]\ninstance = ''", "database.instance", "must not be empty"),
    ("database = 'd'", "database", "expected a table"),
    ("[watch]\npoll_interval = 'fast'", "watch.poll_interval", "expected a number of seconds"),
    ("[watch]\npoll_interval = -1", "watch.poll_interval", "at least 0"),
    ("[watch]\nlimit = 0", "watch.limit", "at least 1"),
    ("[watch]\nlimit = 1.5", "watch.limit", "expected an integer"),
    ("[watch]\nlimit = true", "watch.limit", "expected an integer"),
    ("[watch]\nmax_batches_in_flight = 0", "watch.max_batches_in_flight", "at least 1"),
    ("[watch]\nmax_batches_in_flight = 2.5", "watch.max_batches_in_flight", "expected an integer"),
    ("[watch]\nmax_batches_in_flight = '4'", "watch.max_batches_in_flight", "expected an integer"),
    ("[watch]\nfallback_to_with_query_seconds = -5", "watch.fallback_to_with_query_seconds", "at least 0"),
    ("[watch]\ninitial_timestamp = 'yesterday'", "watch.initial_timestamp", "RFC 3339"),
    ("[watch]\ninitial_timestamp = 'nwo'", "watch.initial_timestamp", "did you mean now"),
    ("[watch]\ninitial_timestamp = '2024-05-01T10:00:00'", "watch.initial_timestamp", "no UTC offset"),
    ("[watch]\ninitial_timestamp = 2024-05-01T10:00:00", "watch.initial_timestamp", "needs a UTC offset"),
    ("[watch]\ninitial_timestamp = 5", "watch.initial_timestamp", "got an integer"),
    ("[watch]\ncheckpoint_table = 'bad-name'", "watch.checkpoint_table", "invalid table name"),
    ("[watch]\nstaging_dir = 1", "watch.staging_dir", "expected a string"),
    ("[watch]\nwatcher_id = ''", "watch.watcher_id", "must not be empty"),
    ("tables = 1", "tables", "expected a table"),
    ("[tables]\ninclude = 'some'", "tables.include", "expected \"all\" or a list"),
    ("[tables]\ninclude = []", "tables.include", "watches nothing"),
    ("[tables]\ninclude = ['A', 'a']", "tables.include[1]", "listed twice"),
    ("[tables]\ninclude = ['1A']", "tables.include[0]", "invalid table name"),
    ("[tables]\nexclude = 'A'", "tables.exclude", "expected a list of table names"),
    ("[tables]\ninclude = ['A']\nexclude = ['B']", "tables.exclude", "only applies with include = \"all\""),
    ("[tables]\nincluded = ['A']", "tables.included", "did you mean include"),
    ("[tables]\ninclude = ['A']\n[tables.B]\nhint = '@{X=1}'", "tables.B", "add it to tables.include"),
    ("[tables]\nexclude = ['B']\n[tables.B]\nhint = '@{X=1}'", "tables.B", "listed in tables.exclude"),
    ("[tables.T]\nhnt = '@{X=1}'", "tables.T.hnt", "did you mean hint"),
    ("[tables.T]\nhint = 'FORCE_INDEX=I'", "tables.T.hint", "expected a table hint like @{FORCE_INDEX"),
    ("[tables.T]\ncommit_timestamp_column = 'a b'", "tables.T.commit_timestamp_column", "invalid column name"),
    ("[tables.T]\nshards = 'ShardId'", "tables.T.shards", "expected a table like"),
    ("[tables.T]\nshards = { column = 'S' }", "tables.T.shards.kind", "missing; expected one of fixed, not_null, time"),
    ("[tables.T]\nshards = { kind = 'fixd', column = 'S' }", "tables.T.shards.kind", "did you mean fixed"),
    ("[tables.T]\nshards = { kind = 'fixed', values = [1] }", "tables.T.shards.column", "missing"),
    ("[tables.T]\nshards = { kind = 'fixed', column = 'S' }", "tables.T.shards.values", "missing"),
    ("[tables.T]\nshards = { kind = 'fixed', column = 'S', values = [] }", "tables.T.shards.values",
     "expected a list of integers or a range like '-18..18'"),
    ("[tables.T]\nshards = { kind = 'fixed', column = 'S', values = [1, 'a'] }", "tables.T.shards.values", "a range like"),
    ("[tables.T]\nshards = { kind = 'fixed', column = 'S', values = [true] }", "tables.T.shards.values", "a range like"),
    ("[tables.T]\nshards = { kind = 'fixed', column = 'S', values = 1.5 }", "tables.T.shards.values", "a range like"),
    ("[tables.T]\nshards = { kind = 'fixed', column = 'S', values = '1..x' }", "tables.T.shards.values", "a range like"),
    ("[tables.T]\nshards = { kind = 'fixed', column = 'S', values = '5..1' }", "tables.T.shards.values", "is empty"),
    ("[tables.T]\nshards = { kind = 'fixed', column = 'S', values = [1, 1] }", "tables.T.shards.values", "listed twice"),
    ("[tables.T]\nshards = { kind = 'not_null', column = 'S', values = [1] }", "tables.T.shards.values", "unknown key"),
    ("[tables.T]\nshards = { kind = 'time', column = 'S' }", "tables.T.shards.interval", "missing"),
    ("[tables.T]\nshards = { kind = 'time', column = 'S', interval = 'DAYS' }", "tables.T.shards.interval", "did you mean DAY"),
    ("[tables.T]\nshards = { kind = 'time', column = 'S', interval = 'DAY', previous_seconds = 0 }",
     "tables.T.shards.previous_seconds", "at least 1"),
    ("[tables.T]\nshards = { kind = 'time', column = 'S', interval = 'DAY', offset = 1 }", "tables.T.shards.offset", "unknown key"),
    ("[tables.T]\nshards = { kind = 'not_null', column = 'bad column' }", "tables.T.shards.column", "invalid column name"),
    ("[tables.T-1]\nhint = '@{X=1}'", "tables.T-1", "invalid table name"),
    ("[history]\ntable = 'D'", "history", "expected [[history]] entries"),
    ("[[history]]\nhistory_table = 'DH'", "history[0].table", "missing"),
    ("[[history]]\ntable = 'D'\nhistory = 'X'", "history[0].history", "did you mean history_table"),
    ("[[history]]\ntable = 'D'\n[[history]]\ntable = 'd'", "history[1].table", "listed twice"),
    ("[[history]]\ntable = 'D'\nhistory_table = 'D H'", "history[0].history_table", "invalid table name"),
    ("[[change_sets]]\ntables = []", "change_sets[0].tables", "watches nothing"),
    ("[[change_sets]]\ntables = ['A']\nexclude = ['B']", "change_sets[0].exclude", "only applies with tables = \"all\""),
    ("[[change_sets]]\nchange_set_colum = 'X'", "change_sets[0].change_set_colum", "did you mean change_set_column"),
    ("[tables]\ninclude = ['D']\n[[history]]\ntable = 'D'", "history[0].table", "already captured by tables.include"),
    ("[[history]]\ntable = 'D'\n[[change_sets]]\ntables = ['D']", "change_sets[0].tables", "captured one way only"),
    ("[[change_sets]]\n[[change_sets]]", "change_sets", "one [[change_sets]] entry only"),
    ("[[change_streams]]\nheartbeat = 2", "change_streams[0].stream", "spanner-watcher ddl change-stream"),
    ("[[change_streams]]\nstream = 'S-1'", "change_streams[0].stream", "invalid change stream name"),
    ("[[change_streams]]\nstream = 'S'\nheartbeat = 0.5", "change_streams[0].heartbeat", "at least 1"),
    ("[[change_streams]]\nstream = 'S'\nheartbeat = 301", "change_streams[0].heartbeat", "at most 300"),
    ("[[change_streams]]\nstream = 'S'\nstart = 'beginning'", "change_streams[0].start", "retention"),
    ("[[change_streams]]\nstream = 'S'\nstart = 'soon'", "change_streams[0].start", "RFC 3339"),
    ("[[change_streams]]\nstream = 'S'\nmax_concurrent_partitions = 0", "change_streams[0].max_concurrent_partitions",
     "at least 1"),
    ("[[change_streams]]\nstream = 'S'\nprogress_table = 'a b'", "change_streams[0].progress_table", "invalid table name"),
    ("[[change_streams]]\nstream = 'S'\nheartbeet = 1", "change_streams[0].heartbeet", "did you mean heartbeat"),
    ("[[change_streams]]\nstream = 'S'\n[[change_streams]]\nstream = 's'", "change_streams[1].stream", "listed twice"),
    ("[change_streams]\nstream = 'S'", "change_streams", "expected [[change_streams]] entries"),
    ("[watch]\nmode = 'change_stream'", "watch.change_stream", "missing"),
    ("[watch]\nmode = 'change_streams'\nchange_stream = 'S'", "watch.mode", "did you mean change_stream"),
    ("[watch]\nmode = 2", "watch.mode", "expected \"poll\" or \"change_stream\", got an integer"),
    ("[watch]\nmode = 'change_stream'\nchange_stream = 'S-1'", "watch.change_stream", "invalid change stream name"),
    ("[watch]\nchange_stream = 'S'", "watch.change_stream", "only with mode = \"change_stream\""),
    ("[watch]\nmode = 'poll'\nchange_stream = 'S'", "watch.change_stream", "only with mode = \"change_stream\""),
    ("[watch]\nmode = 'poll'\n[[change_streams]]\nstream = 'S'", "change_streams", "watch.mode = \"poll\""),
    ("[watch]\nmode = 'change_stream'\nchange_stream = 'S'\n[tables]\ninclude = ['T']", "tables",
     "watch.mode = \"change_stream\""),
    ("[watch]\nmode = 'change_stream'\nchange_stream = 'S'\n[[change_streams]]\nstream = 'S'", "change_streams",
     "watch.mode = \"change_stream\""),
    ("[watch]\nmode = 'change_stream'\nchange_stream = 'S'\n[[history]]\ntable = 'D'", "history",
     "watch.mode = \"change_stream\""),
    ("[watch]\nmode = 'change_stream'\nchange_stream = 'S'\n[[change_sets]]", "change_sets",
     "watch.mode = \"change_stream\""),
]


@pytest.mark.parametrize("text, key, words", ERRORS, ids=[e[1] + ":" + e[2][:20] for e in ERRORS])
def test_errors_name_the_file_and_the_key(text: str, key: str, words: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(text, "watcher.toml")
    message = str(info.value)
    assert message.startswith(f"watcher.toml: {key}: "), message
    assert words in message, message
    assert "\n" not in message
    assert info.value.key == key


def test_capture_modes_are_read_and_stop_default_polling() -> None:
    cfg = parse_config("[[history]]\ntable = 'Docs'\n[[history]]\ntable = 'Notes'\nhistory_table = 'NotesLog'\n"
                       "[[change_sets]]\nexclude = ['Scratch']", "watcher.toml")
    assert [(h.table, h.history_table) for h in cfg.history] == [("Docs", "DocsHistory"), ("Notes", "NotesLog")]
    (c,) = cfg.change_sets
    assert (c.tables, c.exclude, c.change_sets_table, c.change_set_column) == (None, ("Scratch",), "CHANGE_SETS", "CHANGE_SET_ID")
    assert cfg.poll_tables is False
    assert parse_config("[tables]\n[[history]]\ntable = 'Docs'").poll_tables is True
    assert parse_config("").poll_tables is True


def test_change_streams_are_read_with_their_defaults_and_stop_default_polling() -> None:
    cfg = parse_config("[watch]\nwatcher_id = 'w-1'\n"
                       "[[change_streams]]\nstream = 'SingersStream'\n"
                       "[[change_streams]]\nstream = 'SingersStream'\nwatcher_id = 'copy'\nheartbeat = 1\n"
                       "start = '2024-05-01T10:00:00Z'\nmax_concurrent_partitions = 4\nprogress_table = 'MY_PROGRESS'")
    first, second = cfg.change_streams
    assert (first.stream, first.heartbeat, first.start, first.max_concurrent_partitions, first.progress_table,
            first.watcher_id) == ("SingersStream", 2.0, None, 16, "WATCHER_CHANGE_STREAM_PARTITIONS", "w-1")
    assert (second.heartbeat, second.start, second.max_concurrent_partitions, second.progress_table,
            second.watcher_id) == (1.0, dt.datetime(2024, 5, 1, 10, tzinfo=dt.UTC), 4, "MY_PROGRESS", "copy")
    assert cfg.poll_tables is False
    assert parse_config("[tables]\n[[change_streams]]\nstream = 'S'").poll_tables is True
    assert parse_config("[[change_streams]]\nstream = 'S'").change_streams[0].watcher_id == "default"


def test_mode_change_stream_builds_the_settings_of_the_equivalent_entry() -> None:
    for watch in ("[watch]\n", "[watch]\nwatcher_id = 'w-1'\n"):
        short = parse_config(watch + "mode = 'change_stream'\nchange_stream = 'SingersStream'")
        entry = parse_config(watch + "[[change_streams]]\nstream = 'SingersStream'")
        assert short.change_streams == tuple(replace(s, key="watch") for s in entry.change_streams)
        assert short.poll_tables is entry.poll_tables is False
        assert replace(short, change_streams=()) == replace(entry, change_streams=())
    assert short.change_streams[0].watcher_id == "w-1"
    assert short.change_streams[0].key_of("stream") == "watch.change_stream"
    # mode = "poll" is the default: the same configuration as without it.
    assert parse_config("[watch]\nmode = 'poll'\n[[history]]\ntable = 'D'") == parse_config("[[history]]\ntable = 'D'")


def test_not_toml() -> None:
    with pytest.raises(ConfigError, match=r"^w\.toml: not valid TOML: .*line 1"):
        parse_config("[watch\nlimit = 1", "w.toml")


def test_load_config_resolves_paths_next_to_the_file(tmp_path: Path) -> None:
    path = tmp_path / "conf" / "w.toml"
    path.parent.mkdir()
    path.write_text('[watch]\nstaging_dir = "st"\n[database]\ndata_dir = "/abs/data"\n')
    cfg = load_config(path)
    assert cfg.staging_dir == path.parent.resolve() / "st"
    assert cfg.database.data_dir == Path("/abs/data")
    assert cfg.source == str(path)


def test_load_config_missing_and_unreadable(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"nope\.toml: no such file"):
        load_config(tmp_path / "nope.toml")
    with pytest.raises(ConfigError, match="cannot read it"):
        load_config(tmp_path)  # a folder
    bad = tmp_path / "latin1.toml"
    bad.write_bytes(b"# \xff\n")
    with pytest.raises(ConfigError, match="cannot read it"):
        load_config(bad)


def test_error_helper_for_later_checks() -> None:
    err = WatchConfig("w.toml").error("tables.include", "Table not found: X")
    assert str(err) == "w.toml: tables.include: Table not found: X"


def test_example_file_is_valid() -> None:
    example = Path(__file__).resolve().parents[2] / "examples" / "watcher.toml"
    cfg = load_config(example)
    assert cfg.include == ("Singers",)
    assert cfg.tables["Singers"].shards.provider().shard_value == list(range(-18, 19))
    assert cfg.tables["Singers"].hint == "@{FORCE_INDEX=Idx_Singers_ShardId_LastUpdated}"
