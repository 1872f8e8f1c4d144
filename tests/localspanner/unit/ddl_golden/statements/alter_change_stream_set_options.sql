ALTER CHANGE STREAM S SET OPTIONS (retention_period = null, exclude_delete = TRUE, value_capture_type = "NEW_VALUES")
