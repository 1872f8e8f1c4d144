ALTER SEQUENCE MySeq SET OPTIONS (skip_range_min = NULL, skip_range_max = NULL, start_with_counter = 1000)
