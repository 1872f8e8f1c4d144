"""PROTO and ENUM values in GoogleSQL: field access, casts and enum literals.

A PROTO value is stored as the message's bytes and an ENUM value as its number
(``values.py``); the database's proto bundle (``proto_bundle.py``) knows their
descriptors. The SQL functions here get the bundle by its key, which the translator
writes into the SQL text:

* ``info.field`` and ``info.a.b``: ``ls_proto_field(info, key, fqn, field)`` parses the
  message and returns the field's stored value, typed by the field (int32/int64/... as
  INT64, float/double as FLOAT64, enum fields as ENUM, message fields as PROTO, repeated
  fields as ARRAY). An unset message field is NULL, any other unset field its default.
* ``CAST``: PROTO <-> BYTES (bytes that do not parse as the message are refused) and
  PROTO <-> STRING (protobuf text format); ENUM <-> INT64 (numbers the enum lacks are
  refused) and ENUM <-> STRING (the value's name): ``ls_proto_cast``.
* A string or integer literal compared with or assigned to an ENUM is read as the enum
  value of that name or number when the statement is translated.

``CAST(x AS examples.music.Genre)`` is not GoogleSQL that sqlglot parses: :func:`rewrite_casts`
turns it into ``LS_PROTO_CAST(x, 'examples.music.Genre', 0)`` before parsing.

Example:
    >>> rewrite_casts("SELECT SAFE_CAST(g AS m.Genre), CAST(1 AS INT64)")
    "SELECT LS_PROTO_CAST(g, 'm.Genre', 1), CAST(1 AS INT64)"
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

from sqlglot import exp

from .. import errors
from ..datamodel import types as T
from ..datamodel import values
from ..datamodel.types import SpannerType, TypeCode
from ..schema.proto_bundle import ProtoBundle, ProtoField, bundle_for
from .context import Typed
from .literals import sql_string, stored_literal_sql
from .scope import ResolveError, Scope
from .spanner_syntax import mask
from .structs import StructTranslator
from .udf import UdfError, UdfSpec, clear_error, fail

#: The SQL function that :func:`rewrite_casts` writes for a CAST to a proto type.
CAST_FUNCTION = "LS_PROTO_CAST"

_CAST_TO_PROTO = re.compile(r"\bAS\s+(`[^`]*`|[A-Za-z_]\w*(?:\s*\.\s*[A-Za-z_]\w*)+)\s*\)", re.IGNORECASE)
_CAST_WORD = re.compile(r"\b(SAFE_CAST|CAST)\s*$", re.IGNORECASE)

#: Casts between a proto type and another type, by (source, target) storage kind.
_CASTS = frozenset({("BYTES", "PROTO"), ("PROTO", "BYTES"), ("STRING", "PROTO"), ("PROTO", "STRING"),
                    ("INT64", "ENUM"), ("ENUM", "INT64"), ("STRING", "ENUM"), ("ENUM", "STRING")})

#: The GoogleSQL type of a message field, by its kind (``ProtoField.kind``).
_FIELD_TYPES = {"INT64": T.INT64, "FLOAT64": T.FLOAT64, "BOOL": T.BOOL, "STRING": T.STRING, "BYTES": T.BYTES}


def rewrite_casts(sql: str) -> str:
    """``CAST(x AS a.b.C)`` / ``SAFE_CAST(...)`` -> ``LS_PROTO_CAST(x, 'a.b.C', safe)`` (strings and comments untouched)."""
    for _ in range(sql.count(")")):
        masked = mask(sql)
        for m in _CAST_TO_PROTO.finditer(masked):
            name = re.sub(r"\s+", "", sql[m.start(1):m.end(1)]).strip("`")
            opening = _opening_paren(masked, m.start())
            head = _CAST_WORD.search(masked, 0, opening) if opening is not None else None
            if "." not in name or head is None:
                continue
            safe = int(head.group(1).upper() == "SAFE_CAST")
            inner = sql[opening + 1:m.start()].rstrip()  # type: ignore[operator]
            sql = f"{sql[:head.start()]}{CAST_FUNCTION}({inner}, '{name}', {safe}){sql[m.end():]}"
            break
        else:
            return sql
    return sql


def _opening_paren(masked: str, before: int) -> int | None:
    depth = 0
    for i in range(before - 1, -1, -1):
        if masked[i] == ")":
            depth += 1
        elif masked[i] == "(":
            if depth == 0:
                return i
            depth -= 1
    return None


class ProtoTranslator(StructTranslator):
    """Adds PROTO field access, proto casts and enum literals to the expression translators."""

    def bundle(self) -> ProtoBundle:
        bundle = self.ctx.catalog.proto_bundle
        if bundle is None:
            raise self.ctx.invalid(errors.proto_type_not_in_bundle("(no proto bundle)"))
        return bundle

    def proto_type(self, fqn: str) -> SpannerType:
        """PROTO<fqn> or ENUM<fqn>, as the database's bundle says."""
        bundle = self.ctx.catalog.proto_bundle
        kind = bundle.kind(fqn) if bundle is not None else None
        if kind is None:
            raise self.ctx.invalid(errors.proto_type_not_in_bundle(fqn))
        return SpannerType(kind, proto_fqn=fqn)

    # --- field access ---------------------------------------------------------------------------

    def field(self, subject: Typed, name: str, node: exp.Expression) -> Typed:
        t = subject.type
        if t is None or t.code != TypeCode.PROTO:
            return super().field(subject, name, node)
        bundle = self.bundle()
        descriptor = bundle.field(t.proto_fqn, name)
        if descriptor is None:
            raise self.ctx.invalid(errors.proto_field_unknown(t.proto_fqn, name))
        ftype = field_type(t.proto_fqn, descriptor)
        call = (f"ls_proto_field({subject.sql}, {sql_string(bundle.key)}, {sql_string(t.proto_fqn)}, "
                f"{sql_string(descriptor.name)})")
        return Typed(call, ftype)

    def _value_named(self, name: str, scope: Scope, node: exp.Expression) -> Typed:
        try:
            col = scope.resolve(None, name)
        except ResolveError as exc:
            raise self.ctx.invalid(str(exc)) from None
        if col.type is not None and col.type.code == TypeCode.PROTO:
            return Typed(col.sql, col.type)
        return super()._value_named(name, scope, node)

    # --- casts and coercion ------------------------------------------------------------------------

    def cast(self, typed: Typed, target: SpannerType, *, safe: bool) -> Typed:
        source = typed.type
        if typed.is_null or source is None or not (source.proto_fqn or target.proto_fqn):
            return super().cast(typed, target, safe=safe)
        if source.same_kind(target):
            return Typed(typed.sql, target, literal=typed.literal)
        pair = (_kind(source), _kind(target))
        if pair not in _CASTS:
            raise self.ctx.invalid(errors.invalid_cast(source, target))
        fqn = target.proto_fqn or source.proto_fqn
        return Typed(f"ls_proto_cast({typed.sql}, {sql_string(self.bundle().key)}, '{pair[0]}', '{pair[1]}', "
                     f"{sql_string(fqn)}, {int(safe)})", target)

    def coerce(self, typed: Typed, target: SpannerType | None, node: exp.Expression | None = None) -> Typed:
        if target is not None and target.code == TypeCode.ENUM and typed.is_literal and typed.literal is not None:
            number = _enum_literal(self.bundle(), target.proto_fqn, typed)
            if number is None:
                raise self.ctx.invalid(errors.enum_value_invalid(target.proto_fqn, typed.literal))
            return Typed(stored_literal_sql(number), target, literal=number)
        return super().coerce(typed, target, node)

    def _anonymous_or_cast(self, node: exp.Anonymous, scope: Scope) -> Typed:
        if str(node.this).upper() != CAST_FUNCTION:
            return self._anonymous(node, scope)
        value, name, safe = node.expressions
        target = self.proto_type(name.name)
        return self.cast(self.expr(value, scope), target, safe=bool(int(safe.name)))


