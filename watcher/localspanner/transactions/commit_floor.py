"""Strong reads beside a group commit in flight: the timestamp below every commit of the group.

A strong read takes the engine's visibility lock to choose its timestamp and pin its
snapshot, and a group commit holds that lock from its first commit timestamp to its SQLite
COMMIT (``engine.py``). Under a steady write load the writer applies groups most of the time,
so nearly every poll would wait for the rest of a group, a large part of the poll time and of the
detection lag's tail (benchmarks/RESULTS.md, the bench app).

A read does not need that wait: until the group's COMMIT, the database holds exactly the
commits that ended before the group began. As the group begins, its leader takes a read
timestamp from the clock (its *floor*: above every commit before the group, below every
timestamp the group then takes). So a read that pins its snapshot while the group is in
flight, and then finds that the group has not yet begun its COMMIT, reads at the floor: it
sees exactly the commits below it, as a read that had waited for the lock just before the
group would have, and every later commit gets a timestamp above it (external consistency holds). If the COMMIT may
have begun meanwhile, the read takes the lock instead. The group says "COMMIT begins" (:meth:`InFlightGroup.close`) *before* it runs the
COMMIT, so a read that still sees the group open after pinning pinned before the COMMIT.

With ``share_timestamps`` the leader takes no floor (a read's timestamp would end the sharing
of the previous commit's timestamp), so then reads always take the lock.

Thread-safety: :meth:`~InFlightGroup.open` and :meth:`~InFlightGroup.close` are called by the
group's leader holding the visibility lock; readers call :meth:`~InFlightGroup.floor` and
:meth:`~InFlightGroup.still` without a lock (attribute reads and writes are atomic in
Python, and each change of state moves the epoch).

Example:
    >>> g = InFlightGroup()
    >>> g.floor() is None                       # no group in flight: take the lock
    True
    >>> g.open(1_000)
    >>> floor, epoch = g.floor()
    >>> floor, g.still(epoch)                   # pinned before the COMMIT: read at 1000
    (1000, True)
    >>> g.close(); g.still(epoch)               # the COMMIT began: take the lock
    False
"""

from __future__ import annotations


class InFlightGroup:
    """The floor of the group commit in flight, if any, with an epoch that moves at each change."""

    def __init__(self) -> None:
        self._floor: int | None = None
        self._epoch = 0

    def open(self, floor: int) -> None:
        """A group begins (visibility lock held); every timestamp it will take is above ``floor``."""
        self._floor = floor
        self._epoch += 1

    def close(self) -> None:
        """The group's COMMIT is about to begin, or the group ended (visibility lock held)."""
        if self._floor is not None:
            self._floor = None
            self._epoch += 1

    def floor(self) -> tuple[int, int] | None:
        """(floor, epoch) while a group is in flight; None otherwise."""
        epoch = self._epoch
        floor = self._floor
        return None if floor is None else (floor, epoch)

    def still(self, epoch: int) -> bool:
        """Whether the group seen at ``epoch`` is still in flight and has not begun its COMMIT."""
        return self._epoch == epoch
