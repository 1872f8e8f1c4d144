"""Errors of proto bundles, PROTO and ENUM columns and values, and proto field access in SQL."""

from __future__ import annotations

from .base import Code, SpannerError, _clip, failed_precondition, invalid_argument


def proto_descriptors_missing(statement: str) -> SpannerError:
    """CREATE/ALTER PROTO BUNDLE needs the request's proto_descriptors (a FileDescriptorSet)."""
    return invalid_argument(
        f"Proto descriptors are required for the statement: {_clip(statement)} "
        "(send proto_descriptors, a serialized FileDescriptorSet, with the request)")


def proto_descriptors_invalid(detail: str, file: str = "") -> SpannerError:
    where = f" (file {file})" if file else ""
    return invalid_argument(f"Invalid proto_descriptors: not a valid serialized FileDescriptorSet{where}: {detail}")


def proto_type_not_in_descriptors(statement: str, fqn: str) -> SpannerError:
    return invalid_argument(
        f"Proto type {fqn} not found in the proto descriptors sent with the request (statement: {_clip(statement)})")


def proto_bundle_exists(statement: str) -> SpannerError:
    return failed_precondition(f"Proto bundle already exists (statement: {_clip(statement)})")


def proto_bundle_missing(statement: str) -> SpannerError:
    return SpannerError(Code.NOT_FOUND, f"Proto bundle does not exist (statement: {_clip(statement)})")


def proto_bundle_type_present(statement: str, fqn: str) -> SpannerError:
    """ALTER PROTO BUNDLE INSERT of a type the bundle already holds."""
    return failed_precondition(f"Proto type {fqn} is already in the proto bundle (statement: {_clip(statement)})")


def proto_bundle_type_absent(statement: str, fqn: str) -> SpannerError:
    """ALTER PROTO BUNDLE UPDATE or DELETE of a type the bundle does not hold."""
    return SpannerError(Code.NOT_FOUND, f"Proto type {fqn} is not in the proto bundle (statement: {_clip(statement)})")


def proto_type_in_use(statement: str, fqn: str, column: str) -> SpannerError:
    """Deleting a type (or the bundle) that a column still uses, or changing a message into an enum."""
    return failed_precondition(
        f"Proto type {fqn} cannot be removed or changed: column {column} uses it (statement: {_clip(statement)})")


def proto_type_unknown(statement: str, fqn: str, column: str) -> SpannerError:
    """A column of a proto type that is not in the database's proto bundle."""
    return SpannerError(
        Code.NOT_FOUND,
        f"Type not found: {fqn} (column {column}; add it with CREATE or ALTER PROTO BUNDLE first) "
        f"(statement: {_clip(statement)})")


def proto_value_invalid(fqn: str, detail: str) -> str:
    """Detail for a value error: bytes that do not parse as the message."""
    return f"Invalid value for proto message {fqn}: {detail}"


def enum_value_invalid(fqn: str, value: object) -> str:
    """Detail for a value error: a number or name the enum does not define."""
    return f"Invalid value for enum {fqn}: {value!r} is not one of its values"


def proto_field_unknown(fqn: str, field: str) -> str:
    """Detail for ``sql_invalid``: a field the message does not have."""
    return f"Field {field} not found in proto message {fqn}"


def proto_field_unsupported(fqn: str, field: str, kind: str) -> SpannerError:
    """A field kind GoogleSQL cannot read (``kind``: the protobuf field type, e.g. group)."""
    return SpannerError(Code.UNIMPLEMENTED,
                        f"The local Spanner server does not support reading field {field} of {fqn} (a {kind} field)")


def proto_type_not_in_bundle(fqn: str) -> str:
    """Detail for ``sql_invalid``: a CAST naming a proto type the database's bundle does not hold."""
    return f"Type not found: {fqn} (it is not in the database's proto bundle)"
