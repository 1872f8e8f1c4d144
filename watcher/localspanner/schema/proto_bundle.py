"""A database's proto bundle: the proto types its columns may use, and their descriptors.

Spanner takes the descriptors as a serialized ``google.protobuf.FileDescriptorSet`` with
CreateDatabase or UpdateDatabaseDdl (``proto_descriptors``); ``CREATE PROTO BUNDLE (...)``
names which of its messages and enums columns may use. Values of a PROTO column are the
message's serialized bytes and values of an ENUM column its numbers, so storing them needs
no descriptor; the descriptors tell a message from an enum, check values, and let SQL read
fields (``col.field``).

This is the one module below the gRPC edge that uses protobuf: the user's messages and
their descriptors are data of the database, not the wire protocol. Everything else sees
plain Python (:class:`ProtoField`, bytes, ints, text).

Example:
    >>> from google.protobuf import descriptor_pb2
    >>> f = descriptor_pb2.FileDescriptorProto(name="m.proto", package="m")
    >>> _ = f.enum_type.add(name="Genre").value.add(name="POP", number=0)
    >>> b = ProtoBundle(("m.Genre",), descriptor_pb2.FileDescriptorSet(file=[f]).SerializeToString())
    >>> b.kind("m.Genre").name, b.enum_number("m.Genre", "POP"), b.kind("m.Other")
    ('ENUM', 0, None)
"""

from __future__ import annotations

import functools
import hashlib
import threading
from dataclasses import dataclass
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, text_format
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import DecodeError

from .. import errors
from ..datamodel.types import TypeCode

#: Kinds of message fields, by protobuf field type: the GoogleSQL type name a field reads as
#: (int32, uint32, fixed... are INT64; float and double FLOAT64; a message PROTO; an enum ENUM).
_FIELD_KINDS = {
    FieldDescriptor.TYPE_DOUBLE: "FLOAT64", FieldDescriptor.TYPE_FLOAT: "FLOAT64",
    FieldDescriptor.TYPE_INT64: "INT64", FieldDescriptor.TYPE_UINT64: "INT64", FieldDescriptor.TYPE_INT32: "INT64",
    FieldDescriptor.TYPE_FIXED64: "INT64", FieldDescriptor.TYPE_FIXED32: "INT64", FieldDescriptor.TYPE_UINT32: "INT64",
    FieldDescriptor.TYPE_SFIXED32: "INT64", FieldDescriptor.TYPE_SFIXED64: "INT64",
    FieldDescriptor.TYPE_SINT32: "INT64", FieldDescriptor.TYPE_SINT64: "INT64",
    FieldDescriptor.TYPE_BOOL: "BOOL", FieldDescriptor.TYPE_STRING: "STRING", FieldDescriptor.TYPE_BYTES: "BYTES",
    FieldDescriptor.TYPE_MESSAGE: "PROTO", FieldDescriptor.TYPE_ENUM: "ENUM", FieldDescriptor.TYPE_GROUP: "GROUP",
}


@dataclass(frozen=True)
class ProtoField:
    """One field of a message: its declared name, GoogleSQL kind, the message/enum it names, repeated or not."""

    name: str
    kind: str
    type_fqn: str = ""
    repeated: bool = False


@dataclass(frozen=True)
class ProtoBundle:
    """The bundle's type names (as declared) and the descriptor set they come from."""

    types: tuple[str, ...]
    descriptors: bytes

    def __post_init__(self) -> None:
        with _REGISTRY_LOCK:  # SQL functions find the bundle by key (see :func:`bundle_for`); newest last
            _REGISTRY.pop(self.key, None)
            _REGISTRY[self.key] = self

    @property
    def key(self) -> str:
        """A short name for the bundle that SQL text can carry to the functions that read values."""
        return _key(self.descriptors, self.types)

    def has(self, fqn: str) -> bool:
        return fqn in self.types

    def kind(self, fqn: str) -> TypeCode | None:
        """PROTO for a message of the bundle, ENUM for an enum, None for anything else."""
        return kind_in(self.descriptors, fqn) if fqn in self.types else None

    def field(self, fqn: str, name: str) -> ProtoField | None:
        """Field ``name`` of message ``fqn`` (case-insensitive, as GoogleSQL names are), or None."""
        return _field(self.descriptors, fqn, name.lower())

    def read_field(self, fqn: str, data: bytes, name: str) -> Any:
        """The value of field ``name`` of the serialized message: a list for a repeated field, serialized
        bytes for a message field (None when unset), an int for an enum; raises ValueError on bad bytes."""
        message = self.parse(fqn, data)
        value = getattr(message, name)
        descriptor = message.DESCRIPTOR.fields_by_name[name]
        if descriptor.type == FieldDescriptor.TYPE_MESSAGE:
            if _is_repeated(descriptor):
                return [v.SerializeToString() for v in value]
            return value.SerializeToString() if message.HasField(name) else None
        return list(value) if _is_repeated(descriptor) else value

    def parse(self, fqn: str, data: bytes) -> Any:
        """The message ``fqn`` parsed from its bytes (ValueError when they do not parse)."""
        message = _message_class(self.descriptors, fqn)()
        try:
            message.ParseFromString(bytes(data))
        except DecodeError as exc:
            raise ValueError(errors.proto_value_invalid(fqn, str(exc))) from None
        return message

    def to_text(self, fqn: str, data: bytes) -> str:
        """The message in protobuf text format, on one line (CAST(proto AS STRING))."""
        return text_format.MessageToString(self.parse(fqn, data), as_one_line=True)

    def from_text(self, fqn: str, text: str) -> bytes:
        """The serialized message written in protobuf text format (ValueError when it is not)."""
        try:
            return text_format.Parse(text, _message_class(self.descriptors, fqn)()).SerializeToString()
        except text_format.ParseError as exc:
            raise ValueError(errors.proto_value_invalid(fqn, str(exc))) from None

    def enum_number(self, fqn: str, name: str) -> int | None:
        value = _pool(self.descriptors).FindEnumTypeByName(fqn).values_by_name.get(name)
        return None if value is None else value.number

    def enum_name(self, fqn: str, number: int) -> str | None:
        value = _pool(self.descriptors).FindEnumTypeByName(fqn).values_by_number.get(number)
        return None if value is None else value.name


