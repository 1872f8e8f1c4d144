"""Errors of user-managed instance configs, instance partitions and instance settings."""

from __future__ import annotations

from .base import Code, SpannerError, failed_precondition, invalid_argument


def instance_config_already_exists(name: str) -> SpannerError:
    return SpannerError(Code.ALREADY_EXISTS, f"Instance config already exists: {name}")


def instance_config_id_invalid(config_id: str) -> SpannerError:
    return invalid_argument(
        f"Invalid instance config id {config_id!r}: a user-managed config's id must start with 'custom-', "
        "be at most 64 characters and contain only lowercase letters, digits and '-'.")


def base_config_invalid(base_config: str) -> SpannerError:
    return invalid_argument(f"Invalid base_config {base_config!r}: it must name a Google-managed instance config "
                            "(for example regional-us-central1 or nam3).")


def replicas_missing_base_replica(location: str, replica_type: str, base_config: str) -> SpannerError:
    return invalid_argument(
        f"The replicas must include every replica of the base config {base_config}: the {replica_type} "
        f"replica in {location} is missing.")


def replica_not_optional(location: str, replica_type: str) -> SpannerError:
    return invalid_argument(
        f"The {replica_type} replica in {location} is not a replica of the base config: a user-managed config "
        "may add READ_ONLY replicas only.")


def replica_incomplete(index: int) -> SpannerError:
    return invalid_argument(f"Replica {index} of the instance config needs a location and a type "
                            "(READ_WRITE, READ_ONLY or WITNESS).")


def google_managed_config_immutable(name: str, action: str) -> SpannerError:
    return failed_precondition(
        f"Instance config {name} is Google-managed and cannot be {action}; only user-managed configs "
        "(ids starting with 'custom-') can.")


def instance_config_in_use(name: str, instance: str) -> SpannerError:
    return failed_precondition(
        f"Instance config {name} cannot be deleted: instance {instance} uses it. Delete or move the instance first.")


def etag_mismatch(kind: str, name: str, given: str, current: str) -> SpannerError:
    return SpannerError(Code.ABORTED, f"The etag {given!r} of {kind} {name} does not match its current etag "
                                      f"{current!r}: read it again and retry with the new etag.")


def update_mask_field_unknown(method: str, path: str, allowed: tuple[str, ...]) -> SpannerError:
    return invalid_argument(f"{method} cannot change field {path!r}: the field mask may name {', '.join(allowed)}.")


def update_mask_empty(method: str) -> SpannerError:
    return invalid_argument(f"{method} needs a field mask naming the fields to change.")


def instance_setting_invalid(field: str, value: str, allowed: tuple[str, ...]) -> SpannerError:
    return invalid_argument(f"Invalid {field} {value!r}: expected one of {', '.join(allowed)}.")


def instance_partition_not_found(name: str) -> SpannerError:
    return SpannerError(Code.NOT_FOUND, f"Instance partition not found: {name}")


def instance_partition_already_exists(name: str) -> SpannerError:
    return SpannerError(Code.ALREADY_EXISTS, f"Instance partition already exists: {name}")


def instance_partition_id_invalid(partition_id: str) -> SpannerError:
    return invalid_argument(
        f"Invalid instance partition id {partition_id!r}: it must be 2-64 characters, start with a lowercase "
        "letter, end with a letter or digit, and contain only lowercase letters, digits and '-'.")


def instance_partition_config_missing(name: str) -> SpannerError:
    return invalid_argument(f"Instance partition {name} needs a config (projects/<project>/instanceConfigs/<config>).")
