"""Limits and time-outs of the local server, as named constants."""

#: A read/write transaction waiting this long for the database's writer gets ABORTED (the client retries).
WRITER_WAIT_SECONDS = 10.0
#: Commits applied together in one SQLite transaction at most (group_commit.py): more share more of
#: the COMMIT's cost, but strong reads wait for the whole group's visibility lock.
MAX_GROUP_COMMITS = 32
#: A transaction holding the writer and idle this long is aborted when another one needs the writer.
TRANSACTION_IDLE_SECONDS = 10.0
#: Multi-use read-only transactions (pinned snapshots) idle this long are released.
SNAPSHOT_IDLE_SECONDS = 60.0
#: A multi-use read-only transaction idle this long gives its SQLite read transaction back (parked_snapshots.py).
SNAPSHOT_PARK_SECONDS = 1.0
#: At most this many pinned snapshots per database; the least recently used one is released beyond it.
MAX_PINNED_SNAPSHOTS = 64
#: Reads at a timestamp further in the future than this are refused.
MAX_FUTURE_READ_SECONDS = 3600.0
#: Streamed results: a message closes once its values reach about this many bytes (the client's limit is 4 MiB).
RESULT_MESSAGE_TARGET_BYTES = 1 << 20
#: ... or this many rows, whichever comes first.
RESULT_MESSAGE_MAX_ROWS = 2_000
#: The longest max_commit_delay a Commit may ask for (Spanner's bound: 500 ms).
MAX_COMMIT_DELAY_NANOS = 500_000_000
#: Mutations per commit, counted as commit statistics count them (transactions.mutation_count), as on Spanner.
MAX_MUTATIONS_PER_COMMIT = 80_000
#: Idle sessions are not collected; this bounds how many a database keeps.
MAX_SESSIONS_PER_DATABASE = 10_000
#: Where `spanner-watcher local-spanner` listens unless told otherwise (loopback only).
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 9010
#: Row versions are kept this long unless ALTER DATABASE sets version_retention_period (Spanner's default).
DEFAULT_VERSION_RETENTION_SECONDS = 3600
#: The range Spanner allows for version_retention_period: one hour to seven days.
MIN_VERSION_RETENTION_SECONDS = 3600
MAX_VERSION_RETENTION_SECONDS = 7 * 24 * 3600
