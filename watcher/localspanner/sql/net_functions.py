"""NET functions: hosts of URLs and IP addresses as BYTES.

Registered in SQLite as ``ls_net`` with the function's name as the first argument
(:data:`NET`, the table of names and Python functions). NULL in, NULL out.

Example:
    >>> host("https://user:pw@www.Example.com:8080/a?b")
    'www.Example.com'
    >>> ip_to_string(ip_from_string("192.168.0.1")), ipv4_to_int64(b"\\x00\\x00\\x01\\x00")
    ('192.168.0.1', 256)
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable
from typing import Any

from .udf import UdfSpec, fail

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*://|^//")


def host(url: str | None) -> str | None:
    """NET.HOST: the host of a URL (scheme, user info, port, path removed); NULL when there is none."""
    if url is None:
        return None
    text = _SCHEME.sub("", url.strip(), count=1)
    text = re.split(r"[/?#]", text, maxsplit=1)[0]
    text = text.rsplit("@", 1)[-1]
    if text.startswith("["):
        end = text.find("]")
        text = text[:end + 1] if end > 0 else text
    else:
        text = text.split(":", 1)[0]
    return text or None


def ip_from_string(text: str | None) -> bytes | None:
    if text is None:
        return None
    try:
        return ipaddress.ip_address(text).packed
    except ValueError:
        fail(f"NET.IP_FROM_STRING: {text!r} is not an IPv4 or IPv6 address")


def safe_ip_from_string(text: str | None) -> bytes | None:
    if text is None:
        return None
    try:
        return ipaddress.ip_address(text).packed
    except ValueError:
        return None


def _address(data: bytes, function: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    if len(data) not in (4, 16):
        fail(f"NET.{function}: an address has 4 or 16 bytes, got {len(data)}")
    return ipaddress.IPv4Address(bytes(data)) if len(data) == 4 else ipaddress.IPv6Address(bytes(data))


def ip_to_string(data: bytes | None) -> str | None:
    """NET.IP_TO_STRING; an IPv4-mapped IPv6 address keeps its dotted tail (``::ffff:192.0.2.128``)."""
    if data is None:
        return None
    address = _address(data, "IP_TO_STRING")
    mapped = getattr(address, "ipv4_mapped", None)
    return f"::ffff:{mapped}" if mapped is not None else str(address)


def ip_net_mask(output_bytes: int | None, prefix: int | None) -> bytes | None:
    if output_bytes is None or prefix is None:
        return None
    if output_bytes not in (4, 16) or not 0 <= prefix <= output_bytes * 8:
        fail(f"NET.IP_NET_MASK: invalid arguments ({output_bytes}, {prefix})")
    bits = output_bytes * 8
    return (((1 << prefix) - 1) << (bits - prefix)).to_bytes(output_bytes, "big")


def ip_trunc(data: bytes | None, prefix: int | None) -> bytes | None:
    if data is None or prefix is None:
        return None
    bits = len(_address(data, "IP_TRUNC").packed) * 8
    if not 0 <= prefix <= bits:
        fail(f"NET.IP_TRUNC: prefix length {prefix} is outside 0..{bits}")
    mask = ((1 << prefix) - 1) << (bits - prefix)
    return (int.from_bytes(data, "big") & mask).to_bytes(bits // 8, "big")


def ipv4_from_int64(value: int | None) -> bytes | None:
    if value is None:
        return None
    if not -(2**31) <= value < 2**32:
        fail(f"NET.IPV4_FROM_INT64: {value} does not fit in 32 bits")
    return (value & 0xFFFFFFFF).to_bytes(4, "big")


def ipv4_to_int64(data: bytes | None) -> int | None:
    if data is None:
        return None
    if len(data) != 4:
        fail(f"NET.IPV4_TO_INT64: an IPv4 address has 4 bytes, got {len(data)}")
    return int.from_bytes(data, "big")


#: GoogleSQL name (after ``NET.``) -> the Python function.
NET: dict[str, Callable[..., Any]] = {
    "HOST": host, "IP_FROM_STRING": ip_from_string, "SAFE_IP_FROM_STRING": safe_ip_from_string,
    "IP_TO_STRING": ip_to_string, "IP_NET_MASK": ip_net_mask, "IP_TRUNC": ip_trunc,
    "IPV4_FROM_INT64": ipv4_from_int64, "IPV4_TO_INT64": ipv4_to_int64,
}


def net(name: str, *args: Any) -> Any:
    return NET[name](*args)


SPECS: tuple[UdfSpec, ...] = (UdfSpec("ls_net", -1, net),)
