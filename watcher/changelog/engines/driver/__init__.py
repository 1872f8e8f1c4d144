"""The changelog engine for small runs: the rules (:mod:`...rules`) rendered in Python on staged rows as the
driver reads them (:mod:`...input.staged`, :mod:`...input.frame_rows`), each row given its previous row,
duplicate flag, mod_type, old values and change_id (:mod:`.window`), and written to the same Delta tables
as the Spark engine (:mod:`.engine`). A run holding a row these readers cannot render exactly as Spark
(:class:`...input.Ineligible`) goes to Spark.
"""
