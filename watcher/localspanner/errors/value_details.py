"""The wording of value conversion errors (``values.py``): call sites pass the value and its type.

Each function returns the detail text carried by ``values.ValueError_``, which the
callers turn into a client error (``bad_value``, ``bad_parameter``, cast errors).

Example:
    >>> expected_wire_value("INT64", "12x")
    "expected an INT64, got '12x'"
"""

from __future__ import annotations

BYTES_NOT_BASE64 = "BYTES value is not valid base64"


def invalid_text(kind: str, text: str, reason: object = None) -> str:
    """``kind`` is ``timestamp`` or ``date``; ``reason`` the parser's complaint, if any."""
    return f"invalid {kind} {text!r}" if reason is None else f"invalid {kind} {text!r}: {reason}"


def timestamp_out_of_range(text: str) -> str:
    return f"timestamp {text!r} is out of range 0001-01-01..9999-12-31"


def unknown_time_zone(zone: str) -> str:
    return f"unknown time zone {zone!r}"


def invalid_numeric(value: object) -> str:
    return f"invalid NUMERIC {value!r}"


def numeric_out_of_range(value: object) -> str:
    return f"NUMERIC {value!r} is out of range (precision 38, scale 9)"


def numeric_scale(value: object, scale: int) -> str:
    return f"NUMERIC {value!r} has more than {scale} digits after the decimal point (scale 9)"


def invalid_json(reason: object) -> str:
    return f"invalid JSON: {reason}"


def type_not_storable(type_: object) -> str:
    return f"type {type_} cannot be stored"


def type_not_encodable(type_: object) -> str:
    return f"cannot encode type {type_}"


#: How a decoding error names the value a type code expects on the wire.
WIRE_KINDS = {
    "BOOL": "a boolean",
    "INT64": "an INT64",
    "FLOAT64": "a FLOAT64",
    "STRING": "a STRING",
    "BYTES": "base64 BYTES",
    "DATE": "a DATE",
    "TIMESTAMP": "a TIMESTAMP",
    "NUMERIC": "a NUMERIC",
    "JSON": "JSON text",
    "ARRAY": "an ARRAY",
    "FLOAT32": "a FLOAT32",
    "UUID": "a UUID (hexadecimal text, 8-4-4-4-12)",
    "INTERVAL": "an INTERVAL (ISO 8601 duration text)",
}


def expected_wire_value(code: str, got: object) -> str:
    """``code`` is a type code name, a key of ``WIRE_KINDS``."""
    return f"expected {WIRE_KINDS[code]}, got {got!r}"


def float32_out_of_range(value: object) -> str:
    return f"FLOAT32 value {value!r} is out of range"


def invalid_uuid(value: object) -> str:
    return f"invalid UUID {value!r}"


def invalid_interval(value: object, reason: object) -> str:
    return f"invalid INTERVAL {value!r}: {reason}"


def int64_out_of_range(value: object) -> str:
    return f"INT64 value {value!r} is out of range"


def expected_struct(fields: int, got: object) -> str:
    return f"expected a STRUCT of {fields} fields, got {got!r}"


def struct_value_fields(type_: object, fields: int, got: int) -> str:
    return f"a value of {type_} needs {fields} fields, got {got}"
