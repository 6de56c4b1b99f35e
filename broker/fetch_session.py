"""Fetch sessions, the leader's side (KIP-227): a follower's fetch names only what changed.

A follower fetching 1,000 partitions from one leader would otherwise send all of them in every
request and get all of them back in every answer, though one partition moved. The leader keeps
a `FetchSession` per fetcher: its partitions (the last `FetchPartition` sent for each, in a
fixed order) and, per partition, the high watermark and log start offset last answered.

`FetchSessionCache.context(request, now_ms)` turns a request into a `FetchContext`:

    session_epoch  session_id  meaning
    -1 (FINAL)     any         a full fetch without a session; closes the one named
     0 (INITIAL)   any         a full fetch that opens a session (closing the one named); the
                               answer's session_id is 0 when the cache has no room
    n > 0          an id       incremental: the request's partitions replace or join the
                               session's, `forgotten` ones leave it; the session is read whole

An unknown id answers FETCH_SESSION_ID_NOT_FOUND, an epoch other than the one expected
INVALID_FETCH_SESSION_EPOCH; both leave the session alone (the follower starts a new one).
`FetchContext.answer(reads)` gives the reads the answer carries: all of them for a full fetch;
for an incremental one only partitions with records, an error, or a high watermark or log
start offset the follower has not been told. Those answered with records move to
the end of the session's order, so one busy partition cannot starve the others of the
response's byte budget (Kafka does the same). Only `answer` updates what the session last
sent: a read that parks and re-reads changes nothing until it is answered. The replica manager
does not even read a follower's quiet partitions (ReplicaManager._quiet): those the request did
not name (`named`), whose follower is at the log end and was `told` their HW and log start.

Limits: at most `max_slots` sessions (Kafka's max.incremental.fetch.session.cache.slots). When
full, the least recently used session is evicted if unused for `eviction_ms`; otherwise the new
one is refused (answered sessionless). The clock is injected; ids come from an injected RNG.

Sessions keep topic names. The Kafka door's v13+ requests name topics by id; a partition whose
id no topic has at that instant stays in the session's `unresolved` (as Kafka keeps it under a
null name) until the id resolves, since the client will not name it again. The session keeps
the id each topic was named by (`topic_ids`): when the name comes to mean another id (the topic
deleted, or deleted and re-created), `unname` moves its partitions back to `unresolved` under
the id the client knows, and they are answered UNKNOWN_TOPIC_ID, never under the new topic's id
(Kafka's session keeps partitions by topic id) until the client forgets them.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

from protocol.api.fetch import (
    FINAL_EPOCH,
    INITIAL_EPOCH,
    NO_SESSION,
    FetchPartition,
    FetchRequest,
)
from protocol.errors import FetchSessionIdNotFoundError, InvalidFetchSessionEpochError

Key = tuple[str, int]
MAX_EPOCH = 2**31 - 1
DEFAULT_SLOTS = 1000
DEFAULT_EVICTION_MS = 120_000  # Kafka's minimum eviction time for a session


def next_epoch(epoch: int) -> int:
    """The epoch after `epoch`: it wraps to 1, never to INITIAL or FINAL."""
    return 1 if epoch >= MAX_EPOCH else epoch + 1


class _Held:
    """One partition of a session: what the fetcher last asked, and was last told."""

    __slots__ = ("fp", "high_watermark", "log_start_offset")

    def __init__(self, fp: FetchPartition) -> None:
        self.fp = fp
        self.high_watermark = -1
        self.log_start_offset = -1


@dataclass(slots=True)
class FetchSession:
    id: int
    epoch: int  # the epoch the next request must carry
    last_used_ms: int
    partitions: dict[Key, _Held] = field(default_factory=dict)  # in the session's order
    # Kafka door, v13+: partitions named by a topic id no topic had yet (or any more); the
    # door answers them UNKNOWN_TOPIC_ID and moves them into `partitions` once the id is known
    unresolved: dict[uuid.UUID | None, dict[int, FetchPartition]] = field(default_factory=dict)
    topic_ids: dict[str, uuid.UUID] = field(default_factory=dict)  # v13+: the id named by
    _parts: list[tuple[str, FetchPartition]] | None = None  # `partitions` as read: cached

    def update(self, request: FetchRequest) -> frozenset[Key]:
        """Take the request's partitions and forgotten ones; the keys it named."""
        named = []
        for topic in request.topics:
            for fp in topic.partitions:
                key = (topic.name, fp.partition)
                named.append(key)
                held = self.partitions.get(key)
                if held is None:
                    self.partitions[key] = _Held(fp)
                else:
                    held.fp = fp
        for forgotten in request.forgotten:
            for index in forgotten.partitions:
                self.partitions.pop((forgotten.name, index), None)
        if named or request.forgotten:
            self._parts = None
        return frozenset(named)

    def parts(self) -> list[tuple[str, FetchPartition]]:
        """(topic, FetchPartition) in the session's order, rebuilt only after a change."""
        if self._parts is None:
            self._parts = [(key[0], held.fp) for key, held in self.partitions.items()]
        return self._parts

    def unname(self, topic_id_of: Callable[[str], uuid.UUID | None]) -> None:
        """Move the partitions of each topic whose name no longer has the id the client named
        it by (`topic_id_of`: the name's id now) to `unresolved`, under that old id."""
        for name, old in list(self.topic_ids.items()):
            if topic_id_of(name) == old:
                continue
            del self.topic_ids[name]
            moved = {key: held.fp for key, held in self.partitions.items() if key[0] == name}
            for key in moved:
                del self.partitions[key]
            if moved:
                parts = self.unresolved.setdefault(old, {})
                parts.update((index, fp) for (_, index), fp in moved.items())
                self._parts = None

    def to_end(self, key: Key) -> None:
        held = self.partitions.pop(key, None)
        if held is not None:
            self.partitions[key] = held
            self._parts = None


