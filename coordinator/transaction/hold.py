"""A test hook that holds the transaction coordinator at a named step of ending a transaction,
so that a fault test can SIGKILL the coordinator exactly there (never a sleep in a test).

`ODRADEK_TXN_HOLD=step[,step...]` in the broker's environment names the steps: `end_txn` (an
EndTxn arrived, nothing written yet), `prepared` (PrepareCommit / PrepareAbort is written, no
marker yet) and `markers` (the markers of the first leader are written, the others not). At a
named step the coordinator writes `txn-held-<step>` (its process id, a space, the
transactional id) into `ODRADEK_TXN_HOLD_DIR` and that transaction waits for good; the rest of
the broker goes on, until the test writes `txn-release-<step>` there (or kills the broker). A
hold happens once per directory: every broker of a test cluster gets the same variables, and
the coordinator that takes over from a killed one must not hold again. Without the variable,
`reach` returns at once.
"""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path

ENV = "ODRADEK_TXN_HOLD"
DIR_ENV = "ODRADEK_TXN_HOLD_DIR"
STEPS = ("end_txn", "prepared", "markers")
RELEASE_POLL_S = 0.05
log = logging.getLogger("odradek.coordinator.transaction")


def held_steps() -> frozenset[str]:
    return frozenset(s for s in os.environ.get(ENV, "").split(",") if s)


async def reach(step: str, transactional_id: str) -> None:
    assert step in STEPS, step
    if step not in held_steps():
        return
    directory = os.environ.get(DIR_ENV)
    if not directory:
        return
    marker = Path(directory) / f"txn-held-{step}"
    try:
        with marker.open("x") as f:  # once: the first coordinator to get here holds
            f.write(f"{os.getpid()} {transactional_id}")
    except FileExistsError:
        return
    log.warning("transaction %s held at %s (%s)", transactional_id, step, ENV)
    release = Path(directory) / f"txn-release-{step}"
    while not release.exists():  # a test hook: polled, not a timed wait of the coordinator's
        await asyncio.sleep(RELEASE_POLL_S)
    log.warning("transaction %s released at %s", transactional_id, step)
