"""A conversion that dies: ``python convert_child.py WAREHOUSE STEP`` converts WAREHOUSE (the Parquet
layout) and SIGKILLs itself right after STEP (a :func:`watcher.changelog.tables.convert.convert`
progress step: ``runs`` ... ``watermarks``, ``moved <folder>``, ``placed <table>``)."""

from __future__ import annotations

import os
import signal
import sys

from watcher.changelog.tables.convert import convert

#: The source database the converted rows are said to be of.
SOURCE = ("spanner-watcher", "local", "watcher")


def main(warehouse: str, step: str = "") -> None:
    def progress(done: str) -> None:
        if done == step:
            os.kill(os.getpid(), signal.SIGKILL)

    convert(warehouse, source=SOURCE, progress=progress)


if __name__ == "__main__":
    main(sys.argv[1], *(sys.argv[2:3]))
