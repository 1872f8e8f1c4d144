"""The Spanner type system as plain data, independent of protobuf.

Example:
    >>> t = parse_type("ARRAY<STRING(MAX)>")
    >>> t.code.name, t.element.code.name, str(t)
    ('ARRAY', 'STRING', 'ARRAY<STRING(MAX)>')
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field

from .. import errors


class TypeCode(enum.IntEnum):
    """Same numbers as google.spanner.v1.TypeCode, so converting is a cast."""

    BOOL = 1
    INT64 = 2
    FLOAT64 = 3
    TIMESTAMP = 4
    DATE = 5
    STRING = 6
    BYTES = 7
    ARRAY = 8
    STRUCT = 9
    NUMERIC = 10
    JSON = 11
    FLOAT32 = 15
    INTERVAL = 16
    UUID = 17
    #: Full-text search tokens: a DDL-only type (generated HIDDEN columns of search indexes).
    #: It has no wire code; a query that reads such a column is refused.
    TOKENLIST = 1000
    PROTO = 13
    ENUM = 14


@dataclass(frozen=True)
class SpannerType:
    """A Spanner type. ``length`` is the declared STRING/BYTES length (None means MAX).

    ``length`` matters for column definitions only; two types are *compatible* when
    their codes (and element/field types) match, see :meth:`same_kind`. PROTO and ENUM
    types name their message or enum in ``proto_fqn`` (``examples.music.SingerInfo``);
    their values are stored as BYTES and INT64 (:attr:`storage_code`).
    """

    code: TypeCode
    element: SpannerType | None = None
    fields: tuple[tuple[str, SpannerType], ...] = ()
    length: int | None = None
    proto_fqn: str = field(default="", repr=False)

    @property
    def storage_code(self) -> TypeCode:
        """The code whose stored and wire forms this type's values share (PROTO: BYTES, ENUM: INT64)."""
        return _STORED_AS.get(self.code, self.code)

    def __str__(self) -> str:
        if self.proto_fqn:  # DDL names a proto type by its full name alone
            return self.proto_fqn if "." in self.proto_fqn else f"`{self.proto_fqn}`"
        if self.code == TypeCode.ARRAY:
            assert self.element is not None
            return f"ARRAY<{self.element}>"
        if self.code == TypeCode.STRUCT:
            inner = ", ".join(f"{n} {t}" if n else str(t) for n, t in self.fields)
            return f"STRUCT<{inner}>"
        if self.code in (TypeCode.STRING, TypeCode.BYTES):
            return f"{self.code.name}({'MAX' if self.length is None else self.length})"
        return self.code.name

    @property
    def is_array(self) -> bool:
        return self.code == TypeCode.ARRAY

    def same_kind(self, other: SpannerType) -> bool:
        """True when values of ``other`` can be stored as this type without conversion."""
        if self.code != other.code or self.proto_fqn != other.proto_fqn:
            return False
        if self.code == TypeCode.ARRAY:
            assert self.element is not None and other.element is not None
            return self.element.same_kind(other.element)
        if self.code == TypeCode.STRUCT:
            return len(self.fields) == len(other.fields) and all(
                a[1].same_kind(b[1]) for a, b in zip(self.fields, other.fields, strict=True)
            )
        return True

    def without_length(self) -> SpannerType:
        if self.code == TypeCode.ARRAY:
            assert self.element is not None
            return SpannerType(TypeCode.ARRAY, element=self.element.without_length())
        return SpannerType(self.code, fields=self.fields) if self.length is not None else self


_STORED_AS = {TypeCode.PROTO: TypeCode.BYTES, TypeCode.ENUM: TypeCode.INT64}

BOOL = SpannerType(TypeCode.BOOL)
INT64 = SpannerType(TypeCode.INT64)
FLOAT64 = SpannerType(TypeCode.FLOAT64)
TIMESTAMP = SpannerType(TypeCode.TIMESTAMP)
DATE = SpannerType(TypeCode.DATE)
STRING = SpannerType(TypeCode.STRING)
BYTES = SpannerType(TypeCode.BYTES)
NUMERIC = SpannerType(TypeCode.NUMERIC)
JSON = SpannerType(TypeCode.JSON)
FLOAT32 = SpannerType(TypeCode.FLOAT32)
INTERVAL = SpannerType(TypeCode.INTERVAL)
UUID = SpannerType(TypeCode.UUID)
TOKENLIST = SpannerType(TypeCode.TOKENLIST)

#: Types a query, a read or a mutation can never carry (they have no wire form).
NOT_ON_WIRE = frozenset({TypeCode.TOKENLIST})


def array_of(element: SpannerType) -> SpannerType:
    return SpannerType(TypeCode.ARRAY, element=element)


def proto_of(fqn: str) -> SpannerType:
    """A proto message type; DDL cannot tell a message from an enum, the catalog's bundle does."""
    return SpannerType(TypeCode.PROTO, proto_fqn=fqn)


def enum_of(fqn: str) -> SpannerType:
    return SpannerType(TypeCode.ENUM, proto_fqn=fqn)


