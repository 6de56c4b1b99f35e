"""Replication's decisions as pure functions of state and an injected time (no I/O, no loop).

- Follower tracking (on the leader): each follower fetch updates a `FollowerState` the way
  Kafka's Replica.updateFetchState does. `last_caught_up_ms` moves to the fetch time when the
  fetch offset reached the leader's log end offset (LEO) at that moment, or to the previous
  fetch time when it reached the LEO the previous fetch saw (the follower was caught up then).
- ISR shrink: a member other than the leader is out of sync when it has not been caught up for
  more than `replica.lag.time.max.ms` (`out_of_sync_replicas`).
- ISR expand: a replica outside the ISR rejoins once its LEO reached the leader's high
  watermark and the offset where the leader's current epoch began (Kafka's rule: everything
  committed is then on it, and it follows this leader's log; `may_join_isr`).
- High watermark: min LEO over the ISR, never backwards (`advance_high_watermark` lives in
  broker/partition.py); a follower's HW is min(leader HW, own LEO) (`follower_high_watermark`).
- acks=all: refused up front when the ISR is below min.insync.replicas (`check_enough_replicas`,
  with the words of `not_enough_replicas_message`);
  answered once the HW passed the batch, with NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR shrank
  below the minimum meanwhile (`produce_outcome`).
- Truncation (KIP-101 / KIP-279): from the leader's OffsetForLeaderEpoch answer and the
  follower's own epoch cache, where to cut and whether to ask again (`truncation_step`); a fetch
  answered OFFSET_OUT_OF_RANGE says where to restart (`out_of_range_restart`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from coordinator.cluster.isr import IsrWriteResult
from protocol.errors import NotEnoughReplicasAfterAppendError, NotEnoughReplicasError

NONE = 0
UNDEFINED = -1


@dataclass(slots=True)
class FollowerState:
    """What the leader knows of one follower; -1 offsets: not fetched since this leadership."""

    log_end_offset: int = UNDEFINED
    last_caught_up_ms: int = 0
    last_fetch_ms: int = 0
    last_fetch_leader_leo: int = UNDEFINED


def record_fetch(state: FollowerState, fetch_offset: int, leader_leo: int, now_ms: int) -> None:
    """Update `state` for a fetch from `fetch_offset` while the leader's LEO is `leader_leo`."""
    if fetch_offset >= leader_leo:
        state.last_caught_up_ms = max(state.last_caught_up_ms, now_ms)
    elif state.last_fetch_leader_leo >= 0 and fetch_offset >= state.last_fetch_leader_leo:
        state.last_caught_up_ms = max(state.last_caught_up_ms, state.last_fetch_ms)
    state.log_end_offset = fetch_offset
    state.last_fetch_ms = now_ms
    state.last_fetch_leader_leo = leader_leo


def out_of_sync_replicas(
    leader_id: int,
    isr: Iterable[int],
    followers: Mapping[int, FollowerState],
    now_ms: int,
    lag_time_max_ms: int,
) -> list[int]:
    """ISR members (never the leader) not caught up for more than `lag_time_max_ms`."""
    out = []
    for replica in isr:
        if replica == leader_id:
            continue
        state = followers.get(replica)
        if state is None or now_ms - state.last_caught_up_ms > lag_time_max_ms:
            out.append(replica)
    return out


def may_join_isr(follower_leo: int, high_watermark: int, leader_epoch_start_offset: int) -> bool:
    return follower_leo >= 0 and follower_leo >= max(high_watermark, leader_epoch_start_offset)


def shrunk_isr(isr: Iterable[int], remove: Iterable[int]) -> list[int]:
    gone = set(remove)
    return [r for r in isr if r not in gone]


def expanded_isr(isr: Iterable[int], add: int) -> list[int]:
    """The ISR with `add` appended (Kafka's order: members keep their places)."""
    members = list(isr)
    return members if add in members else [*members, add]


