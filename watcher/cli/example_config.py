"""The example configuration of ``spanner-watcher watch``: where it is, in a checkout or an installed package.

``examples/watcher.toml`` is its one copy in the source tree; a built wheel carries it as
``watcher/cli/examples/watcher.toml`` (setup.py's build step copies it), so ``watch --help``
can name a file that exists wherever the package runs. An editable install and a plain
checkout read ``examples/`` itself.

Example:
    >>> example_config_path().name
    'watcher.toml'
    >>> example_config_path().is_file()
    True
"""

from __future__ import annotations

from pathlib import Path

#: Where a built package holds the example (the path setup.py copies it to).
PACKAGED = Path(__file__).resolve().parent / "examples" / "watcher.toml"
#: The source tree's copy, beside the package in a checkout or an editable install.
SOURCE = Path(__file__).resolve().parents[2] / "examples" / "watcher.toml"


def example_config_path() -> Path:
    """The example configuration's file: the package's copy when built, else the checkout's."""
    return PACKAGED if PACKAGED.is_file() else SOURCE
