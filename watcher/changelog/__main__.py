"""``python -m watcher.changelog --staging DIR --warehouse DIR``: the job (see :func:`job.main`)."""

from __future__ import annotations

import sys

from .job import main

sys.exit(main())