def follower_high_watermark(leader_hw: int, own_leo: int) -> int:
    return min(leader_hw, own_leo)


def check_enough_replicas(isr_size: int, min_insync_replicas: int) -> int:
    """acks=all before appending: NOT_ENOUGH_REPLICAS when the ISR is below the minimum."""
    return NONE if isr_size >= min_insync_replicas else NotEnoughReplicasError.code


def not_enough_replicas_message(
    name: str, isr: list[int], min_insync_replicas: int, replica_count: int
) -> str:
    """The NOT_ENOUGH_REPLICAS refusal's text; when the minimum is above the replication factor
    it says so: no ISR can ever reach it, so waiting for replicas to come back is in vain."""
    text = f"{name}: ISR {isr} is below min.insync.replicas {min_insync_replicas}"
    if min_insync_replicas > replica_count:
        text += f", more than its {replica_count} replica(s): no write with acks=all can succeed"
    return text


def produce_outcome(
    high_watermark: int, required_offset: int, isr_size: int, min_insync_replicas: int
) -> int | None:
    """An acks=all answer once the HW reached `required_offset` (last offset + 1); None: wait."""
    if high_watermark < required_offset:
        return None
    if isr_size < min_insync_replicas:
        return NotEnoughReplicasAfterAppendError.code
    return NONE


@dataclass(frozen=True, slots=True)
class TruncationStep:
    offset: int  # truncate the log to this offset (>= the LEO: nothing to cut)
    done: bool  # False: ask the leader again with the log's latest epoch after cutting


def truncation_step(
    own_leo: int,
    answer_epoch: int,
    answer_end_offset: int,
    own_end_for_answer_epoch: tuple[int, int],
) -> TruncationStep:
    """Where to cut after the leader answered (answer_epoch, answer_end_offset).

    `own_end_for_answer_epoch` is the follower's own (epoch, end offset) for `answer_epoch`
    (Log.end_offset_for_epoch: the largest epoch <= it and where that ends; (-1, -1) if none).
    - the leader knows no such epoch (end -1): keep the log; fetching from the LEO and the
      OFFSET_OUT_OF_RANGE rule below settle it.
    - the follower has the answered epoch too: cut at the smaller of the two ends (done).
    - the follower does not have it (KIP-279): cut to the end of its own largest epoch below
      it and ask again with the epoch the log then ends in.
    - the follower knows no epoch at or below it: cut to the leader's end (done).
    """
    if answer_end_offset == UNDEFINED:
        return TruncationStep(own_leo, True)
    if answer_epoch == UNDEFINED:
        return TruncationStep(min(answer_end_offset, own_leo), True)
    own_epoch, own_end = own_end_for_answer_epoch
    if own_end == UNDEFINED:
        return TruncationStep(min(answer_end_offset, own_leo), True)
    if own_epoch != answer_epoch:
        return TruncationStep(min(own_end, own_leo), False)
    return TruncationStep(min(own_end, answer_end_offset, own_leo), True)


def out_of_range_restart(
    fetch_offset: int, leader_log_start: int, leader_leo: int
) -> tuple[str, int]:
    """After OFFSET_OUT_OF_RANGE: ("truncate", leader LEO) when the follower is ahead of the
    leader (an unclean leader), else ("restart", leader log start): retention removed what the
    follower needs next, so it drops its log and starts at the leader's start."""
    if leader_leo >= 0 and fetch_offset > leader_leo:
        return "truncate", leader_leo
    return "restart", max(leader_log_start, 0)


def isr_write_verdict(result: IsrWriteResult, broker_id: int, leader_epoch: int) -> str:
    """ "apply" (written: use it), "resign" (another leader or a newer epoch: stop leading), or
    "adopt" (same leadership, the znode changed under us: take its ISR and version, retry)."""
    if result.written:
        return "apply"
    if result.leader != broker_id or result.leader_epoch != leader_epoch:
        return "resign"
    return "adopt"
