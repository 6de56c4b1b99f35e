"""Whom the console reads the cluster as: one `View` (a Gatherer and the snapshot it publishes)
per reader.

- An unsecured cluster (no SASL in the console's settings) has one shared View, read with the
  console's own settings, started with the server, as it always was.
- A secured cluster has one View per login session, read with that user's own SASL session:
  its Gatherer's clients (AsyncAdmin, Cluster, GroupAdmin, the Kafka-door requests, and the
  browser's consumers) log in with the name and password given at login (`Views` keeps the
  `Login` in this process's memory only, for the cookie session's life; never on disk, never
  logged, never sent back). So the broker's authorizer is the one source of truth, and the
  console holds no second copy of the ACL rules: Metadata lists only the topics the principal
  may Describe, ListGroups / ListTransactions only the groups and transactional ids it may
  Describe, a Fetch it may not make is refused with TOPIC_AUTHORIZATION_FAILED, which the page
  shows as such. The console's own credentials (--command-config, the admin's on `cluster up
  --secure`) lend only the TLS and SASL settings; nothing is read with them for anyone.

Why not one admin snapshot filtered through the ACLs: that would be a second authorizer (the
rules of which API needs which operation on which resource, super users, DENY over ALLOW,
prefixes, hosts), kept in step with the broker's by hand; a bug in it is a leak. Reading as the
user costs a Gatherer per active user: bounded below.

A session's View starts on first use (the page's event stream, a snapshot, a browse) and stops,
closing its connections, when unused for `idle_s` (no stream open, no request) or when its
session ends (logout, expiry, or evicted by newer logins: `reap`); its stream ends with it. At
most `views_max` Views run at once (each holds about three connections per broker); one more
is refused with a readable line (TooManyViews) until one stops.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from deploy.console.gather import Gatherer

VIEWS_MAX = 8  # users' views running at once
IDLE_S = 60.0  # a view with no stream and no request for this long stops
FIRST_SNAPSHOT_S = 20.0  # how long a snapshot request waits for a new view's first snapshot


class TooManyViews(Exception):
    """Every view slot is taken by a user in use."""


class View:
    """A Gatherer, refreshed in the background, and the snapshot it last published: each
    change wakes the streams waiting in `wait_change` (they send only the newest)."""

    def __init__(self, gatherer: Gatherer, interval_s: float, controls: bool) -> None:
        self.gatherer = gatherer
        self.interval_s = interval_s
        self.controls = controls
        self.text = ""  # "" until the first snapshot
        self.version = 0
        self.changed = asyncio.Condition()
        self.streams = 0
        self.closed = False
        self.used_s = time.monotonic()
        self._tasks: list[asyncio.Task[None]] = []
        self._last_key = ""  # the last snapshot published, less its time

    @property
    def ready(self) -> bool:
        return self.version > 0

    def touch(self) -> None:
        self.used_s = time.monotonic()

    def idle(self, now_s: float, idle_s: float) -> bool:
        return self.streams == 0 and now_s - self.used_s > idle_s

    async def start(self, wait: bool) -> None:
        """Refresh and publish now (`wait`: before returning), then keep refreshing."""
        if wait:
            await self.publish(await self.gatherer.refresh())
            self._run()
        else:
            self._tasks.append(asyncio.create_task(self._first_then_run()))

    async def _first_then_run(self) -> None:
        await self.publish(await self.gatherer.refresh())
        self._run()

    def _run(self) -> None:
        self._tasks += [
            asyncio.create_task(self.gatherer.run(self.interval_s)),
            asyncio.create_task(self._publish_forever()),
        ]

    async def stop(self) -> None:
        self.closed = True
        async with self.changed:
            self.changed.notify_all()  # the streams see `closed` and end
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await self.gatherer.close()

    async def publish(self, snap: dict[str, Any]) -> None:
        """Take `snap` as the snapshot, and wake the streams if it changed."""
        snap["controls"] = self.controls
        key = json.dumps({k: v for k, v in snap.items() if k != "now_ms"}, default=str)
        if key == self._last_key:
            return
        self.text, self._last_key = json.dumps(snap, default=str), key
        async with self.changed:
            self.version += 1
            self.changed.notify_all()

    async def _publish_forever(self) -> None:
        """The snapshot from the parts as they are, twice per refresh interval (the parts
        refresh in their own loops, gather.py)."""
        while True:
            try:
                await self.publish(self.gatherer.snapshot())
            except Exception as exc:  # never let the page go dark: say so and go on
                print(f"odradek console: snapshot failed: {type(exc).__name__}: {exc}", flush=True)
            await asyncio.sleep(self.interval_s / 2)

    async def wait_change(self, seen: int, timeout_s: float) -> int:
        async with self.changed:
            with contextlib.suppress(TimeoutError, asyncio.TimeoutError):
                await asyncio.wait_for(
                    self.changed.wait_for(lambda: self.version != seen or self.closed), timeout_s
                )
            return self.version

    async def first_snapshot(self, timeout_s: float = FIRST_SNAPSHOT_S) -> str:
        """The snapshot's JSON, waiting (bounded) for the first one."""
        if not self.ready:
            await self.wait_change(0, timeout_s)
        return self.text


@dataclass(frozen=True, slots=True)
class Login:
    """What a session's View is made from: kept in memory for the session's life only."""

    user: str
    password: str
    cluster_alter: bool

    def __repr__(self) -> str:  # never the password
        return f"Login({self.user!r})"


MakeView = Callable[[Login], View]


class Views:
    """The sessions' Views of a secured cluster, by session token (see the module comment)."""

    def __init__(self, make: MakeView, views_max: int = VIEWS_MAX, idle_s: float = IDLE_S) -> None:
        self.make = make
        self.views_max = views_max
        self.idle_s = idle_s
        self._logins: dict[str, Login] = {}
        self._views: dict[str, View] = {}
        self._lock = asyncio.Lock()

    def __len__(self) -> int:
        return len(self._views)

    def add(self, token: str, login: Login) -> None:
        self._logins[token] = login

    async def view(self, token: str) -> View:
        """The session's View, started if need be (its first snapshot comes in the background).
        KeyError for a session with no login here; TooManyViews when every slot is in use."""
        async with self._lock:
            view = self._views.get(token)
            if view is None:
                login = self._logins[token]
                if len(self._views) >= self.views_max:
                    await self._stop_idle(time.monotonic())
                if len(self._views) >= self.views_max:
                    raise TooManyViews(
                        f"the console shows at most {self.views_max} users' views at once; "
                        "try again when another user's page closes"
                    )
                view = self._views[token] = self.make(login)
                await view.start(wait=False)
        view.touch()
        return view

    async def drop(self, token: str) -> None:
        """The session ended: stop its View and forget its password."""
        self._logins.pop(token, None)
        view = self._views.pop(token, None)
        if view is not None:
            await view.stop()

    async def reap(self, alive: Callable[[str], bool]) -> None:
        """Drop the sessions that ended (`alive(token)` False) and stop idle Views."""
        for token in [t for t in self._logins if not alive(t)]:
            await self.drop(token)
        async with self._lock:
            await self._stop_idle(time.monotonic())

    async def _stop_idle(self, now_s: float) -> None:
        for token in [t for t, v in self._views.items() if v.idle(now_s, self.idle_s)]:
            await self._views.pop(token).stop()

    async def close(self) -> None:
        for token in list(self._logins):
            await self.drop(token)
