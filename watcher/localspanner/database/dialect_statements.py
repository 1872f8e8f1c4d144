"""A query or DML request as the server runs it, whatever the database's dialect.

A PostgreSQL database's statement becomes GoogleSQL text (``postgresql.to_google_sql``; a
change stream query ``spanner.read_json_<stream>(...)`` or ``spanner.read_proto_bytes_<stream>(...)``,
the GoogleSQL read function's, whose rows :func:`result_shape` turns into JSONB or BYTES) and its errors name the statement as the client
wrote it; a GoogleSQL database's statement runs unchanged once it is known to hold no
PostgreSQL-only syntax.

Example:
    >>> in_dialect(Catalog(dialect="POSTGRESQL"), Statement("SELECT k FROM t WHERE k = $1")).sql
    'SELECT `k` FROM `t` WHERE `k` = @p1'
    >>> in_dialect(Catalog(), Statement("SELECT K FROM T")).sql
    'SELECT K FROM T'
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import TypeVar

from .. import errors
from ..change_streams import pg_reads
from ..common.requests import BatchDmlResult, ResultStream, Statement
from ..ddl.change_stream_options import MUTABLE_KEY_RANGE
from ..dialects import dialects, postgresql
from ..schema.catalog import Catalog

_Answer = TypeVar("_Answer")
_Engine = TypeVar("_Engine")
#: What a batch statement the dialect's rewriting refused runs as: text the engine refuses too, so
#: the batch stops there as Spanner's does (earlier statements applied); the rewriting's error is reported.
_REFUSED = ""


def in_dialect(catalog: Catalog, statement: Statement) -> Statement:
    """``statement`` as a database of ``catalog`` (and its dialect) runs it.

    Raises:
        SpannerError: INVALID_ARGUMENT naming the statement for the other dialect's syntax, or
            (PostgreSQL) a name that matches the schema's only in another case.
    """
    if catalog.dialect == dialects.POSTGRESQL:
        read = pg_reads.as_google_sql(statement.sql)
        if read is not None:
            function = pg_reads.read_function(statement.sql)
            stream = catalog.change_stream(function.stream) if function is not None else None
            if function is not None and stream is not None:
                pg_reads.check_mode(function, stream.option("partition_mode") == MUTABLE_KEY_RANGE)
            return dataclasses.replace(statement, sql=read)
        run = postgresql.to_google_sql(statement.sql)
        postgresql.refuse_wrong_case(statement.sql, catalog)
        return dataclasses.replace(statement, sql=run)
    postgresql.refuse_in_google_sql(statement.sql)
    return statement


def batch_in_dialect(catalog: Catalog, statements: list[Statement]) -> tuple[list[Statement], errors.SpannerError | None]:
    """A batch's statements as run, up to the first one :func:`in_dialect` refuses (run as :data:`_REFUSED`),
    and that refusal (None: every statement was rewritten).

    >>> run, refused = batch_in_dialect(Catalog(dialect="POSTGRESQL"), [Statement("DELETE FROM t WHERE true"), Statement("UPDTAE t SET v = 1")])
    >>> [s.sql for s in run], refused.code.name
    (['DELETE FROM `t` WHERE TRUE', ''], 'INVALID_ARGUMENT')
    """
    out: list[Statement] = []
    for statement in statements:
        try:
            out.append(in_dialect(catalog, statement))
        except errors.SpannerError as exc:
            out.append(dataclasses.replace(statement, sql=_REFUSED))
            return out, exc
    return out, None


def result_shape(dialect: str, written: str) -> Callable[[ResultStream], ResultStream] | None:
    """How a result of the statement ``written`` must be reshaped for the client (None: as it is)."""
    if dialect == dialects.POSTGRESQL and pg_reads.as_google_sql(written) is not None:
        return functools.partial(pg_reads.json_rows, sql=written)
    return None


def as_written(run: Callable[[_Engine], _Answer], statements: list[tuple[str, str]],
               reshape: Callable[[ResultStream], ResultStream] | None = None,
               refused: errors.SpannerError | None = None) -> Callable[[_Engine], _Answer]:
    """``run``, its errors (raised, or a batch's) naming each statement as written instead of as run,
    its result given to ``reshape`` if one is given.

    ``statements`` holds (as run, as written) pairs; ``refused`` is the error of a batch's last
    statement, which :func:`batch_in_dialect` could not rewrite: reported if the batch reached it.
    """
    def named(exc: errors.SpannerError) -> errors.SpannerError:
        for run_text, written in statements:
            if run_text != written:
                exc = errors.as_written(exc, run_text, written)
        return exc

    def answer(engine: _Engine) -> _Answer:
        try:
            result = run(engine)
        except errors.SpannerError as exc:
            raise named(exc) from None
        if isinstance(result, BatchDmlResult) and isinstance(result.error, errors.SpannerError):
            reached = refused is not None and len(result.row_counts) == len(statements) - 1
            error = refused if reached else named(result.error)
            return dataclasses.replace(result, error=error)  # type: ignore[return-value]
        if reshape is not None and isinstance(result, ResultStream):
            return reshape(result)  # type: ignore[return-value]
        return result
    return answer
