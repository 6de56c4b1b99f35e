"""One member's step towards the target assignment (Kafka's CurrentAssignmentBuilder), pure.

A member holds `assigned` (what it may consume) and `pending_revocation` (what it must give
up). A partition is owned by a member while it is in either set, and is given to another
member only once no one owns it: so no partition ever has two owners, and a member keeps
consuming the partitions it keeps. From its state (consumer_states.MemberState):

- STABLE at the target epoch: nothing to do. Otherwise compute the next assignment.
- UNREVOKED_PARTITIONS: stay until the heartbeat's owned partitions (None: not sent, taken as
  still owning) hold none of `pending_revocation`; then compute the next assignment at epoch+1.
- UNRELEASED_PARTITIONS: compute the next assignment (picks up partitions freed since).

The next assignment: keep = assigned & target; revoke = assigned - target; add = target - keep
less what another member still owns (`owner_epoch(tp) != -1`: unreleased). If something must be
revoked and the member still owns it: UNREVOKED_PARTITIONS at its current epoch, assigned =
keep. Else the member moves to the target epoch with keep + add, UNRELEASED_PARTITIONS if
something was held back, else STABLE.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from coordinator.group.consumer_states import MemberState

TopicId = uuid.UUID
Assignment = Mapping[TopicId, frozenset[int]]


class FencedError(Exception):
    """The member must abandon its partitions and rejoin (FENCED_MEMBER_EPOCH)."""


@dataclass(frozen=True, slots=True)
class Reconciled:
    state: MemberState = MemberState.STABLE
    member_epoch: int = 0
    previous_member_epoch: int = -1
    assigned: Mapping[TopicId, frozenset[int]] = field(default_factory=dict)
    pending_revocation: Mapping[TopicId, frozenset[int]] = field(default_factory=dict)


def _owns_any(owned: Assignment | None, revoking: Assignment) -> bool:
    if owned is None:
        return True
    return any(owned.get(t, frozenset()) & ps for t, ps in revoking.items())


def reconcile(
    member: Reconciled,
    target_epoch: int,
    target: Assignment,
    owner_epoch: Callable[[TopicId, int], int],
    owned: Assignment | None,
) -> Reconciled:
    """The member's next step; `owner_epoch(t, p)`: the epoch of the member owning the
    partition (-1: free); `owned`: the partitions the heartbeat says it owns (None: not sent)."""
    if member.state is MemberState.STABLE:
        if member.member_epoch == target_epoch:
            return member
        return _next(member, member.member_epoch, target_epoch, target, owner_epoch, owned)
    if member.state is MemberState.UNREVOKED_PARTITIONS:
        if _owns_any(owned, member.pending_revocation):
            return member
        return _next(member, member.member_epoch + 1, target_epoch, target, owner_epoch, owned)
    if member.state is MemberState.UNRELEASED_PARTITIONS:
        return _next(member, member.member_epoch, target_epoch, target, owner_epoch, owned)
    if owned is None or any(owned.values()):
        raise FencedError(
            "The consumer group member is in a unknown state. "
            "The member must abandon all its partitions and rejoin."
        )
    return _next(member, target_epoch, target_epoch, target, owner_epoch, owned)


def _with_epoch(member: Reconciled, epoch: int) -> tuple[int, int]:
    """(member epoch, previous member epoch) as Kafka's updateMemberEpoch sets them."""
    if epoch == member.member_epoch:
        return epoch, member.previous_member_epoch
    return epoch, member.member_epoch


def _next(
    member: Reconciled,
    epoch: int,
    target_epoch: int,
    target: Assignment,
    owner_epoch: Callable[[TopicId, int], int],
    owned: Assignment | None,
) -> Reconciled:
    keep: dict[TopicId, frozenset[int]] = {}
    revoke: dict[TopicId, frozenset[int]] = {}
    add: dict[TopicId, frozenset[int]] = {}
    unreleased = False
    for t in set(target) | set(member.assigned):
        want = target.get(t, frozenset())
        have = member.assigned.get(t, frozenset())
        if have & want:
            keep[t] = have & want
        if have - want:
            revoke[t] = have - want
        free = frozenset(p for p in want - have if owner_epoch(t, p) == -1)
        if len(free) < len(want - have):
            unreleased = True
        if free:
            add[t] = free
    if revoke and _owns_any(owned, revoke):
        e, prev = _with_epoch(member, epoch)
        return Reconciled(MemberState.UNREVOKED_PARTITIONS, e, prev, keep, revoke)
    for t, ps in add.items():
        keep[t] = keep.get(t, frozenset()) | ps
    e, prev = _with_epoch(member, target_epoch)
    state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
    return Reconciled(state, e, prev, keep, {})
