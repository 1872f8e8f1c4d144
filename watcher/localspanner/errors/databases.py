"""Errors of a database's settings beside its schema: drop protection, encryption, split points."""

from __future__ import annotations

from .base import SpannerError, failed_precondition, invalid_argument


def database_drop_protected(name: str) -> SpannerError:
    return failed_precondition(f"Database {name} has enable_drop_protection set: it cannot be dropped "
                               "until UpdateDatabase sets enable_drop_protection to false.")


def instance_holds_protected_database(instance: str, database: str) -> SpannerError:
    return failed_precondition(f"Instance {instance} cannot be deleted: its database {database} has "
                               "enable_drop_protection set.")


def update_database_needs_mask() -> SpannerError:
    return invalid_argument("UpdateDatabase needs an update_mask naming the fields to update (enable_drop_protection).")


def update_database_field_unsupported(path: str, supported: tuple[str, ...]) -> SpannerError:
    return invalid_argument(f"UpdateDatabase cannot update the field {path!r}; it updates only {', '.join(supported)}.")


def kms_key_name_invalid(name: str) -> SpannerError:
    return invalid_argument(f"Invalid encryption_config kms_key_name {name!r}: expected "
                            "projects/<project>/locations/<location>/keyRings/<key ring>/cryptoKeys/<key>.")


def kms_key_name_and_names() -> SpannerError:
    return invalid_argument("encryption_config sets both kms_key_name and kms_key_names: give one of them.")
