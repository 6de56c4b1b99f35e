"""Leader election decisions, as pure functions of a partition's state (no ZooKeeper, no I/O).

Clean election (the default): the new leader is the first replica, in assignment order, that is
alive and in the ISR; the ISR written with it is the old ISR minus the dead brokers. Unclean
election (`unclean.leader.election.enable=true`, seed 002's availability-first choice): if no
ISR member is alive, the first live replica leads and the ISR becomes just that replica.
When nobody can lead, the partition is offline (leader -1) and its ISR stays as it was, as Kafka
does, so that the last in-sync replica is recognised and elected when it returns.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from coordinator.cluster.zk_paths import NO_LEADER


@dataclass(frozen=True, slots=True)
class Election:
    leader: int  # NO_LEADER (-1): offline
    isr: list[int]
    unclean: bool = False  # the leader came from outside the ISR

    @property
    def offline(self) -> bool:
        return self.leader == NO_LEADER


def choose_leader(
    replicas: Sequence[int], isr: Collection[int], live: Collection[int], unclean: bool = False
) -> int | None:
    """First live replica (assignment order) in the ISR; with `unclean`, else the first live
    replica. None when there is none."""
    for r in replicas:
        if r in live and r in isr:
            return r
    if unclean:
        for r in replicas:
            if r in live:
                return r
    return None


def elect(
    replicas: Sequence[int], isr: Sequence[int], live: Collection[int], unclean: bool = False
) -> Election:
    """Leader and ISR to write for a partition whose leader is gone (or that is new)."""
    leader = choose_leader(replicas, isr, live, unclean=False)
    if leader is not None:
        return Election(leader, [r for r in isr if r in live])
    if unclean:
        leader = choose_leader(replicas, isr, live, unclean=True)
        if leader is not None:
            return Election(leader, [leader], unclean=True)
    return Election(NO_LEADER, list(isr))


def initial_isr(
    replicas: Sequence[int], live: Collection[int], leader: int, replicated: bool
) -> list[int]:
    """The ISR of a new partition. Without replication (issue 3) followers hold no data, so the
    ISR is the leader alone; with it, every live replica starts in sync (the log is empty)."""
    if leader == NO_LEADER:
        return []
    if not replicated:
        return [leader]
    return [r for r in replicas if r in live]


def remove_from_isr(leader: int, isr: Sequence[int], dead: int) -> tuple[int, list[int]]:
    """A replica's broker died: take it out of the ISR, but never empty the ISR (the last member
    stays, so it can lead again when it returns). If it led, the leader becomes -1."""
    new_isr = list(isr) if len(isr) <= 1 else [r for r in isr if r != dead]
    new_leader = NO_LEADER if leader == dead else leader
    return new_leader, new_isr


def reelect_if_leaderless(
    leader: int,
    isr: Sequence[int],
    replicas: Sequence[int],
    live: Collection[int],
    unclean: bool = False,
) -> tuple[int, list[int]] | None:
    """(leader, isr) to write for a partition with no live leader; None if its leader is live."""
    if leader != NO_LEADER and leader in live:
        return None
    e = elect(replicas, isr, live, unclean)
    return e.leader, e.isr


def reconcile_at_failover(
    leader: int,
    isr: Sequence[int],
    replicas: Sequence[int],
    live: Collection[int],
    unclean: bool = False,
) -> tuple[int, list[int]] | None:
    """(leader, isr) to write when a new controller starts (Kafka's replica state machine marks
    replicas on dead brokers offline at failover): a partition without a live leader is elected
    again; a live leader's ISR loses the brokers that died while no controller was watching."""
    if leader == NO_LEADER or leader not in live:
        return reelect_if_leaderless(leader, isr, replicas, live, unclean)
    dead = [b for b in isr if b not in live]
    return after_brokers_died(leader, isr, replicas, dead, live, unclean) if dead else None


def after_brokers_died(
    leader: int,
    isr: Sequence[int],
    replicas: Sequence[int],
    dead: Collection[int],
    live: Collection[int],
    unclean: bool = False,
) -> tuple[int, list[int]] | None:
    """(leader, isr) to write when `dead` brokers went away; None if the partition is not
    affected. A dead leader is replaced by election; dead followers leave the ISR."""
    if leader in dead:
        e = elect(replicas, isr, live, unclean)
        return e.leader, e.isr
    if not any(b in isr for b in dead):
        return None
    new_leader, new_isr = leader, list(isr)
    for b in dead:
        new_leader, new_isr = remove_from_isr(new_leader, new_isr, b)
    return new_leader, new_isr


def controlled_shutdown_move(
    leader: int,
    isr: Sequence[int],
    replicas: Sequence[int],
    shutting_down: int,
    eligible: Collection[int],
) -> tuple[int, list[int]] | None:
    """(leader, isr) to write when `shutting_down` asks to stop (Kafka's controlled shutdown);
    None when nothing can or need change.

    It leads: the first other replica (assignment order) in the ISR and in `eligible` (live and
    not shutting down) takes over, with the ISR minus the leaving broker; with no such replica
    (for example RF=1) the partition stays where it is and is reported as remaining. It
    follows in the ISR: it leaves the ISR (never emptying it), so acks=all stops waiting for it.
    """
    if leader == shutting_down:
        others = [r for r in isr if r != shutting_down]
        new_leader = choose_leader(replicas, others, eligible)
        if new_leader is None or new_leader == shutting_down:
            return None
        return new_leader, others
    if shutting_down in isr and len(isr) > 1:
        return leader, [r for r in isr if r != shutting_down]
    return None


def preferred_leader_move(
    leader: int, isr: Sequence[int], replicas: Sequence[int], eligible: Collection[int]
) -> tuple[int, list[int]] | None:
    """(leader, isr) that hands leadership to the preferred replica (replicas[0]), or None when
    it already leads or cannot lead (dead, shutting down, or out of the ISR). See
    `preferred_leader_verdict` for telling those two apart."""
    if not replicas or leader == replicas[0]:
        return None
    preferred = replicas[0]
    if preferred in eligible and preferred in isr:
        return preferred, list(isr)
    return None


def preferred_leader_verdict(
    leader: int, isr: Sequence[int], replicas: Sequence[int], eligible: Collection[int]
) -> str:
    """'not_needed' (the preferred replica leads), 'move' or 'not_available'."""
    if replicas and leader == replicas[0]:
        return "not_needed"
    if preferred_leader_move(leader, isr, replicas, eligible) is not None:
        return "move"
    return "not_available"
