"""The chaos timeline: `odradek chaos run|faults` appends one JSON object a line to
<cluster dir>/chaos-events.jsonl, and the console shows the file's tail.

An event: {"t": unix seconds, "event": "injected" | "healed" | "skipped" | "verdict" | ...,
plus what the event says ("kind", "target", "detail", "verdict")}. Writing never fails the run
(the timeline is for watching, the run's report is the record); reading takes the last
`TAIL_BYTES` of the file only and skips lines that do not parse (a line being written).
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path
from typing import Any

EVENTS_FILE = "chaos-events.jsonl"
TAIL_BYTES = 64 * 1024
TAIL_EVENTS = 200


def append_event(cluster_dir: Path | str, event: str, **fields: Any) -> None:
    """Append one event (one write of one line, with O_APPEND: lines never interleave)."""
    line = json.dumps({"t": round(time.time(), 3), "event": event, **fields}, default=str) + "\n"
    with contextlib.suppress(OSError):
        fd = os.open(Path(cluster_dir) / EVENTS_FILE, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)


def parse_tail(data: bytes, limit: int = TAIL_EVENTS) -> list[dict[str, Any]]:
    """The last `limit` whole events in `data` (the file's tail: its first line may be cut)."""
    out = []
    for raw in data.splitlines():
        try:
            event = json.loads(raw)
        except ValueError:
            continue
        if isinstance(event, dict) and "event" in event:
            out.append(event)
    return out[-limit:]


def read_tail(cluster_dir: Path | str) -> list[dict[str, Any]]:
    path = Path(cluster_dir) / EVENTS_FILE
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - TAIL_BYTES))
            data = f.read(TAIL_BYTES)
    except OSError:
        return []
    return parse_tail(data)
