"""The connection side of throttling (KIP-219): the response carries `throttle_time_ms`, is sent
at once, and then the broker mutes the channel (stops reading from it) for that long.

- `throttle_of(response)` and `with_throttle(response, ms)` read and raise a response's throttle
  field: `throttle_time_ms` (ms) on native responses, `throttle_time` (a timedelta) on kio's.
  A response without the field (older Kafka versions, an already-encoded fetch) is left as it
  is; the mute still applies.
- `ChannelMute` is one connection's mute: one timer (loop.call_later) at most, extended by a
  later throttle, cancelled when the connection closes, so a muted connection costs one timer
  and there is no queue of throttled channels to grow. broker/server.py's Connection asks
  `muted` when it decides whether to read.
- `request_exempt(api_key, body)`: requests no request quota applies to, as Kafka exempts
  them: the handshake APIs (ApiVersions, SASL) and inter-broker traffic (controller requests,
  transaction markers, a follower's fetch).
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
from collections.abc import Callable
from typing import Any

# ApiVersions, SaslHandshake, SaslAuthenticate; LeaderAndIsr, StopReplica, UpdateMetadata,
# ControlledShutdown, WriteTxnMarkers (Kafka's ClusterAction APIs)
EXEMPT_API_KEYS = frozenset({18, 17, 36, 4, 5, 6, 7, 27})
FETCH_KEY = 1


def request_exempt(api_key: int, body: Any) -> bool:
    if api_key in EXEMPT_API_KEYS:
        return True
    return api_key == FETCH_KEY and _replica_id(body) >= 0


def _replica_id(body: Any) -> int:
    replica_id = getattr(body, "replica_id", -1)
    state = getattr(body, "replica_state", None)  # Kafka Fetch v15+
    if state is not None:
        replica_id = getattr(state, "replica_id", replica_id)
    return int(replica_id) if replica_id is not None else -1


def throttle_of(response: Any) -> int:
    value = getattr(response, "throttle_time_ms", None)
    if isinstance(value, int):
        return value
    value = getattr(response, "throttle_time", None)
    if isinstance(value, datetime.timedelta):
        return int(value.total_seconds() * 1000)
    return 0


def with_throttle(response: Any, ms: int) -> Any:
    """`response` with its throttle field raised to `ms` (unchanged if already >= or absent)."""
    if ms <= 0 or response is None or not dataclasses.is_dataclass(response):
        return response
    if throttle_of(response) >= ms:
        return response
    names = {f.name for f in dataclasses.fields(response)}
    if "throttle_time_ms" in names:
        return dataclasses.replace(response, throttle_time_ms=ms)  # type: ignore[type-var]
    if "throttle_time" in names:
        delta = datetime.timedelta(milliseconds=ms)
        return dataclasses.replace(response, throttle_time=delta)  # type: ignore[type-var]
    return response


class ChannelMute:
    """One connection's mute (see the module docstring). `changed` is called whenever `muted`
    flips, so that the connection pauses or resumes reading."""

    __slots__ = ("_changed", "_handle", "_loop", "_until", "muted")

    def __init__(self, loop: asyncio.AbstractEventLoop, changed: Callable[[], None]) -> None:
        self._loop = loop
        self._changed = changed
        self._handle: asyncio.TimerHandle | None = None
        self._until = 0.0
        self.muted = False

    def mute(self, ms: int) -> None:
        if ms <= 0:
            return
        until = self._loop.time() + ms / 1000
        if self.muted and until <= self._until:
            return
        self._until = until
        if self._handle is not None:
            self._handle.cancel()
        self._handle = self._loop.call_at(until, self._expire)
        if not self.muted:
            self.muted = True
            self._changed()

    def _expire(self) -> None:
        self._handle = None
        self.muted = False
        self._changed()

    def cancel(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        self.muted = False
