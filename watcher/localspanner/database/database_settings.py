"""What a database carries beside its schema and its options: drop protection and encryption keys.

``enable_drop_protection`` (set with UpdateDatabase) makes DropDatabase, and DeleteInstance of its
instance, fail until it is cleared. ``kms_key_names`` are the Cloud KMS keys CreateDatabase's
encryption_config named: the local server encrypts nothing and only checks and reports them,
as GetDatabase's encryption_config and encryption_info. Both are kept in the server's state file.

Example:
    >>> check_kms_key_names(["projects/p/locations/us-central1/keyRings/r/cryptoKeys/k"])
    ('projects/p/locations/us-central1/keyRings/r/cryptoKeys/k',)
    >>> check_update_fields(["enable_drop_protection"])
    ('enable_drop_protection',)
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from .. import errors

#: The fields UpdateDatabase may change (as on Spanner).
UPDATABLE_FIELDS = ("enable_drop_protection",)

_KMS_KEY = re.compile(r"projects/[^/]+/locations/[^/]+/keyRings/[^/]+/cryptoKeys/[^/]+")


def check_kms_key_names(names: Iterable[str]) -> tuple[str, ...]:
    """The KMS key names if each is a full key name; INVALID_ARGUMENT naming the first that is not."""
    names = tuple(names)
    for name in names:
        if not _KMS_KEY.fullmatch(name):
            raise errors.kms_key_name_invalid(name)
    return names


def check_update_fields(paths: Iterable[str]) -> tuple[str, ...]:
    """An UpdateDatabase mask's paths if each names an updatable field; INVALID_ARGUMENT naming the first that does not."""
    paths = tuple(paths)
    if not paths:
        raise errors.update_database_needs_mask()
    for path in paths:
        if path not in UPDATABLE_FIELDS:
            raise errors.update_database_field_unsupported(path, UPDATABLE_FIELDS)
    return paths
