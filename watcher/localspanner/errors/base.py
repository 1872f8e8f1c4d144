"""The error type and status codes every named error builds on."""

from __future__ import annotations

import enum


class Code(enum.IntEnum):
    """Canonical status codes (same numbers as google.rpc.Code), free of any gRPC import."""

    OK = 0
    CANCELLED = 1
    UNKNOWN = 2
    INVALID_ARGUMENT = 3
    DEADLINE_EXCEEDED = 4
    NOT_FOUND = 5
    ALREADY_EXISTS = 6
    PERMISSION_DENIED = 7
    RESOURCE_EXHAUSTED = 8
    FAILED_PRECONDITION = 9
    ABORTED = 10
    OUT_OF_RANGE = 11
    UNIMPLEMENTED = 12
    INTERNAL = 13
    UNAVAILABLE = 14


class SpannerError(Exception):
    """An error with a status code and a message a user can act on.

    ``retry_delay`` (seconds) is sent as RetryInfo so that the client retries
    ABORTED transactions promptly instead of backing off for seconds.
    """

    def __init__(self, code: Code, message: str, *, retry_delay: float | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.retry_delay = retry_delay

    def __repr__(self) -> str:
        return f"SpannerError({self.code.name}, {self.message!r})"


class SchemaChangeStopped(SpannerError):
    """A schema change that failed after some of its statements were applied.

    Spanner applies the statements of one UpdateDatabaseDdl request in order; when one
    fails, the ones before it stay applied and the operation ends with the error, its
    metadata listing the commit timestamps of the completed statements only.
    """

    def __init__(self, error: SpannerError, commit_nanos: list[int]) -> None:
        super().__init__(error.code, error.message, retry_delay=error.retry_delay)
        self.commit_nanos = list(commit_nanos)


# --- by status code: the named errors below build on these ---------------------------

def invalid_argument(message: str) -> SpannerError:
    return SpannerError(Code.INVALID_ARGUMENT, message)


def failed_precondition(message: str) -> SpannerError:
    return SpannerError(Code.FAILED_PRECONDITION, message)


def unimplemented(feature: str) -> SpannerError:
    return SpannerError(Code.UNIMPLEMENTED, f"The local Spanner server does not support {feature}.")


def internal(message: str) -> SpannerError:
    return SpannerError(Code.INTERNAL, f"Internal error in the local Spanner server: {message}")


def _clip(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
