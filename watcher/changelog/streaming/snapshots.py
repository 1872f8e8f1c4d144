"""A strong read-only transaction whose read timestamp R is fixed at once (the driver's planning reads).

Once a strong read at R returned, no later commit gets a timestamp <= R (on Spanner, and on the
embedded server by construction): that makes R a safe end for a micro-batch: nothing committed at or before R can appear later.
"""

from __future__ import annotations

from typing import Any

from ...errors import ConfigurationError
from ...request_settings import RequestSettings, settings_or_default
from ...spanner_client import strong_read_timestamp
from .options import SOURCE_NAME


class StrongSnapshot:
    """A strong multi-use read-only transaction, begun at once: ``(snapshot, read timestamp R)``; its
    first query carries ``request_settings``' request tag."""

    def __init__(self, database: Any, request_settings: RequestSettings | None = None) -> None:
        self._checkout = database.snapshot(multi_use=True)
        self._options = settings_or_default(request_settings).request_options(with_priority=False)

    def __enter__(self) -> tuple[Any, Any]:
        snapshot = self._checkout.__enter__()
        read_ts = strong_read_timestamp(snapshot, self._options)  # its first query fixes R now, before the planning reads
        if read_ts is None:
            self._checkout.__exit__(None, None, None)
            raise ConfigurationError(f"{SOURCE_NAME} source: the Spanner client did not report the read timestamp "
                                     "of its read-only transaction")
        return snapshot, read_ts

    def __exit__(self, *exc: Any) -> None:
        self._checkout.__exit__(*exc)
