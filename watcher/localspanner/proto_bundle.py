"""A database's proto bundle: the proto types its columns may use, and their descriptors.

Spanner takes the descriptors as a serialized ``google.protobuf.FileDescriptorSet`` with
CreateDatabase or UpdateDatabaseDdl (``proto_descriptors``); ``CREATE PROTO BUNDLE (...)``
names which of its messages and enums columns may use. Values of a PROTO column are the
message's serialized bytes and values of an ENUM column its numbers, so storing them needs
no descriptor; the descriptors tell a message from an enum, check values, and let SQL read
fields (``col.field``).

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

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import DecodeError

from . import errors
from .types import TypeCode


@dataclass(frozen=True)
class ProtoBundle:
    """The bundle's type names (as declared) and the descriptor set they come from."""

    types: tuple[str, ...]
    descriptors: bytes

    def __post_init__(self) -> None:
        with _REGISTRY_LOCK:  # SQL functions find the bundle by key (see :func:`bundle_for`)
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

    def message_class(self, fqn: str) -> Any:
        """The Python message class of ``fqn`` (built from the descriptors)."""
        return _message_class(self.descriptors, fqn)

    def field(self, fqn: str, name: str) -> Any:
        """The field descriptor ``name`` of message ``fqn`` (case-insensitive, as GoogleSQL names are), or None."""
        fields = _pool(self.descriptors).FindMessageTypeByName(fqn).fields
        low = name.lower()
        return next((f for f in fields if f.name.lower() == low), None)

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


def bundle_for(key: str) -> ProtoBundle:
    """The bundle whose :attr:`ProtoBundle.key` is ``key`` (every bundle made in this process is known)."""
    return _REGISTRY[key]


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


def parse_message(bundle: ProtoBundle, fqn: str, data: bytes) -> Any:
    """The message ``fqn`` parsed from its serialized bytes (raises ValueError when they do not parse)."""
    message = bundle.message_class(fqn)()
    try:
        message.ParseFromString(data)
    except DecodeError as exc:
        raise ValueError(errors.proto_value_invalid(fqn, str(exc))) from None
    return message


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
                raise errors.proto_descriptors_invalid(f"{f.name}: {exc}") from None
            added.add(f.name)
            files.remove(f)
    return pool


@functools.lru_cache(maxsize=256)
def _message_class(descriptors: bytes, fqn: str) -> Any:
    return message_factory.GetMessageClass(_pool(descriptors).FindMessageTypeByName(fqn))
