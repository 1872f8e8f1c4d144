"""INFORMATION_SCHEMA and SPANNER_SYS: the system views, computed from a catalog."""