def _kind(t: SpannerType) -> str:
    return t.code.name


def _enum_literal(bundle: ProtoBundle, fqn: str, typed: Typed) -> int | None:
    if typed.is_string_literal:
        return bundle.enum_number(fqn, str(typed.literal))
    if typed.type is not None and typed.type.code == TypeCode.INT64 and isinstance(typed.literal, int):
        return typed.literal if bundle.enum_name(fqn, typed.literal) is not None else None
    return None


def field_type(fqn: str, field: ProtoField) -> SpannerType:
    """The GoogleSQL type of a message field."""
    if field.kind == "PROTO":
        t = T.proto_of(field.type_fqn)
    elif field.kind == "ENUM":
        t = T.enum_of(field.type_fqn)
    elif field.kind in _FIELD_TYPES:
        t = _FIELD_TYPES[field.kind]
    else:
        raise errors.proto_field_unsupported(fqn, field.name, field.kind.lower())
    return T.array_of(t) if field.repeated else t


# --- SQL functions ---------------------------------------------------------------------------------

def proto_field(data: bytes | None, key: str, fqn: str, name: str) -> Any:
    """``ls_proto_field``: the stored value of field ``name`` of the serialized message ``data``."""
    if data is None:
        return None
    bundle = bundle_for(key, fqn)
    try:
        value = bundle.read_field(fqn, data, name)
    except ValueError as exc:
        fail(str(exc))
    if isinstance(value, list):
        element = field_type(fqn, bundle.field(fqn, name)).element  # type: ignore[arg-type]
        assert element is not None
        return values.array_to_stored([_stored(v) for v in value], element)
    return _stored(value)