class _Read(Protocol):
    """The part of a broker's PartitionRead a session looks at (broker/partition_read.py)."""

    topic: str
    partition: int
    error_code: int
    high_watermark: int
    log_start_offset: int
    size_bytes: int


R = TypeVar("R", bound=_Read)


@dataclass(slots=True)
class FetchContext:
    """One request as seen through its session: what to read, and what to answer."""

    parts: Sequence[tuple[str, FetchPartition]]
    session: FetchSession | None = None
    incremental: bool = False
    named: frozenset[Key] = frozenset()  # incremental: the partitions the request named

    def told(self, key: Key) -> tuple[int, int] | None:
        """(high watermark, log start offset) the fetcher was last told of `key`, or None."""
        held = None if self.session is None else self.session.partitions.get(key)
        return None if held is None else (held.high_watermark, held.log_start_offset)

    @property
    def session_id(self) -> int:
        return NO_SESSION if self.session is None else self.session.id

    def answer(self, reads: list[R]) -> list[R]:
        session = self.session
        if session is None:
            return reads
        out: list[R] = []
        busy: list[Key] = []
        for r in reads:
            key = (r.topic, r.partition)
            held = session.partitions.get(key)
            if held is None:  # forgotten by a later request meanwhile
                continue
            if self.incremental and not (
                r.size_bytes > 0
                or r.error_code != 0
                or r.high_watermark != held.high_watermark
                or r.log_start_offset != held.log_start_offset
            ):
                continue  # nothing the follower has not been told
            held.high_watermark = r.high_watermark
            held.log_start_offset = r.log_start_offset
            out.append(r)
            if r.size_bytes > 0:
                busy.append(key)
        for key in busy:  # to the end of the order: the others go first next time
            session.to_end(key)
        return out

    def keys(self) -> list[Key]:
        """The partitions read, as keys (where a long poll parks)."""
        if self.session is not None and self.incremental:
            return list(self.session.partitions)
        return [(topic, fp.partition) for topic, fp in self.parts]


def request_parts(request: FetchRequest) -> list[tuple[str, FetchPartition]]:
    return [(t.name, fp) for t in request.topics for fp in t.partitions]


class FetchSessionCache:
    def __init__(
        self,
        max_slots: int = DEFAULT_SLOTS,
        eviction_ms: int = DEFAULT_EVICTION_MS,
        rng: random.Random | None = None,
    ) -> None:
        self.max_slots = max_slots
        self.eviction_ms = eviction_ms
        self._rng = rng or random.Random()
        self._sessions: dict[int, FetchSession] = {}  # least recently used first
        self.evictions = 0  # sessions evicted to make room (metrics)

    def __len__(self) -> int:
        return len(self._sessions)

    @property
    def partitions_cached(self) -> int:
        return sum(len(s.partitions) for s in self._sessions.values())

    def get(self, session_id: int) -> FetchSession | None:
        return self._sessions.get(session_id)

    def context(self, request: FetchRequest, now_ms: int) -> FetchContext:
        """The request's FetchContext; raises FetchSessionIdNotFoundError or
        InvalidFetchSessionEpochError for an incremental request the cache cannot take."""
        epoch = request.session_epoch
        if epoch in (FINAL_EPOCH, INITIAL_EPOCH):
            if request.session_id != NO_SESSION:
                self._sessions.pop(request.session_id, None)
            parts = request_parts(request)
            if epoch == FINAL_EPOCH:
                return FetchContext(parts)
            return FetchContext(parts, self._create(request, now_ms))
        session = self._sessions.get(request.session_id)
        if session is None:
            raise FetchSessionIdNotFoundError(f"fetch session {request.session_id} is not known")
        if epoch != session.epoch:
            raise InvalidFetchSessionEpochError(
                f"fetch session {session.id}: epoch {epoch}, expected {session.epoch}"
            )
        named = session.update(request)
        session.epoch = next_epoch(epoch)
        self._touch(session, now_ms)
        return FetchContext(session.parts(), session, True, named)

    def forget(self, session_id: int) -> None:
        """Drop a session its fetcher was never told of (a throttled first answer)."""
        self._sessions.pop(session_id, None)

    def _create(self, request: FetchRequest, now_ms: int) -> FetchSession | None:
        if len(self._sessions) >= self.max_slots and not self._evict_one(now_ms):
            return None
        session_id = NO_SESSION
        while session_id == NO_SESSION or session_id in self._sessions:
            session_id = self._rng.randint(1, MAX_EPOCH)
        session = FetchSession(session_id, next_epoch(INITIAL_EPOCH), now_ms)
        session.update(request)
        self._sessions[session_id] = session
        return session

    def _evict_one(self, now_ms: int) -> bool:
        """Evict the least recently used session if it has been idle for eviction_ms."""
        oldest = next(iter(self._sessions.values()), None)
        if oldest is None or now_ms - oldest.last_used_ms < self.eviction_ms:
            return False
        del self._sessions[oldest.id]
        self.evictions += 1
        return True

    def _touch(self, session: FetchSession, now_ms: int) -> None:
        session.last_used_ms = now_ms
        self._sessions[session.id] = self._sessions.pop(session.id)
