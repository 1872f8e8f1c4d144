"""Every error the local Spanner server can show a client, built in one place (this package).

The backend raises :class:`SpannerError`; the gRPC edge turns it into a status once
(``frontend/status.py``). Nothing else in the server chooses status codes or writes
client-visible messages: add a named function here instead, in the module of its
kind (:mod:`.requests`, :mod:`.databases`, :mod:`.schema`, :mod:`.data`, :mod:`.constraints`, :mod:`.views`, :mod:`.sequences`, :mod:`.protos`, :mod:`.roles`,
:mod:`.change_stream_reads`, :mod:`.new_types`, :mod:`.dialects`, :mod:`.instances`; the
wording of detail messages in :mod:`.sql_details`, :mod:`.ddl_details`, :mod:`.schema_details`,
:mod:`.value_details`); every public name is importable from the package.

Example:
    >>> err = table_not_found("Singers")
    >>> err.code.name, err.message
    ('NOT_FOUND', 'Table not found: Singers')
"""

from __future__ import annotations

# Every module's public names are the package's: callers write errors.<name> whatever its module.
from .base import *  # noqa: F403
from .change_stream_reads import *  # noqa: F403
from .constraints import *  # noqa: F403
from .data import *  # noqa: F403
from .databases import *  # noqa: F403
from .ddl_details import *  # noqa: F403
from .dialects import *  # noqa: F403
from .instances import *  # noqa: F403
from .new_types import *  # noqa: F403
from .protos import *  # noqa: F403
from .requests import *  # noqa: F403
from .roles import *  # noqa: F403
from .row_deletion import *  # noqa: F403
from .schema import *  # noqa: F403
from .schema_details import *  # noqa: F403
from .sequences import *  # noqa: F403
from .sql_details import *  # noqa: F403
from .value_details import *  # noqa: F403
from .views import *  # noqa: F403
