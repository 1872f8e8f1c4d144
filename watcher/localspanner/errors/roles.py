"""Errors of fine-grained access control: role DDL, GRANT / REVOKE, and requests a role may not make."""

from __future__ import annotations

from .base import Code, SpannerError, failed_precondition


def role_not_found(name: str) -> SpannerError:
    return SpannerError(Code.NOT_FOUND, f"Role not found: {name}")


def role_exists(name: str) -> SpannerError:
    return SpannerError(Code.ALREADY_EXISTS, f"Duplicate name in schema: {name} (a role of that name already exists).")


def system_role_reserved(name: str) -> SpannerError:
    """CREATE or DROP of a built-in role, or a new role whose name takes the ``spanner_`` prefix they use."""
    return failed_precondition(f"Role {name} is a system role, or its name is reserved for them (public, spanner_...): "
                               "system roles cannot be created or dropped")


def role_in_use(name: str, uses: str) -> SpannerError:
    """DROP ROLE while the role has privileges or memberships: they must be revoked first."""
    return failed_precondition(f"Cannot drop role {name}: {uses}. Revoke them first (REVOKE ... FROM ROLE {name}).")


def system_role_privileges(name: str) -> SpannerError:
    return failed_precondition(f"Privileges cannot be granted to or revoked from the system role {name}; "
                               "grant membership in it instead (GRANT ROLE ...).")


def privilege_not_applicable(privilege: str, kind: str, name: str) -> SpannerError:
    return SpannerError(Code.INVALID_ARGUMENT, f"Privilege {privilege} cannot be granted on {kind.lower()} {name}")


def privilege_columns_not_allowed(privilege: str) -> SpannerError:
    return SpannerError(Code.INVALID_ARGUMENT,
                        f"Privilege {privilege} cannot name columns: grant it on the whole table")


def role_membership_cycle(role: str, grantee: str) -> SpannerError:
    return failed_precondition(f"Cannot grant role {role} to role {grantee}: {role} would then be a member of itself")


def change_stream_function_not_found(name: str) -> SpannerError:
    return SpannerError(Code.NOT_FOUND, f"Table function not found: {name} (a change stream's read function "
                                        "is READ_<stream>; in PostgreSQL spanner.read_json_<stream> or "
                                        "spanner.read_proto_bytes_<stream>)")


def session_role_not_found(role: str, database: str) -> SpannerError:
    """CreateSession with a ``database_role`` the database does not have."""
    return SpannerError(Code.PERMISSION_DENIED,
                        f"Role not found: {role} in database {database}. Create it with CREATE ROLE {role}, "
                        "or create the session without a database role")


def privilege_denied(role: str, privilege: str, kind: str, name: str, column: str | None = None) -> SpannerError:
    """A request the role (with its memberships and ``public``) holds no privilege for.

    >>> privilege_denied("analyst", "SELECT", "TABLE", "Singers", "Name").message.split(":")[0]
    'Role analyst does not have required privileges on table Singers'
    """
    what = f"{privilege} on column {name}.{column}" if column is not None else f"{privilege} on {kind.lower()} {name}"
    cols = f"({column}) " if column is not None else " "
    return SpannerError(Code.PERMISSION_DENIED,
                        f"Role {role} does not have required privileges on {kind.lower()} {name}: it needs {what}. "
                        f"Grant it with GRANT {privilege}{cols}ON {kind} {name} TO ROLE {role}")


def system_view_denied(role: str, view: str) -> SpannerError:
    """A query of SPANNER_SYS by a role that is not a member of ``spanner_sys_reader``."""
    return SpannerError(Code.PERMISSION_DENIED,
                        f"Role {role} does not have required privileges on table {view}: it needs SELECT on "
                        f"SPANNER_SYS, which members of spanner_sys_reader have. Grant it with "
                        f"GRANT ROLE spanner_sys_reader TO ROLE {role}")
