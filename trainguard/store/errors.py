"""Errors of the store: what went wrong with a run's objects, and where.

`StoreError` is chained from the backend's own exception (botocore, OSError). The CLI prints
`str(err)` as one line, so each message names the URI or key and what to do.
"""

from __future__ import annotations

from trainguard.errors import TrainGuardError


class StoreError(TrainGuardError):
    """A storage operation failed after its retries."""


class NotFound(StoreError):
    """The key, run or bucket does not exist."""


class AccessDenied(StoreError):
    """The credentials are wrong or lack a permission."""


class FormatError(StoreError):
    """An object is readable but not in a format this version understands."""


class UnsupportedVersion(FormatError):
    """An object has another major run-format version. Readers stop there instead of skipping it: every
    later object of that writer would be skipped too."""


class SegmentCorrupt(FormatError):
    """A segment is truncated or damaged. Readers report it and go on with the next one."""


class RefusedObject(FormatError):
    """A key names something that is not a stored object: a FIFO, a device, a directory, or a symbolic link
    that leads out of the run root. It is never read (a FIFO would block, a device never end); readers
    report it and go on, like a damaged segment."""


class NotMerged(StoreError):
    """Data of a sharded tensor that do not merge exactly into the full tensor's (read each rank's part)."""


class UnknownScheme(StoreError):
    """The URI's scheme has no registered backend."""
