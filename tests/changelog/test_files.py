"""The two filesystems of the jobs' folders behave alike: Hadoop's (classic sessions) and pyarrow's (Spark Connect)."""

from __future__ import annotations

import pytest

from watcher.changelog.io.arrow_fs import ArrowFS
from watcher.changelog.io.files import open_fs
from watcher.changelog.io.fs import HadoopFS


@pytest.fixture(params=["hadoop", "arrow"])
def make_fs(request, spark):
    return (lambda root: HadoopFS(spark, root)) if request.param == "hadoop" else ArrowFS


def test_every_url_form_names_the_same_folder_as_spark_qualifies_it(make_fs, tmp_path):
    roots = {make_fs(form).root for form in (str(tmp_path), f"file:{tmp_path}", f"file://{tmp_path}")}
    assert roots == {f"file:{tmp_path}"}


def test_small_files_are_written_whole_and_never_replaced_unless_asked(make_fs, tmp_path):
    fs = make_fs(str(tmp_path / "w"))
    assert fs.write_text("_state/m/1.json", "one")
    assert not fs.write_text("_state/m/1.json", "two")  # a second writer of the same version loses
    assert fs.read_text("_state/m/1.json") == "one"
    assert fs.write_text("_state/m/1.json", "three", overwrite=True)
    assert fs.read_text("_state/m/1.json") == "three"
    assert fs.list_names("_state/m") == ["1.json"]  # no temporary file left behind
    assert fs.create_exclusive("_state/attempts/7") and not fs.create_exclusive("_state/attempts/7")


def test_listing_moving_and_deleting(make_fs, tmp_path):
    fs = make_fs(str(tmp_path / "s"))
    for name in ("table=A/b1.jsonl", "table=A/b2.jsonl", "table=A/.hidden.jsonl", "table=B/c.jsonl", "table=B/x.txt"):
        fs.write_text(name, "{}\n")
    listed = fs.glob("table=*/*.jsonl", keep=lambda uri: not uri.endswith("b2.jsonl"))
    assert [e.uri for e in listed] == [f"file:{tmp_path}/s/table=A/b1.jsonl", f"file:{tmp_path}/s/table=B/c.jsonl"]
    assert listed[0].length == 3 and listed[0].name == "b1.jsonl"
    assert fs.glob_dirs("table=*") == [f"file:{tmp_path}/s/table=A", f"file:{tmp_path}/s/table=B"]
    assert fs.glob("nothing/*") == [] and fs.list_names("nothing") == []
    moved = fs.move(listed[0].uri, "_quarantine/b1.jsonl")
    assert moved == f"file:{tmp_path}/s/_quarantine/b1.jsonl" and not fs.exists("table=A/b1.jsonl")
    assert fs.delete("table=B") and not fs.exists("table=B") and not fs.delete("table=B")


def test_a_classic_session_uses_pyarrow_for_local_folders_and_hadoop_for_the_rest(spark, tmp_path):
    for local in (str(tmp_path), f"file:{tmp_path}", f"file://{tmp_path}", f"file://localhost{tmp_path}"):
        assert isinstance(open_fs(spark, local), ArrowFS), local
    # a folder not on the driver's disk (here another host's) is Hadoop's, which Spark is configured for
    assert isinstance(open_fs(spark, "hdfs://localhost:9/data/w"), HadoopFS)
