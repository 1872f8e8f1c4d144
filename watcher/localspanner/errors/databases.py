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


def split_point_needs_table_or_index(position: int) -> SpannerError:
    return invalid_argument(f"Split point {position} names neither a table nor an index.")


def split_point_table_not_found(position: int, table: str) -> SpannerError:
    return invalid_argument(f"Split point {position} names the table {table}, which does not exist.")


def split_point_index_not_found(position: int, index: str) -> SpannerError:
    return invalid_argument(f"Split point {position} names the index {index}, which does not exist.")


def split_point_index_of_other_table(position: int, index: str, index_table: str, table: str) -> SpannerError:
    return invalid_argument(f"Split point {position} names the index {index} of table {index_table} "
                            f"with the table {table}: the table must be the index's own.")


def split_point_without_keys(position: int, target: str) -> SpannerError:
    return invalid_argument(f"Split point {position} (on {target}) has no keys.")


def split_key_invalid(position: int, target: str, detail: str) -> SpannerError:
    return invalid_argument(f"Split point {position} (on {target}) has an invalid key: {detail}")


def split_points_expire_too_late(position: int, expire_time: str, latest: str) -> SpannerError:
    return invalid_argument(f"Split point {position} has expire_time {expire_time}, later than {latest} "
                            "(at most 30 days from now).")


SPLIT_KEY_EMPTY = "a key needs at least one key part"


def split_points_none() -> SpannerError:
    return invalid_argument("AddSplitPoints needs at least one split point.")
