"""The staging process of the sink crash test: stage big batches into a folder URL until killed.

Usage: python -m tests.staging.sink_crash_child STAGING_URL ROUND BATCH_SIZE

Batch ``n`` of round ``r`` holds keys ``r * 10**9 + n * BATCH_SIZE`` onward, one record per
key, so a reader can tell a whole batch from a cut one. Prints ``staged <n>`` after each.
"""

from __future__ import annotations

import sys


def main(argv: list[str]) -> int:
    from watcher.model import Change, from_nanos
    from watcher.staging.sink import StagingSink

    url, round_, size = argv[0], int(argv[1]), int(argv[2])
    sink = StagingSink(url, watcher_id=f"crash-{round_}")  # fsync on, as in production
    base = round_ * 10**9
    n = 0
    while True:
        first = base + n * size
        changes = [Change("Items", (k,), {"Id": k, "Name": "x" * 40}, from_nanos(1_714_557_600_000_000_000 + k), None,
                          from_nanos(1_714_557_600_000_000_000 + k + 1)) for k in range(first, first + size)]
        sink.write(changes, {"Id": "INT64", "Name": "STRING(MAX)"}, ["Id"])
        print(f"staged {n}", flush=True)
        n += 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