_REGISTRY: dict[str, ProtoBundle] = {}
_REGISTRY_LOCK = threading.Lock()


@functools.lru_cache(maxsize=64)
def _key(descriptors: bytes, types: tuple[str, ...]) -> str:
    return hashlib.sha1(descriptors + "\n".join(types).encode()).hexdigest()[:16]


def bundle_for(key: str, fqn: str) -> ProtoBundle:
    """The bundle whose :attr:`ProtoBundle.key` is ``key`` (every bundle made in this process is known).

    SQL stored in a database's file (a generated column reading a proto field) keeps the key of
    the bundle it was created with; after an ALTER PROTO BUNDLE and a restart only the newest
    bundle is known, so the newest bundle holding ``fqn`` answers instead.
    """
    found = _REGISTRY.get(key)
    if found is None:
        found = next((b for b in reversed(_REGISTRY.values()) if b.has(fqn)), None)
        if found is None:
            raise KeyError(errors.proto_type_not_in_bundle(fqn))
    return found


def kind_in(descriptors: bytes, fqn: str) -> TypeCode | None:
    """Whether ``fqn`` is a message (PROTO) or an enum (ENUM) of the descriptor set, or neither."""
    pool = _pool(descriptors)
    for finder, code in ((pool.FindMessageTypeByName, TypeCode.PROTO), (pool.FindEnumTypeByName, TypeCode.ENUM)):
        try:
            finder(fqn)
            return code
        except KeyError:
            continue
    return None


def check_descriptors(descriptors: bytes) -> None:
    """Raise INVALID_ARGUMENT when ``descriptors`` is not a usable FileDescriptorSet."""
    _pool(descriptors)


def _is_repeated(descriptor: Any) -> bool:
    repeated = getattr(descriptor, "is_repeated", None)  # protobuf >= 6 dropped ``label``
    return bool(repeated) if repeated is not None else descriptor.label == FieldDescriptor.LABEL_REPEATED


@functools.lru_cache(maxsize=1024)
def _field(descriptors: bytes, fqn: str, low_name: str) -> ProtoField | None:
    message = _pool(descriptors).FindMessageTypeByName(fqn)
    d = next((f for f in message.fields if f.name.lower() == low_name), None)
    if d is None:
        return None
    named = d.message_type.full_name if d.message_type is not None else d.enum_type.full_name if d.enum_type else ""
    return ProtoField(d.name, _FIELD_KINDS[d.type], named, _is_repeated(d))


@functools.lru_cache(maxsize=32)
def _pool(descriptors: bytes) -> descriptor_pool.DescriptorPool:
    """A descriptor pool of the set; files are added once their imports are in (any order given)."""
    try:
        files = list(descriptor_pb2.FileDescriptorSet.FromString(descriptors).file)
    except DecodeError as exc:
        raise errors.proto_descriptors_invalid(str(exc)) from None
    pool = descriptor_pool.DescriptorPool()
    added: set[str] = set()
    while files:
        ready = [f for f in files if set(f.dependency) <= added] or files[:1]
        for f in ready:
            try:
                pool.Add(f)
            except (TypeError, ValueError) as exc:
                raise errors.proto_descriptors_invalid(str(exc), f.name) from None
            added.add(f.name)
            files.remove(f)
    return pool


@functools.lru_cache(maxsize=256)
def _message_class(descriptors: bytes, fqn: str) -> Any:
    return message_factory.GetMessageClass(_pool(descriptors).FindMessageTypeByName(fqn))