def _stored(value: Any) -> Any:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, float) and math.isnan(value):
        return values.NAN_TEXT
    return value


def proto_cast(value: Any, key: str, source: str, target: str, fqn: str, safe: int) -> Any:
    """``ls_proto_cast``: one of the casts in ``_CASTS``; SAFE_CAST gives NULL instead of an error."""
    if value is None:
        return None
    try:
        return _PROTO_CASTS[(source, target)](bundle_for(key, fqn), fqn, value)
    except (UdfError, ValueError) as exc:
        if safe:
            clear_error()
            return None
        if isinstance(exc, UdfError):
            raise
        fail(str(exc))


def _to_enum(bundle: ProtoBundle, fqn: str, number: int) -> int:
    if bundle.enum_name(fqn, int(number)) is None:
        fail(errors.enum_value_invalid(fqn, number))
    return int(number)


def _name_to_enum(bundle: ProtoBundle, fqn: str, name: str) -> int:
    number = bundle.enum_number(fqn, name)
    if number is None:
        fail(errors.enum_value_invalid(fqn, name))
    return number


def _enum_to_name(bundle: ProtoBundle, fqn: str, number: int) -> str:
    name = bundle.enum_name(fqn, int(number))
    return name if name is not None else str(number)


def _bytes_to_proto(bundle: ProtoBundle, fqn: str, data: bytes) -> bytes:
    bundle.parse(fqn, data)  # refuses bytes that are not the message
    return bytes(data)


_PROTO_CASTS: dict[tuple[str, str], Callable[[ProtoBundle, str, Any], Any]] = {
    ("BYTES", "PROTO"): _bytes_to_proto,
    ("PROTO", "BYTES"): lambda bundle, fqn, v: bytes(v),
    ("STRING", "PROTO"): lambda bundle, fqn, v: bundle.from_text(fqn, v),
    ("PROTO", "STRING"): lambda bundle, fqn, v: bundle.to_text(fqn, v),
    ("INT64", "ENUM"): _to_enum,
    ("ENUM", "INT64"): lambda bundle, fqn, v: int(v),
    ("STRING", "ENUM"): _name_to_enum,
    ("ENUM", "STRING"): _enum_to_name,
}

SPECS: tuple[UdfSpec, ...] = (UdfSpec("ls_proto_field", 4, proto_field), UdfSpec("ls_proto_cast", 6, proto_cast))

ProtoTranslator.handlers = {
    **StructTranslator.handlers,
    exp.Anonymous: ProtoTranslator._anonymous_or_cast,
}
