"""Folder paths and URLs (watcher.storage_urls): every form a user may give names the same folder.

The sink, the changelog job's driver-side listing (Spark Connect) and the command line read
folders through the one module; here its reading, its errors, and the sink and the `watch`
configuration on each form.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from watcher.changelog.io.arrow_fs import ArrowFS
from watcher.cli.config import parse_config
from watcher.cli.main import main
from watcher.errors import ConfigurationError, StorageURLError
from watcher.model import Change, from_nanos
from watcher.staging import contract
from watcher.staging.sink import StagingSink
from watcher.storage_urls import open_filesystem, parse

T0 = 1_714_557_600_000_000_000


@pytest.mark.parametrize(("text", "local"), [
    ("/data/staging", "/data/staging"),
    ("/data/staging/", "/data/staging"),
    ("file:/data/staging", "/data/staging"),
    ("file:///data/staging", "/data/staging"),
    ("file://localhost/data/staging", "/data/staging"),
    ("FILE:///data/a%20b", "/data/a b"),          # Hadoop's URIs escape spaces
    ("/data/x/../staging", "/data/staging"),
])
def test_local_forms_name_one_local_folder(text, local):
    folder = parse(text)
    assert (folder.local, folder.scheme, folder.uri, folder.is_local) == (local, "file", f"file:{local}", True)


def test_a_relative_path_is_taken_under_the_base_or_the_working_folder(tmp_path, monkeypatch):
    assert parse("staging", base="/etc/w").local == "/etc/w/staging"
    assert parse("file:staging", base="/etc/w").local == "/etc/w/staging"  # Hadoop's relative file: form
    monkeypatch.chdir(tmp_path)
    assert parse("out/staging").local == str(tmp_path / "out" / "staging")


@pytest.mark.parametrize(("text", "scheme", "uri"), [
    ("gs://bucket/staging/", "gs", "gs://bucket/staging"),
    ("s3a://bucket/staging", "s3a", "s3a://bucket/staging"),
    ("hdfs://namenode:8020/data/staging", "hdfs", "hdfs://namenode:8020/data/staging"),
    ("file://otherhost/data/staging", "file", "file://otherhost/data/staging"),  # another machine's disk
])
def test_other_filesystems_keep_their_url(text, scheme, uri):
    folder = parse(text)
    assert (folder.local, folder.scheme, folder.uri, folder.is_local) == (None, scheme, uri, False)


def test_no_folder_at_all_is_refused():
    with pytest.raises(StorageURLError, match="no folder named"):
        parse("  ")


def test_a_scheme_without_a_filesystem_names_the_url_and_what_is_missing():
    with pytest.raises(StorageURLError) as caught:
        open_filesystem("foo://bucket/staging")
    message = str(caught.value)
    assert message.startswith("'foo://bucket/staging': no filesystem for scheme 'foo': install ")
    assert "or give a local path or file:// URL" in message and "\n" not in message
    assert isinstance(caught.value, ConfigurationError) and caught.value.scheme == "foo"


def test_hdfs_without_its_libraries_says_what_to_install():
    try:
        open_filesystem("hdfs://127.0.0.1:1/staging")
    except StorageURLError as exc:
        assert "no filesystem for scheme 'hdfs'" in str(exc) and "JAVA_HOME" in str(exc) and "\n" not in str(exc)
    else:  # a machine with a JVM and libhdfs opens it: nothing to say then
        pytest.skip("pyarrow can load libhdfs here")


def _changes(n: int) -> list[Change]:
    return [Change("Items", (i,), {"Id": i}, from_nanos(T0 + i), None, from_nanos(T0 + n)) for i in range(n)]


@pytest.mark.parametrize("form", ["{p}", "file:{p}", "file://{p}", "file://localhost{p}"])
def test_the_sink_stages_into_the_folder_each_form_names(tmp_path, form):
    folder = tmp_path / "staging"
    sink = StagingSink(form.format(p=folder), fsync=True)
    path = sink.write(_changes(3), {"Id": "INT64"}, ["Id"])
    assert sink.directory == folder and isinstance(path, Path) and path.parent.parent == folder
    assert [e.uri for e in ArrowFS(f"file://{folder}").glob(contract.BATCH_GLOB)] == [f"file:{path}"]
    assert len(path.read_text(encoding="utf-8").splitlines()) == 3
    assert not list(folder.rglob(".*.tmp"))  # the temporary name is gone once the batch is in place


def test_the_sink_takes_a_relative_path_under_the_working_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = StagingSink("rel/staging", fsync=False).write(_changes(1), {"Id": "INT64"}, ["Id"])
    assert isinstance(path, Path) and path.is_relative_to(tmp_path / "rel" / "staging") and path.is_file()


def test_the_sink_refuses_a_url_it_cannot_reach_before_writing_anything(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(StorageURLError, match="'foo://bucket/staging': no filesystem for scheme 'foo'"):
        StagingSink("foo://bucket/staging")
    assert list(tmp_path.iterdir()) == []


def test_the_watch_configuration_reads_staging_dir_in_every_form(tmp_path):
    def staging(value: str) -> Path | str:
        return parse_config(f'[watch]\nstaging_dir = "{value}"\n', "w.toml", base_dir=tmp_path).staging_dir

    assert staging("st") == tmp_path / "st"
    assert staging("file:///abs/st") == staging("file:/abs/st") == Path("/abs/st")
    assert staging("file:st") == tmp_path / "st"
    assert staging("gs://bucket/st") == "gs://bucket/st"


def test_watch_refuses_an_unreachable_staging_url_before_connecting(tmp_path, capsys):
    config = tmp_path / "watcher.toml"
    config.write_text('[watch]\nstaging_dir = "foo://bucket/staging"\n')
    # No database option and nothing listening: the staging folder is checked first.
    assert main(["watch", "--config", str(config), "--duration", "1", "--project", "p", "--instance", "i",
                 "--database", "d"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "watcher.toml: watch.staging_dir:" in err[0], err
    assert "'foo://bucket/staging': no filesystem for scheme 'foo'" in err[0]
