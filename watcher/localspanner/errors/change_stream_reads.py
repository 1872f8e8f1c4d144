"""Errors of reading a change stream with its read function ``READ_<stream>(...)``.

Example:
    >>> e = heartbeat_out_of_range(10)
    >>> e.code.name, e.message
    ('INVALID_ARGUMENT', 'heartbeat_milliseconds must be between 1000 and 300000, got 10.')
"""

from __future__ import annotations

from .base import Code, SpannerError, invalid_argument


def change_stream_read_unknown_stream(name: str) -> SpannerError:
    return invalid_argument(f"Table-valued function not found: READ_{name} (no change stream {name}).")


def change_stream_read_wrong_function(function: str, stream: str, mode: str, right: str) -> SpannerError:
    return invalid_argument(f"Table-valued function not found: spanner.{function} (change stream {stream} is in "
                            f"{mode} partition mode: read it with spanner.{right}).")


def change_stream_read_syntax(detail: str) -> SpannerError:
    return invalid_argument(f"Invalid change stream query: {detail}.")


def change_stream_read_bad_argument(argument: str, detail: str) -> SpannerError:
    return invalid_argument(f"Invalid value for {argument}: {detail}.")


def change_stream_read_missing_argument(argument: str) -> SpannerError:
    return invalid_argument(f"{argument} is required to read a change stream and cannot be NULL.")


def heartbeat_out_of_range(value: int) -> SpannerError:
    return invalid_argument(f"heartbeat_milliseconds must be between 1000 and 300000, got {value}.")


def read_options_not_null() -> SpannerError:
    return invalid_argument("read_options must be NULL: no read options are supported yet.")


def change_stream_start_too_early(start: str, earliest: str, why: str) -> SpannerError:
    return SpannerError(Code.OUT_OF_RANGE, f"start_timestamp {start} is too far in the past: {why} (earliest {earliest}).")


def change_stream_end_before_start(start: str, end: str) -> SpannerError:
    return invalid_argument(f"end_timestamp {end} must not be before start_timestamp {start}.")


def partition_token_unknown(token: str) -> SpannerError:
    return invalid_argument(f"Invalid partition_token: {token!r} names no partition of this change stream.")


def partition_token_ended(token: str, start: str) -> SpannerError:
    return invalid_argument(f"Invalid partition_token: the partition {token!r} does not cover start_timestamp {start}.")


def change_stream_read_needs_single_use() -> SpannerError:
    return invalid_argument("A change stream read function can only be used in a single-use read-only transaction "
                            "with strong timestamp bound.")
