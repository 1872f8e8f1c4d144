"""spanner-watcher: watch Cloud Spanner tables for changes and build a changelog."""

__version__ = "0.1.0"
