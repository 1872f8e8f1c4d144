"""The changelog's rules as data: classification, change ids, transaction groups, old values, partial rows,
placement, record layouts, supersession, typed JSON, the unchanged test, watermarks, completeness markers and the whole-batch check.
Engine-free: each rule is data both engines render (Spark SQL, Python).
"""
