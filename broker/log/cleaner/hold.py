"""A test hook that holds the log cleaner at a named step, so that a crash test can SIGKILL
the broker exactly there (never a sleep in a test).

`ODRADEK_CLEANER_HOLD=step[,step...]` in the broker's environment names the steps: `mapped`
(the offset map is built), `cleaned` (the `.cleaned` files are written and synced), `swap`
(renamed `.swap`: committed), `deleted` (the old segments renamed `.deleted`) and `checkpoint`
(swapped in, the cleaner checkpoint not yet written). At a named step the cleaner writes
`cleaner-held-<step>` into the log directory's parent (the broker's log_dir) and blocks its
thread for good. Without the variable, `hold` does nothing.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

ENV = "ODRADEK_CLEANER_HOLD"
STEPS = ("mapped", "cleaned", "swap", "deleted", "checkpoint")


def held_steps() -> frozenset[str]:
    return frozenset(s for s in os.environ.get(ENV, "").split(",") if s)


def hold(log_dir: Path, step: str) -> None:
    assert step in STEPS, step
    if step not in held_steps():
        return
    (log_dir / f"cleaner-held-{step}").write_text(step)
    threading.Event().wait()  # until the process is killed
