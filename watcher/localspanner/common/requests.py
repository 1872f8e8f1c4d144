"""Plain-Python shapes of what clients ask the server and what it answers.

The gRPC edge (``frontend/converters.py``) builds these from protobuf messages and
turns the answers back into protobuf; the backend never sees a protobuf.
Values are in *wire* form (see ``values.py``): None, bool, float, str, list.

Example:
    >>> m = Mutation("insert", "Singers", ("SingerId", "Name"), [["1", "Ann"]])
    >>> m.op, len(m.rows)
    ('insert', 1)
"""

from __future__ import annotations

import abc
import enum
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..datamodel.types import SpannerType


@dataclass(frozen=True)
class KeyRange:
    """A range of keys; each bound is a list of wire values (a key prefix) or None (unbounded)."""

    start: list[Any] | None
    end: list[Any] | None
    start_closed: bool = True
    end_closed: bool = False


@dataclass(frozen=True)
class KeySet:
    keys: list[list[Any]] = field(default_factory=list)
    ranges: list[KeyRange] = field(default_factory=list)
    all: bool = False


class RowWidthError(Exception):
    """A row of :class:`EncodedRows` has ``values`` values, not one per column."""

    def __init__(self, values: int) -> None:
        super().__init__(values)
        self.values = values


class EncodedRows(abc.ABC):
    """A write mutation's rows still in the transport's encoding, decoded only when asked.

    The commonest commit (many single-row upserts) spends most of its time turning values
    into the stored form; rows kept encoded let the backend do that in one pass per value
    (:meth:`convert_all`) instead of building the wire values first. Anything else reads
    the wire values (:meth:`wire`; iterating and ``==`` see them too, as for a list).
    """

    @abc.abstractmethod
    def __len__(self) -> int:
        """How many rows."""

    @abc.abstractmethod
    def wire(self) -> list[list[Any]]:
        """The rows as lists of wire values."""

    def __iter__(self) -> Iterator[list[Any]]:
        return iter(self.wire())

    def __eq__(self, other: object) -> bool:
        """Equal to the same rows, encoded or as lists of wire values."""
        if isinstance(other, EncodedRows):
            return self.wire() == other.wire()
        return isinstance(other, list) and self.wire() == other

    __hash__ = None  # type: ignore[assignment]  # compared by content, like the list it stands for

    @classmethod
    @abc.abstractmethod
    def convert_all(cls, parts: Sequence[EncodedRows], types: Sequence[SpannerType],
                    converters: Sequence[Callable[[Any], Any]]) -> list[list[Any]]:
        """The rows of ``parts`` (all of this class), in order, each value given to its column's
        converter (which takes the wire value of a column of ``types[i]``); a row that does not
        have one value per column raises :class:`RowWidthError`."""


@dataclass(slots=True)  # not frozen: a commit builds one per row, and a frozen init costs several times as much (never changed after)
class Mutation:
    """One mutation. ``op`` is insert, update, insert_or_update, replace or delete.

    ``rows`` are lists of wire values, or :class:`EncodedRows` from the frontend."""

    op: str
    table: str
    columns: tuple[str, ...] = ()
    rows: list[list[Any]] | EncodedRows = field(default_factory=list)
    key_set: KeySet | None = None

    def wire_rows(self) -> list[list[Any]]:
        """``rows`` as lists of wire values.

        >>> Mutation("insert", "T", ("K",), [["1"]]).wire_rows()
        [['1']]
        """
        return self.rows.wire() if isinstance(self.rows, EncodedRows) else self.rows


class Staleness(enum.Enum):
    STRONG = "strong"
    READ_TIMESTAMP = "read_timestamp"
    MIN_READ_TIMESTAMP = "min_read_timestamp"
    EXACT_STALENESS = "exact_staleness"
    MAX_STALENESS = "max_staleness"


@dataclass(frozen=True)
class ReadOnlyOptions:
    """``timestamp_nanos`` for (min_)read_timestamp, ``staleness_nanos`` for (exact|max)_staleness."""

    bound: Staleness = Staleness.STRONG
    timestamp_nanos: int | None = None
    staleness_nanos: int | None = None
    return_read_timestamp: bool = False


class TransactionKind(enum.Enum):
    READ_ONLY = "read_only"
    READ_WRITE = "read_write"
    PARTITIONED_DML = "partitioned_dml"


