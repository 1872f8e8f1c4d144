"""Transactions and commits: their records, the writer, group commit, parked snapshots, reads by key."""
