"""Capture variants that poll a helper table written by the application, and translate its rows.

Change sets (:mod:`.change_sets`: tables without a commit-timestamp column) and history tables
(:mod:`.history`: every version, deletes included), both on :mod:`.translating`.
"""
