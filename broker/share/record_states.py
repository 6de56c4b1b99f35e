"""An in-flight record's state machine in a share partition (KIP-932, Kafka's
`RecordState` and `SharePartition`'s transitions), as one table.

States (Kafka's numbers, which the share-group state records would carry):
- AVAILABLE (0): may be acquired by the next ShareFetch of any member.
- ACQUIRED (1): held by one member under an acquisition lock until it is acknowledged or the
  lock expires (`share.record.lock.duration.ms`).
- ACKNOWLEDGED (2): accepted; never delivered again. Terminal.
- ARCHIVED (4): rejected, a gap (no record at that offset), or past the delivery count limit
  (`share.delivery.count.limit`); never delivered again. Terminal.

Events: ACQUIRE (a ShareFetch takes it; the delivery count goes up), the acknowledgement types
(Kafka's numbers: GAP 0, ACCEPT 1, RELEASE 2, REJECT 3, RENEW 4 (KIP-1222: the lock starts
again)), LOCK_EXPIRED and MEMBER_GONE (its member left or its share session closed).

A record made AVAILABLE again whose delivery count has reached the limit is ARCHIVED instead
(`next_state`): it was delivered as often as the group allows.
"""

from __future__ import annotations

import enum


class RecordState(enum.IntEnum):
    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVED = 4


class Event(enum.IntEnum):
    # acknowledgement types, Kafka's numbers (ShareFetch / ShareAcknowledge AcknowledgeTypes)
    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4
    # the partition's own events
    ACQUIRE = 10
    LOCK_EXPIRED = 11
    MEMBER_GONE = 12


ACKNOWLEDGE_TYPES = frozenset({Event.GAP, Event.ACCEPT, Event.RELEASE, Event.REJECT, Event.RENEW})
TERMINAL = frozenset({RecordState.ACKNOWLEDGED, RecordState.ARCHIVED})

A, Q, K, X = (RecordState.AVAILABLE, RecordState.ACQUIRED, RecordState.ACKNOWLEDGED,
              RecordState.ARCHIVED)  # fmt: skip

# (state, event) -> the state after it; a pair not here is refused (INVALID_RECORD_STATE for an
# acknowledgement). AVAILABLE after RELEASE, LOCK_EXPIRED or MEMBER_GONE becomes ARCHIVED at the
# delivery count limit (`next_state`).
TRANSITIONS: dict[tuple[RecordState, Event], RecordState] = {
    (A, Event.ACQUIRE): Q,  # a fetch takes it (delivery count + 1)
    (Q, Event.ACCEPT): K,  # processed
    (Q, Event.RELEASE): A,  # give it back for another delivery
    (Q, Event.REJECT): X,  # unprocessable: never again
    (Q, Event.GAP): X,  # no record at this offset (compacted away, a control record)
    (Q, Event.RENEW): Q,  # still working on it: the lock starts again
    (Q, Event.LOCK_EXPIRED): A,  # its member took too long
    (Q, Event.MEMBER_GONE): A,  # its member left, or its share session closed
}


def next_state(
    state: RecordState, event: Event, delivery_count: int, delivery_count_limit: int
) -> RecordState | None:
    """The state after `event`, None when the event is not allowed in `state`."""
    after = TRANSITIONS.get((state, event))
    if after is RecordState.AVAILABLE and delivery_count >= delivery_count_limit:
        return RecordState.ARCHIVED
    return after
