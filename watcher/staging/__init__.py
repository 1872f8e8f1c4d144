"""Staging: the one contract between capture and the changelog (:mod:`.contract`), and the sink that writes it (:mod:`.sink`)."""

from .contract import (
    BATCH_GLOB,
    BATCH_SUFFIX,
    FIELDS,
    RECORD_FIELDS,
    REQUIRED_FIELDS,
    STAGING_FORMAT,
    Field,
    batch_name,
    record,
    staged_name,
    table_folder,
    to_line,
)

__all__ = ["BATCH_GLOB", "BATCH_SUFFIX", "FIELDS", "RECORD_FIELDS", "REQUIRED_FIELDS", "STAGING_FORMAT", "Field",
           "batch_name", "record", "staged_name", "table_folder", "to_line"]
