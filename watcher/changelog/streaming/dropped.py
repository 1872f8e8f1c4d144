"""A watched table dropped under a polling ``spanner_watcher`` query: one error naming it, and where its changes end.

Polling reads rows, and a dropped table has no rows left to read: the changes committed after
the query's last position in the table and before the DROP cannot be read any more (nor can the
rows of a micro-batch planned before the drop and read after it). A query that went on without
the table would leave that gap in the changelog unsaid, so the query stops instead, with a
:class:`~watcher.errors.TableNotFoundError` that names the table and the position up to which
earlier micro-batches hold its changes (with the changelog writer: the changelog). Started again from its checkpoint without the table (option
``tables``; ``tables=*`` finds it gone by itself), the query goes on with the others from
where it stopped. A change stream keeps a dropped table's changes: change-stream mode reads
them to the end and then has no more records of it (:mod:`.change_stream_source`).

Example:
    >>> import datetime as dt
    >>> from google.api_core.datetime_helpers import DatetimeWithNanoseconds as T
    >>> err = table_dropped("Items", Checkpoint(T(2024, 5, 1, tzinfo=dt.UTC), (7,)), "found planning a micro-batch")
    >>> print(str(err).replace("; ", ";\\n"))
    Table not found: Items (dropped while the spanner_watcher query polled it (found planning a micro-batch): earlier micro-batches hold its changes up to commit timestamp 2024-05-01T00:00:00.000000000Z, key (7,);
    its changes committed after that and before the drop cannot be read any more (polling reads rows;
    a change stream keeps them);
    start the query again from its checkpoint without this table (option tables;
    tables=* leaves it out by itself) to go on with the other tables)
"""

from __future__ import annotations

from ...codec import timestamp_text
from ...errors import TableNotFoundError
from ...model import Checkpoint
from .offsets import EPOCH
from .options import SOURCE_NAME


def table_dropped(table: str, position: Checkpoint, when: str) -> TableNotFoundError:
    """The error of a polling query whose table ``table`` was dropped, found ``when`` (planning or
    reading a micro-batch); earlier micro-batches hold the table's changes up to ``position``."""
    if position.commit_timestamp <= EPOCH:
        held, lost = "none of its changes", "its changes"
    else:
        key = "" if position.key is None else f", key {tuple(position.key)!r}"
        held = f"its changes up to commit timestamp {timestamp_text(position.commit_timestamp)}{key}"
        lost = "its changes committed after that and"
    return TableNotFoundError(table, (
        f"dropped while the {SOURCE_NAME} query polled it ({when}): earlier micro-batches hold {held}; "
        f"{lost} before the drop cannot be read any more (polling reads rows; "
        "a change stream keeps them); start the query again from its checkpoint without this table "
        "(option tables; tables=* leaves it out by itself) to go on with the other tables"))
