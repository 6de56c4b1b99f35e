"""Share sessions (KIP-932, Kafka's ShareSessionCache and ShareSessionContext), pure: one
session per (group, member) on each leader, holding the partitions the member fetches, so an
incremental ShareFetch names only what it adds (`topics`) or drops (`forgotten`).

Epochs, as Kafka's: 0 opens a session (replacing the member's old one; it may carry no
acknowledgements: INVALID_REQUEST), a positive epoch must be the session's next one
(INVALID_SHARE_SESSION_EPOCH; no session: SHARE_SESSION_NOT_FOUND) and moves it on, -1
acknowledges and closes it (with forgotten partitions: INVALID_REQUEST). ShareAcknowledge
may not open one (epoch 0: INVALID_SHARE_SESSION_EPOCH). At most `max_sessions`: a new one
then takes the place of one idle for `evictable_after_ms`, else SHARE_SESSION_LIMIT_REACHED.
A session remembers the connection that opened it (`connection`, any token): when that
connection closes, the session ends (`close_for`), as Kafka's ShareSessionCache does on a
disconnect; a session opened again on another connection is not ended by the old one's close.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

NONE = 0
INVALID_REQUEST = 42
SHARE_SESSION_NOT_FOUND = 122
INVALID_SHARE_SESSION_EPOCH = 123
SHARE_SESSION_LIMIT_REACHED = 133
INITIAL_EPOCH = 0
FINAL_EPOCH = -1
MAX_EPOCH = 2**31 - 1
Key = tuple[str, str]  # (group id, member id)
Part = tuple[str, int]  # (topic, partition)


@dataclass(slots=True)
class ShareSession:
    group_id: str
    member_id: str
    epoch: int = 1  # the next request's
    parts: dict[Part, None] = field(default_factory=dict)  # in the order added
    last_used_ms: int = 0
    connection: object = None  # the connection that opened it


@dataclass(frozen=True, slots=True)
class Opened:
    """What a request does to its session: an error code, the session (None on an error),
    and whether the request closes it (FINAL_EPOCH) or replaced an older one (`replaced`)."""

    error_code: int
    session: ShareSession | None = None
    closing: bool = False
    replaced: bool = False


class ShareSessions:
    def __init__(self, max_sessions: int = 2_000, evictable_after_ms: int = 120_000) -> None:
        self.max_sessions = max_sessions
        self.evictable_after_ms = evictable_after_ms
        self.sessions: dict[Key, ShareSession] = {}

    def for_fetch(
        self, key: Key, epoch: int, added: Sequence[Part], forgotten: Sequence[Part],
        has_acks: bool, now_ms: int, connection: object = None,
    ) -> Opened:  # fmt: skip
        if epoch == INITIAL_EPOCH:
            if has_acks:
                return Opened(INVALID_REQUEST)
            return self._open(key, added, now_ms, connection)
        if epoch == FINAL_EPOCH and forgotten:
            return Opened(INVALID_REQUEST)
        opened = self._continue(key, epoch, now_ms)
        if opened.session is not None and epoch != FINAL_EPOCH:
            for part in forgotten:
                opened.session.parts.pop(part, None)
            for part in added:
                opened.session.parts.setdefault(part, None)
        return opened

    def for_acknowledge(self, key: Key, epoch: int, now_ms: int) -> Opened:
        if epoch == INITIAL_EPOCH:
            return Opened(INVALID_SHARE_SESSION_EPOCH)
        return self._continue(key, epoch, now_ms)

    def close(self, key: Key) -> None:
        self.sessions.pop(key, None)

    def close_for(self, key: Key, connection: object) -> ShareSession | None:
        """End the session if `connection` opened it (that connection closed); the session."""
        session = self.sessions.get(key)
        if session is None or session.connection is not connection:
            return None
        del self.sessions[key]
        return session

    def _open(self, key: Key, added: Sequence[Part], now_ms: int, connection: object) -> Opened:
        replaced = self.sessions.pop(key, None) is not None
        if len(self.sessions) >= self.max_sessions and not self._evict_one(now_ms):
            return Opened(SHARE_SESSION_LIMIT_REACHED)
        session = ShareSession(key[0], key[1], 1, dict.fromkeys(added), now_ms, connection)
        self.sessions[key] = session
        return Opened(NONE, session, replaced=replaced)

    def _continue(self, key: Key, epoch: int, now_ms: int) -> Opened:
        session = self.sessions.get(key)
        if session is None:
            return Opened(SHARE_SESSION_NOT_FOUND)
        if epoch == FINAL_EPOCH:
            return Opened(NONE, session, closing=True)
        if epoch != session.epoch:
            return Opened(INVALID_SHARE_SESSION_EPOCH)
        session.epoch = 1 if session.epoch == MAX_EPOCH else session.epoch + 1
        session.last_used_ms = now_ms
        return Opened(NONE, session)

    def _evict_one(self, now_ms: int) -> bool:
        idle = min(self.sessions.values(), key=lambda s: s.last_used_ms, default=None)
        if idle is None or now_ms - idle.last_used_ms < self.evictable_after_ms:
            return False
        del self.sessions[(idle.group_id, idle.member_id)]
        return True