def schema_type_text(t: SpannerType) -> str:
    """The type as INFORMATION_SCHEMA.COLUMNS.SPANNER_TYPE shows it: ``PROTO<fqn>``, ``ARRAY<ENUM<fqn>>``.

    >>> schema_type_text(array_of(enum_of("a.Genre"))), schema_type_text(STRING)
    ('ARRAY<ENUM<a.Genre>>', 'STRING(MAX)')
    >>> parse_type("ARRAY<ENUM<a.Genre>>") == array_of(enum_of("a.Genre"))
    True
    """
    if t.proto_fqn:
        return f"{t.code.name}<{t.proto_fqn}>"
    if t.element is not None:
        return f"ARRAY<{schema_type_text(t.element)}>"
    return str(t)


def struct_of(*fields: tuple[str, SpannerType]) -> SpannerType:
    return SpannerType(TypeCode.STRUCT, fields=tuple(fields))


# The largest declarable STRING/BYTES lengths (limits.py holds the rest of the limits).
MAX_STRING_LENGTH = 2_621_440
MAX_BYTES_LENGTH = 10_485_760

_SCALAR_NAMES = {c.name: c for c in TypeCode if c not in (TypeCode.ARRAY, TypeCode.STRUCT, TypeCode.PROTO, TypeCode.ENUM)}
# A dotted or back-quoted name is a proto message or enum type (``examples.music.SingerInfo``).
_TOKEN = re.compile(r"\s*(?:(?P<proto>`[^`]+`|[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+)"
                    r"|(?P<word>[A-Za-z_][A-Za-z0-9_]*)|(?P<num>\d+)|(?P<sym>[<>(),]))")


def parse_type(text: str) -> SpannerType:
    """Parse a GoogleSQL column type such as ``STRING(200)`` or ``ARRAY<INT64>``.

    >>> parse_type("bytes(max)")
    SpannerType(code=<TypeCode.BYTES: 7>, element=None, fields=(), length=None)
    """
    tokens = _tokenize(text)
    pos, result = _parse(tokens, 0, text)
    if pos != len(tokens):
        raise errors.unexpected_in_type(tokens[pos], text)
    return result


def _tokenize(text: str) -> list[str]:
    out: list[str] = []
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise errors.invalid_type(text)
        out.append(m.group(m.lastgroup or "sym"))
        pos = m.end()
    return out


def _parse(tokens: list[str], pos: int, text: str) -> tuple[int, SpannerType]:
    if pos >= len(tokens):
        raise errors.incomplete_type(text)
    name = tokens[pos].upper()
    pos += 1
    if "." in name or name.startswith("`"):
        return pos, proto_of(tokens[pos - 1].strip("`"))
    if name in ("PROTO", "ENUM") and pos < len(tokens) and tokens[pos] == "<":  # INFORMATION_SCHEMA's spelling
        if pos + 1 >= len(tokens):
            raise errors.incomplete_type(text)
        fqn = tokens[pos + 1].strip("`")
        pos = _expect(tokens, pos + 2, ">", text)
        return pos, SpannerType(TypeCode[name], proto_fqn=fqn)
    if name == "ARRAY":
        pos = _expect(tokens, pos, "<", text)
        pos, element = _parse(tokens, pos, text)
        if element.is_array:
            raise errors.array_of_arrays(text)
        pos = _expect(tokens, pos, ">", text)
        return pos, array_of(element)
    if name == "STRUCT":
        pos = _expect(tokens, pos, "<", text)
        fields: list[tuple[str, SpannerType]] = []
        while tokens[pos] != ">":
            field_name = ""
            if pos + 1 < len(tokens) and tokens[pos + 1] not in ("<", "(", ",", ">"):
                field_name = tokens[pos]
                pos += 1
            pos, ftype = _parse(tokens, pos, text)
            fields.append((field_name, ftype))
            if tokens[pos] == ",":
                pos += 1
        return pos + 1, SpannerType(TypeCode.STRUCT, fields=tuple(fields))
    code = _SCALAR_NAMES.get(name)
    if code is None:
        raise errors.unknown_type(tokens[pos - 1], text)
    if code in (TypeCode.STRING, TypeCode.BYTES):
        if pos < len(tokens) and tokens[pos] == "(":
            size = tokens[pos + 1] if pos + 1 < len(tokens) else ""
            pos = _expect(tokens, pos + 2, ")", text)
            if size.upper() == "MAX":
                return pos, SpannerType(code)
            if not size.isdigit():
                raise errors.invalid_type_length(size, text)
            limit = MAX_STRING_LENGTH if code == TypeCode.STRING else MAX_BYTES_LENGTH
            if not 1 <= int(size) <= limit:
                raise errors.type_length_out_of_range(size, text, limit)
            return pos, SpannerType(code, length=int(size))
        return pos, SpannerType(code)
    return pos, SpannerType(code)


def _expect(tokens: list[str], pos: int, sym: str, text: str) -> int:
    if pos >= len(tokens) or tokens[pos] != sym:
        raise errors.expected_in_type(sym, text)
    return pos + 1
