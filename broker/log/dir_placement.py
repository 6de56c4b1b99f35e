"""Several log directories (JBOD, Kafka's `log.dirs`, KIP-112/KIP-113): names and pure decisions.

A log directory holds one directory per partition log, named as Kafka names them:

    <topic>-<partition>                      the current log of a partition
    <topic>-<partition>.<32 hex>-future      the future log of a replica being moved here
                                             (AlterReplicaLogDirs; broker/log/dir_moves.py)
    <topic>-<partition>.<32 hex>-delete      a deleted (or replaced) log, removed after
                                             file.delete.delay.ms, or at once at start-up

`next_log_dir` is Kafka's LogManager.nextLogDirs: a new partition goes to the online directory
holding the fewest logs (current and future ones), ties to the first in `log.dirs` order.
`check_unique` is Kafka's start-up check: one partition with a current log in two directories
is an error naming both (a move's swap cut short by a failed disk); a future log is not counted.
`move_step` says what the copier does next for a replica being moved.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from protocol.errors import UsageError

FUTURE_SUFFIX = "-future"
DELETE_SUFFIX = "-delete"
_SUFFIXED = re.compile(r"^(?P<name>.+-\d+)\.(?P<uuid>[0-9a-f]{32})(?P<suffix>-future|-delete)$")


class Kind(enum.Enum):
    CURRENT = "current"
    FUTURE = "future"
    DELETE = "delete"


def entry_kind(name: str) -> tuple[Kind, str]:
    """(kind, `<topic>-<partition>`) of an entry of a log directory; a name without Kafka's
    `.<uuid>-future` / `.<uuid>-delete` suffix is a current log (or not a log at all)."""
    m = _SUFFIXED.match(name)
    if m is None:
        return Kind.CURRENT, name
    kind = Kind.FUTURE if m["suffix"] == FUTURE_SUFFIX else Kind.DELETE
    return kind, m["name"]


def suffixed_name(name: str, uuid_hex: str, suffix: str) -> str:
    """`<topic>-<partition>.<uuid>-future` (or `-delete`)."""
    return f"{name}.{uuid_hex}{suffix}"


def next_log_dir(
    dirs: Sequence[Path], counts: Mapping[Path, int], offline: set[Path]
) -> Path | None:
    """The online directory with the fewest logs, ties to the first of `dirs` (None: all are
    offline)."""
    online = [d for d in dirs if d not in offline]
    if not online:
        return None
    return min(online, key=lambda d: (counts.get(d, 0), dirs.index(d)))


def check_unique(found: Mapping[tuple[str, int], Sequence[Path]]) -> None:
    """UsageError, naming both directories, for a partition whose current log is in two."""
    for (topic, partition), where in found.items():
        if len(where) > 1:
            a, b = where[0], where[1]
            raise UsageError(
                f"duplicate log directories for {topic}-{partition} are found in both {a} and "
                f"{b}: a log directory probably failed while a replica was moved between them; "
                "delete the partition's directory from the one that failed and restart"
            )


def parse_log_dirs(value: object) -> tuple[Path, ...]:
    """`log.dirs` as a TOML list of paths or one comma-separated string; UsageError if empty
    or a directory is named twice."""
    if isinstance(value, str):
        items: list[object] = [v.strip() for v in value.split(",")]
    elif isinstance(value, list | tuple):
        items = list(value)
    else:
        raise UsageError(f"log_dirs must be a list of paths or a comma-separated string, "
                         f"got {value!r}")  # fmt: skip
    if not items or not all(isinstance(v, str | Path) and str(v) for v in items):
        raise UsageError(f"log_dirs must name at least one directory, got {value!r}")
    dirs = tuple(Path(str(v)) for v in items)
    seen = [d.absolute() for d in dirs]
    if len(set(seen)) != len(seen):
        raise UsageError(f"log_dirs names a directory twice: {value!r}")
    return dirs


class Step(enum.Enum):
    TRUNCATE = "truncate"  # the future log is ahead of (or diverged from) the current: cut it
    COPY = "copy"  # batches are left to copy
    SWAP = "swap"  # caught up: the future log becomes the current one


def move_step(
    current_start: int, current_end: int, future_end: int, diverged_at: int | None
) -> tuple[Step, int]:
    """The copier's next step for one replica and the offset it applies at: truncate the future
    log at `diverged_at` (where its epochs part from the current log's) or at the current log
    end when it is past it, start over at the current log start when the future log ends
    below it (retention or DeleteRecords moved it), copy from the future log end, or swap."""
    if diverged_at is not None and diverged_at < future_end:
        return Step.TRUNCATE, diverged_at
    if future_end > current_end:
        return Step.TRUNCATE, current_end
    if future_end < current_start:
        return Step.TRUNCATE, current_start
    if future_end < current_end:
        return Step.COPY, future_end
    return Step.SWAP, future_end
