"""The fault kinds and a seeded schedule of them (pure: same seed, same schedule).

A schedule is a list of `Step`s, one per fault cycle: which kind, which partition's leader (or
which pick among the live brokers) it aims at, how long the fault is held, and how long the
cluster runs healthy afterwards. Targets are indices resolved against the live cluster when the
step runs (runner.py), so the schedule itself depends only on the seed, the kinds and the count.

    kind          what it does                                          needs
    kill-leader   SIGKILL the leader of a partition, restart it          -
    kill-ctrl     SIGKILL the controller, restart it                     -
    kill-two      SIGKILL two brokers at once, restart both              -
    term          SIGTERM a partition's leader (controlled shutdown)     -
    zombie        SIGSTOP a leader past the ZooKeeper session, SIGCONT   -
    torn-tail     SIGKILL a follower, tear its active segment's tail     -
    net-isolate   cut a broker from its peers and ZooKeeper              root, --netns cluster
    net-zk        cut a broker from ZooKeeper only                       root, --netns cluster
    disk-full     fill the tmpfs under a broker's log directory          root, --tmpfs cluster
    kill-txn-coord  SIGKILL the transaction coordinator of one of the    --workload txn
                  workload's transactional ids, restart it
    kill-member   SIGKILL a share group member's process, start a new    --workload share
                  member
    kill-share-coord  SIGKILL the share coordinator of one of the share  --workload share
                  group's share partitions, restart it
"""

from __future__ import annotations

import random
from dataclasses import dataclass

KINDS: dict[str, str] = {
    "kill-leader": "SIGKILL of a partition leader",
    "kill-ctrl": "SIGKILL of the controller",
    "kill-two": "SIGKILL of two brokers at once",
    "term": "SIGTERM (controlled shutdown) of a leader",
    "zombie": "SIGSTOP of a leader past the session timeout, then SIGCONT",
    "torn-tail": "SIGKILL of a follower and a torn tail on its active segment",
    "net-isolate": "a leader cut from the other brokers and ZooKeeper",
    "net-zk": "a leader cut from ZooKeeper only",
    "disk-full": "the disk under a leader's log directory full",
    "kill-txn-coord": "SIGKILL of a transactional id's transaction coordinator",
    "kill-member": "SIGKILL of a share group member's process, and a new member",
    "kill-share-coord": "SIGKILL of a share partition's share coordinator",
}
ROOT_KINDS = frozenset({"net-isolate", "net-zk", "disk-full"})
NETNS_KINDS = frozenset({"net-isolate", "net-zk"})
TMPFS_KINDS = frozenset({"disk-full"})
TXN_KINDS = frozenset({"kill-txn-coord"})  # need transactional ids: --workload txn
SHARE_KINDS = frozenset({"kill-member", "kill-share-coord"})  # need a share group: --workload share
HOLD_S = (1.0, 3.0)  # a fault is held this long (zombie: past the session timeout instead)
CALM_S = (1.0, 2.5)  # then the cluster runs healthy this long after healing


@dataclass(frozen=True)
class Step:
    index: int
    kind: str
    pick: int  # the partition whose leader is aimed at (mod partitions), or a broker pick
    hold_s: float
    calm_s: float


def parse_kinds(text: str | None) -> list[str]:
    """`--faults a,b,c` (None or "all": every kind). Unknown names raise ValueError."""
    if text is None or text.strip() in ("", "all"):
        return list(KINDS)
    kinds = [k.strip() for k in text.split(",") if k.strip()]
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        raise ValueError(f"unknown fault kind(s) {', '.join(unknown)}; known: {', '.join(KINDS)}")
    return kinds


def schedule(seed: int, kinds: list[str], cycles: int) -> list[Step]:
    """`cycles` steps; every kind comes up once before any repeats (shuffled by the seed)."""
    if not kinds:
        raise ValueError("no fault kinds to schedule")
    rng = random.Random(seed)
    steps: list[Step] = []
    deck: list[str] = []
    for i in range(cycles):
        if not deck:
            deck = list(kinds)
            rng.shuffle(deck)
        kind = deck.pop()
        steps.append(Step(
            i, kind, rng.randrange(1 << 16),
            round(rng.uniform(*HOLD_S), 2), round(rng.uniform(*CALM_S), 2),
        ))  # fmt: skip
    return steps


def cycles_for(duration_s: float) -> int:
    """How many steps fill about `duration_s` (a cycle averages hold + calm + recovery)."""
    per_cycle = sum(HOLD_S) / 2 + sum(CALM_S) / 2 + 4.0
    return max(1, round(duration_s / per_cycle))
