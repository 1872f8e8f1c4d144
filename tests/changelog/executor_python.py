"""The Python of the test cluster's executors: the venv's packages, but not this project.

Spark starts it as ``python -m pyspark.daemon`` (or ``-m``/``-c`` anything); a shell wrapper
runs ``python executor_python.py ARGS``. It removes every way to import ``watcher`` from the
source trees (the editable install's finder, path entries holding a ``watcher`` folder), so
a task imports ``watcher`` only from what the driver shipped. The modules named in
HIDE_MODULES (comma-separated) cannot be imported at all: a worker that lacks a dependency.
"""

from __future__ import annotations

import os
import runpy
import sys


class _Hide:
    """A meta path finder that refuses the hidden modules, as a Python without them would."""

    def __init__(self, names: list[str]) -> None:
        self.names = names

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> None:
        if any(fullname == n or fullname.startswith(n + ".") for n in self.names):
            raise ModuleNotFoundError(f"No module named '{fullname}'", name=fullname)
        return None


def _isolate() -> None:
    # The editable install puts its finder class itself on sys.meta_path.
    sys.meta_path[:] = [f for f in sys.meta_path if "__editable__" not in getattr(f, "__module__", "")
                        and "__editable__" not in getattr(type(f), "__module__", "")]
    sys.path_hooks[:] = [h for h in sys.path_hooks if "__editable__" not in getattr(h, "__module__", "")]
    sys.path[:] = [p for p in sys.path if not os.path.isdir(os.path.join(p or ".", "watcher"))]
    hidden = [n for n in os.environ.get("HIDE_MODULES", "").split(",") if n]
    if hidden:
        sys.meta_path.insert(0, _Hide(hidden))


def main() -> None:
    _isolate()
    args = sys.argv[1:]
    if args[:1] == ["-m"]:
        sys.argv = [args[1], *args[2:]]
        runpy.run_module(args[1], run_name="__main__", alter_sys=True)
    elif args[:1] == ["-c"]:
        sys.argv = ["-c", *args[2:]]
        exec(compile(args[1], "<string>", "exec"), {"__name__": "__main__"})
    else:
        sys.argv = args
        runpy.run_path(args[0], run_name="__main__")


if __name__ == "__main__":
    main()