@dataclass(frozen=True)
class TransactionOptions:
    kind: TransactionKind = TransactionKind.READ_ONLY
    read_only: ReadOnlyOptions = field(default_factory=ReadOnlyOptions)
    #: Leave the transaction out of the change streams that allow it (``allow_txn_exclusion``).
    exclude_txn_from_change_streams: bool = False


@dataclass(frozen=True)
class TransactionSelector:
    """Exactly one of: single_use (options), id (an existing transaction), begin (options)."""

    single_use: TransactionOptions | None = None
    id: bytes | None = None
    begin: TransactionOptions | None = None

    @staticmethod
    def default() -> TransactionSelector:
        """No selector in the request means a single-use strong read-only transaction."""
        return TransactionSelector(single_use=TransactionOptions())


@dataclass(frozen=True)
class TransactionInfo:
    """What BeginTransaction (or an inline begin) reports."""

    id: bytes
    read_timestamp_nanos: int | None = None


@dataclass(frozen=True)
class Field:
    name: str
    type: SpannerType


@dataclass
class ResultStream:
    """A query or read result: metadata first, then rows lazily, then stats.

    ``rows`` yields lists of wire values; the frontend chunks them into messages.
    ``row_count`` is set for DML (exact) or partitioned DML (lower bound) after ``rows``
    is exhausted. ``query_plan`` marks the answer to a PLAN request: metadata only, the
    statement was not run. ``flush_each_row`` asks the frontend to send every row at once.
    """

    fields: list[Field]
    rows: Iterator[list[Any]]
    transaction: TransactionInfo | None = None
    row_count_exact: int | None = None
    row_count_lower_bound: int | None = None
    query_plan: bool = False
    #: Send each row as soon as it comes (an open change stream query), not in batches.
    flush_each_row: bool = False


@dataclass(frozen=True)
class Statement:
    sql: str
    params: dict[str, Any] = field(default_factory=dict)
    param_types: dict[str, SpannerType] = field(default_factory=dict)
    #: The database role of the session that sent it ("": none), which limits the INFORMATION_SCHEMA rows it sees.
    database_role: str = ""


@dataclass(frozen=True)
class BatchDmlResult:
    """Row counts of the statements that ran; ``error`` stops the batch at ``len(row_counts)``."""

    row_counts: list[int]
    transaction: TransactionInfo | None = None
    error: Exception | None = None


@dataclass(frozen=True)
class CommitResult:
    commit_timestamp_nanos: int
    mutation_count: int = 0


@dataclass(frozen=True)
class BatchWriteResult:
    """One answer per mutation group of a BatchWrite: its index, and a commit time or an error."""

    indexes: list[int]
    commit_timestamp_nanos: int | None = None
    error: Exception | None = None


@dataclass(frozen=True)
class InstanceInfo:
    """An instance as the admin API shows it; ``edition`` and ``default_backup_schedule_type`` as in ``instance_rules.py``."""

    name: str
    config: str
    display_name: str
    node_count: int = 1
    labels: dict[str, str] = field(default_factory=dict)
    processing_units: int = 1000  # node_count * 1000, or 100..900 for an instance smaller than a node
    edition: str = "STANDARD"
    default_backup_schedule_type: str = "AUTOMATIC"
    create_time_nanos: int = 0
    update_time_nanos: int = 0


@dataclass(frozen=True)
class DatabaseInfo:
    """A database as the admin API shows it; ``drop_protection`` and ``kms_key_names`` as in ``database_settings.py``."""

    name: str
    create_time_nanos: int
    version_time_nanos: int
    drop_protection: bool = False
    kms_key_names: tuple[str, ...] = ()


@dataclass(frozen=True)
class SessionInfo:
    name: str
    database: str
    multiplexed: bool
    create_time_nanos: int
    labels: dict[str, str] = field(default_factory=dict)
    #: The database role the session was created with (fine-grained access control; "" none).
    creator_role: str = ""


@dataclass(frozen=True)
class RequestOptions:
    """What a request says about itself (recorded, see ``request_log.py``; nothing runs differently).

    ``priority`` is LOW, MEDIUM, HIGH or "" (not given); ``data_boost`` a partitioned query's or
    read's ``data_boost_enabled``.

    >>> RequestOptions(priority="LOW", request_tag="poll").transaction_tag
    ''
    """

    priority: str = ""
    request_tag: str = ""
    transaction_tag: str = ""
    data_boost: bool = False


NO_OPTIONS = RequestOptions()
