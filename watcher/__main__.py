"""``python -m watcher``: the ``spanner-watcher`` command line."""

from __future__ import annotations

import sys

from .cli import main

sys.exit(main())
