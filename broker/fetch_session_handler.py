"""Fetch sessions, the follower's side (KIP-227): build each request from what changed.

One `FetchSessionHandler` per replica fetcher (one leader). It remembers the session the leader
gave (id, next epoch) and the `FetchPartition` the leader's session holds for each partition.
`build(wanted)` takes every partition the fetcher wants now and gives a `SessionRequest`:

- no session yet (or after an error): a full request with epoch 0, opening one;
- otherwise an incremental one: only the partitions whose FetchPartition differs from what the
  session holds (a new fetch offset, leader epoch or log start), and as `forgotten` those the
  session holds but the fetcher no longer wants (removed, backing off, truncating).

`on_response(request, response)` moves the handler on: a full request's answer with a session
id opens that session (0: the leader had no room, stay full); an incremental answer bumps the
epoch. FETCH_SESSION_ID_NOT_FOUND and INVALID_FETCH_SESSION_EPOCH start over (full, epoch 0,
naming the old id so the leader drops it), as does `reset()` after a lost connection, since
the leader may or may not have applied the request in flight.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from broker.fetch_session import next_epoch
from protocol.api.fetch import (
    INITIAL_EPOCH,
    NO_SESSION,
    FetchPartition,
    FetchResponse,
    FetchTopic,
    ForgottenTopic,
)
from protocol.errors import FetchSessionIdNotFoundError, InvalidFetchSessionEpochError

Key = tuple[str, int]


@dataclass(frozen=True, slots=True)
class SessionRequest:
    session_id: int
    epoch: int
    topics: list[FetchTopic]
    forgotten: list[ForgottenTopic]
    wanted: Mapping[Key, FetchPartition]  # what the session holds once this is answered


def _by_topic(parts: Mapping[Key, FetchPartition]) -> list[FetchTopic]:
    topics: dict[str, list[FetchPartition]] = {}
    for (topic, _), fp in parts.items():
        topics.setdefault(topic, []).append(fp)
    return [FetchTopic(name, fps) for name, fps in topics.items()]


class FetchSessionHandler:
    def __init__(self) -> None:
        self.session_id = NO_SESSION
        self.epoch = INITIAL_EPOCH
        self._held: dict[Key, FetchPartition] = {}  # what the leader's session holds

    def build(self, wanted: dict[Key, FetchPartition]) -> SessionRequest:
        if self.epoch == INITIAL_EPOCH:
            return SessionRequest(self.session_id, INITIAL_EPOCH, _by_topic(wanted), [], wanted)
        held = self._held
        changed = {}
        for key, fp in wanted.items():
            old = held.get(key)
            if old is not fp and old != fp:
                changed[key] = fp
        gone: dict[str, list[int]] = {}
        for key in held:
            if key not in wanted:
                gone.setdefault(key[0], []).append(key[1])
        forgotten = [ForgottenTopic(name, indexes) for name, indexes in gone.items()]
        return SessionRequest(self.session_id, self.epoch, _by_topic(changed), forgotten, wanted)

    def on_response(self, request: SessionRequest, response: FetchResponse) -> bool:
        """Take the leader's answer; False: a session error (ignore the answer's partitions)."""
        if response.error_code in (FetchSessionIdNotFoundError.code,
                                   InvalidFetchSessionEpochError.code):  # fmt: skip
            if response.error_code == FetchSessionIdNotFoundError.code:
                self.session_id = NO_SESSION
            self.reset()
            return False
        if request.epoch == INITIAL_EPOCH:
            self.session_id = response.session_id
            self.epoch = INITIAL_EPOCH if response.session_id == NO_SESSION else next_epoch(0)
        else:
            self.epoch = next_epoch(self.epoch)
        self._held = dict(request.wanted)
        return True

    def reset(self) -> None:
        """Start over with a full request (naming the current id, which the leader drops)."""
        self.epoch = INITIAL_EPOCH
        self._held = {}
