"""A failed log directory (Kafka's LogDirFailureChannel, KIP-112), as data and pure decisions.

A broker has one or more log directories (`log.dirs`, dir_placement.py). The first I/O error
met while writing, flushing or reading a log in one (an `OSError` such as ENOSPC or EIO, or the
`LogDirIOError` the log raises for one) takes that whole directory offline: `LogManager.fail`
records a `LogDirFailure`, marks every log in it offline (every further call on them raises,
nothing more is written, no clean-shutdown marker is left), and tells its listeners. The
replica manager then stops leading and following those partitions, answers
KAFKA_STORAGE_ERROR for them, and tells the controller (coordinator/controller/log_dirs.py);
the other directories serve on, and once every directory failed the broker shuts down. A
directory comes back only with a restart of the process, whose recovery cuts any torn tail
(log.py, segment.recover).

What is not a failure of the directory: errors a log raises about its input or its state
(a bad batch, an offset out of range, "log is closed" for a deleted partition). Those are
`OdradekError`s other than `LogDirIOError`, and `is_log_dir_failure` says no.
"""

from __future__ import annotations

import errno
from dataclasses import dataclass
from pathlib import Path

from protocol.errors import KafkaStorageError, OdradekError


class LogDirIOError(KafkaStorageError):
    """An I/O call on a log's files failed (the OSError's text is in the message)."""


def is_log_dir_failure(exc: BaseException) -> bool:
    """True when `exc`, raised by a log operation, means the log directory is failing."""
    return isinstance(exc, OSError | LogDirIOError)


@dataclass(frozen=True, slots=True)
class LogDirFailure:
    directory: Path
    action: str  # what was being done: "append to t-0", "flush of t-0", ...
    cause: str  # the error, as text

    def describe(self) -> str:
        """The one line logged when the directory goes offline."""
        return (
            f"log directory {self.directory} is offline: {self.action} failed: {self.cause}; "
            "its partitions are no longer led or followed here until the broker restarts"
        )


def failure_cause(exc: BaseException) -> str:
    """A readable cause: the errno's name (ENOSPC, EIO, ...) when an OS error is behind it (the
    log raises LogDirIOError `from None`, which still keeps the OSError as its context)."""
    text = exc.message if isinstance(exc, OdradekError) else str(exc)
    os_error = exc if isinstance(exc, OSError) else (exc.__cause__ or exc.__context__)
    if isinstance(os_error, OSError) and os_error.errno is not None:
        return f"{errno.errorcode.get(os_error.errno, str(os_error.errno))}: {text}"
    return text
