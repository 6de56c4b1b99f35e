"""The one module that imports kazoo: an asyncio facade over a ZooKeeper session.

How it works: `ZkClient` owns one `KazooClient` (one ZooKeeper session). Every operation uses
kazoo's `*_async` API; the kazoo result is linked (`rawlink`) to an asyncio future on our loop
through `loop.call_soon_threadsafe`, so no coroutine ever blocks the loop on a socket. The few
kazoo calls with no async form (start, stop, recursive delete, installing a recipe watch, which
does a first blocking read) run in the loop's default executor.

Kazoo calls watch callbacks and state listeners on its own threads; here each of them is turned
into a `call_soon_threadsafe(callback, ...)`, so callers' callbacks always run on the loop, one
at a time, like any other loop callback. Callbacks must not block; they usually enqueue an event.

Session states, delivered to `add_state_listener` callbacks as strings:
- "CONNECTED": connected (first time, after a SUSPENDED, or with a new session after LOST).
- "SUSPENDED": the connection dropped; the session may still be alive, so ephemeral nodes may
  still exist. Do not act on anything that needs the session (a controller stops acting), and
  do not assume the ephemerals are gone.
- "LOST": the session expired. Ephemeral nodes are gone and watches are gone; on the next
  CONNECTED re-register and rejoin elections (kazoo reconnects with a new session by itself).

Kazoo's errors become ours: ZkNodeExists, ZkNoNode, ZkBadVersion, ZkNotEmpty, ZkConnectionLost
(connection loss, session expiry, closed client), all under ZkError. A chroot in the connect
string ("127.0.0.1:2181/odradek-test-1") is created on start if missing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from kazoo.client import KazooClient
from kazoo.exceptions import (
    BadVersionError,
    ConnectionClosedError,
    ConnectionLoss,
    KazooException,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    RolledBackError,
    SessionExpiredError,
)
from kazoo.handlers.threading import KazooTimeoutError, SequentialThreadingHandler
from kazoo.protocol.states import KazooState, ZnodeStat
from kazoo.recipe.watchers import ChildrenWatch, DataWatch
from kazoo.retry import KazooRetry

log = logging.getLogger(__name__)

ZkState = Literal["CONNECTED", "SUSPENDED", "LOST"]
StateListener = Callable[[ZkState], None]
DEFAULT_REQUEST_TIMEOUT_MS = 15_000


class ZkError(Exception):
    """Root of our ZooKeeper errors. `path` is the node the failing operation named."""

    def __init__(self, message: str, path: str | None = None) -> None:
        super().__init__(message)
        self.path = path


class ZkNodeExists(ZkError): ...


class ZkNoNode(ZkError): ...


class ZkBadVersion(ZkError): ...


class ZkNotEmpty(ZkError): ...


class ZkConnectionLost(ZkError):
    """The connection or the session is gone (or the client was stopped); the outcome of the
    operation is unknown."""


_ERROR_MAP: tuple[tuple[type[BaseException], type[ZkError]], ...] = (
    (NodeExistsError, ZkNodeExists),
    (NoNodeError, ZkNoNode),
    (BadVersionError, ZkBadVersion),
    (NotEmptyError, ZkNotEmpty),
    (ConnectionLoss, ZkConnectionLost),
    (SessionExpiredError, ZkConnectionLost),
    (ConnectionClosedError, ZkConnectionLost),
    (KazooTimeoutError, ZkConnectionLost),
)


def _translate(exc: BaseException, path: str | None) -> BaseException:
    for kazoo_cls, ours in _ERROR_MAP:
        if isinstance(exc, kazoo_cls):
            return ours(f"{ours.__name__} at {path}: {exc!r}", path)
    if isinstance(exc, KazooException):
        return ZkError(f"ZooKeeper error at {path}: {exc!r}", path)
    return exc


@dataclass(frozen=True, slots=True)
class ZkStat:
    version: int
    ephemeral_owner: int  # session id of the owner, 0 for persistent nodes
    czxid: int  # zxid of the creation: a broker registration's "epoch"
    mzxid: int
    num_children: int

    @classmethod
    def of(cls, stat: ZnodeStat) -> ZkStat:
        return cls(stat.version, stat.ephemeralOwner, stat.czxid, stat.mzxid, stat.numChildren)


# Transaction operations (ZooKeeper "multi"): all apply or none does.
@dataclass(frozen=True, slots=True)
class OpCheck:
    path: str
    version: int


@dataclass(frozen=True, slots=True)
class OpCreate:
    path: str
    data: bytes = b""
    ephemeral: bool = False


@dataclass(frozen=True, slots=True)
class OpSet:
    path: str
    data: bytes
    version: int = -1


@dataclass(frozen=True, slots=True)
class OpDelete:
    path: str
    version: int = -1


ZkOp = OpCheck | OpCreate | OpSet | OpDelete


class WatchHandle:
    """Returned by watch_*; `cancel()` stops callbacks (kazoo drops the watch at its next event)."""

    def __init__(self) -> None:
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


def split_chroot(hosts: str) -> tuple[str, str]:
    """'h1:2181,h2:2181/a/b' -> ('h1:2181,h2:2181', '/a/b'); no chroot -> (hosts, '')."""
    slash = hosts.find("/")
    if slash < 0:
        return hosts, ""
    chroot = hosts[slash:].rstrip("/")
    return hosts[:slash], chroot


class ZkClient:
    """One ZooKeeper session, used from one asyncio loop."""

    def __init__(
        self,
        hosts: str,
        session_timeout_ms: int,
        loop: asyncio.AbstractEventLoop | None = None,
        request_timeout_ms: int = DEFAULT_REQUEST_TIMEOUT_MS,
    ) -> None:
        self.hosts = hosts
        self.session_timeout_ms = session_timeout_ms
        self.request_timeout_ms = request_timeout_ms
        self._loop = loop
        self._kz = _kazoo_client(hosts, session_timeout_ms)
        self._listeners: list[StateListener] = []
        self._kz.add_listener(self._on_kazoo_state)
        self._started = False

    # ----- lifecycle ------------------------------------------------------------------------

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
        return self._loop

    async def start(self, timeout_s: float = 15.0) -> None:
        """Connect (raises ZkConnectionLost if no server answers in time); create the chroot."""
        _ = self.loop
        base, chroot = split_chroot(self.hosts)
        if chroot:
            await _ensure_chroot(base, chroot, self.session_timeout_ms, timeout_s)
        try:
            await self.loop.run_in_executor(None, self._kz.start, timeout_s)
        except Exception as exc:
            await self.loop.run_in_executor(None, self._kz.close)
            raise _translate(exc, None) from None
        self._started = True

    async def stop(self) -> None:
        """Close the session: its ephemeral nodes go at once. Idempotent."""
        if not self._started:
            return
        self._started = False
        await self.loop.run_in_executor(None, self._kz.stop)
        await self.loop.run_in_executor(None, self._kz.close)

    @property
    def connected(self) -> bool:
        return bool(self._kz.connected)

    @property
    def session_id(self) -> int | None:
        """The current session id (compare with ZkStat.ephemeral_owner), None if none."""
        client_id = self._kz.client_id
        return None if client_id is None else int(client_id[0])

    def add_state_listener(self, callback: StateListener) -> None:
        """Call `callback(state)` on the loop on every session state change."""
        self._listeners.append(callback)

    def remove_state_listener(self, callback: StateListener) -> None:
        with contextlib.suppress(ValueError):
            self._listeners.remove(callback)

    def _on_kazoo_state(self, state: str) -> None:
        # Kazoo's connection thread: must not block; hop to the loop.
        name: ZkState = {
            KazooState.CONNECTED: "CONNECTED",
            KazooState.SUSPENDED: "SUSPENDED",
            KazooState.LOST: "LOST",
        }[state]  # type: ignore[assignment]
        loop = self._loop
        if loop is None:
            return
        for cb in list(self._listeners):
            _post(loop, cb, name)

    # ----- operations -----------------------------------------------------------------------

    async def _await(self, async_result: Any, path: str | None) -> Any:
        """Bridge a kazoo IAsyncResult to the loop, with our error types and a time bound."""
        loop = self.loop
        future: asyncio.Future[Any] = loop.create_future()

        def transfer(result: Any) -> None:
            if future.done():
                return
            try:
                future.set_result(result.get_nowait())
            except BaseException as exc:  # kazoo stores the error; re-raise it here as ours
                future.set_exception(_translate(exc, path))

        def on_done(result: Any) -> None:  # on a kazoo thread
            _post(loop, transfer, result)

        async_result.rawlink(on_done)
        try:
            async with asyncio.timeout(self.request_timeout_ms / 1000):
                return await future
        except TimeoutError:
            raise ZkConnectionLost(
                f"no answer from ZooKeeper within {self.request_timeout_ms} ms", path
            ) from None

    async def _blocking(self, fn: Callable[..., Any], *args: Any, path: str | None) -> Any:
        try:
            return await self.loop.run_in_executor(None, fn, *args)
        except Exception as exc:
            raise _translate(exc, path) from None

    async def create(
        self,
        path: str,
        data: bytes = b"",
        ephemeral: bool = False,
        makepath: bool = False,
        sequence: bool = False,
    ) -> str:
        """Create a node; returns its path (with the server's ten-digit suffix when
        `sequence`). ZkNodeExists if it exists, ZkNoNode if the parent is missing (and not
        makepath)."""
        res = self._kz.create_async(
            path, data, ephemeral=ephemeral, sequence=sequence, makepath=makepath
        )
        return str(await self._await(res, path))

    async def get(self, path: str) -> tuple[bytes, int]:
        data, stat = await self._await(self._kz.get_async(path), path)
        return bytes(data or b""), int(stat.version)

    async def get_with_stat(self, path: str) -> tuple[bytes, ZkStat]:
        data, stat = await self._await(self._kz.get_async(path), path)
        return bytes(data or b""), ZkStat.of(stat)

    async def set(self, path: str, data: bytes, version: int = -1) -> int:
        """Set data if the node's version is `version` (-1: any); returns the new version."""
        stat = await self._await(self._kz.set_async(path, data, version), path)
        return int(stat.version)

    async def delete(self, path: str, version: int = -1, recursive: bool = False) -> None:
        if recursive:
            await self._blocking(self._kz.delete, path, -1, True, path=path)
        else:
            await self._await(self._kz.delete_async(path, version), path)

    async def exists(self, path: str) -> int | None:
        """The node's version, or None if it does not exist."""
        stat = await self.stat(path)
        return None if stat is None else stat.version

    async def stat(self, path: str) -> ZkStat | None:
        stat = await self._await(self._kz.exists_async(path), path)
        return None if stat is None else ZkStat.of(stat)

    async def get_children(self, path: str) -> list[str]:
        return sorted(await self._await(self._kz.get_children_async(path), path))

    async def ensure_path(self, path: str) -> None:
        await self._await(self._kz.ensure_path_async(path), path)

    async def transaction(self, ops: list[ZkOp]) -> list[Any]:
        """Apply ops atomically. On failure raises the failing op's error (its `path` says
        which), nothing applied. Returns kazoo's per-op results (paths / stats / True)."""
        tx = self._kz.transaction()
        for op in ops:
            if isinstance(op, OpCheck):
                tx.check(op.path, op.version)
            elif isinstance(op, OpCreate):
                tx.create(op.path, op.data, ephemeral=op.ephemeral)
            elif isinstance(op, OpSet):
                tx.set_data(op.path, op.data, op.version)
            else:
                tx.delete(op.path, op.version)
        results = await self._await(tx.commit_async(), None)
        for op, result in zip(ops, results, strict=False):
            if isinstance(result, BaseException) and not isinstance(result, RolledBackError):
                raise _translate(result, op.path)
        return list(results)

    # ----- watches --------------------------------------------------------------------------

    async def watch_children(self, path: str, callback: Callable[[list[str]], None]) -> WatchHandle:
        """Call `callback(sorted children)` on the loop now and on every change (re-armed
        across reconnects). The node must exist (ZkNoNode otherwise)."""
        if await self.stat(path) is None:
            raise ZkNoNode(f"cannot watch the children of missing {path}", path)
        handle = WatchHandle()
        loop = self.loop

        def on_children(children: list[str]) -> bool | None:  # a kazoo thread
            if handle.cancelled:
                return False
            _post(loop, _guarded, handle, callback, sorted(children))
            return None

        await self._blocking(ChildrenWatch, self._kz, path, on_children, path=path)
        return handle

    async def watch_data(
        self, path: str, callback: Callable[[bytes | None, int | None], None]
    ) -> WatchHandle:
        """Call `callback(data, version)` on the loop now and on every change; (None, None)
        while the node does not exist. Works on nodes that do not exist yet."""
        handle = WatchHandle()
        loop = self.loop

        def on_data(data: bytes | None, stat: ZnodeStat | None) -> bool | None:  # kazoo thread
            if handle.cancelled:
                return False
            version = None if stat is None else int(stat.version)
            _post(loop, _guarded, handle, callback, data, version)
            return None

        await self._blocking(DataWatch, self._kz, path, on_data, path=path)
        return handle

    # ----- fault injection ------------------------------------------------------------------

    async def expire_session(self, attempts: int = 5) -> None:
        """Make the server expire this client's session (tests and fault drills): a second
        connection attaches to the same session and closes it; this client then sees LOST.
        This client may win the session back by reconnecting first, so it is tried again."""
        client_id = self._kz.client_id
        if client_id is None:
            raise ZkConnectionLost("no session to expire")
        lost = asyncio.Event()

        def on_state(state: ZkState) -> None:
            if state == "LOST":
                lost.set()

        self.add_state_listener(on_state)
        try:
            for _ in range(attempts):
                twin = _kazoo_client(split_chroot(self.hosts)[0], self.session_timeout_ms,
                                     client_id=client_id)  # fmt: skip
                await self._blocking(twin.start, 10, path=None)
                await self._blocking(twin.stop, path=None)
                await self._blocking(twin.close, path=None)
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(2 * self.session_timeout_ms / 1000):
                        await lost.wait()
                        return
            raise ZkError(f"session {client_id[0]:#x} did not expire in {attempts} attempts")
        finally:
            self.remove_state_listener(on_state)


def _kazoo_client(hosts: str, session_timeout_ms: int, **kwargs: Any) -> KazooClient:
    """A KazooClient whose reconnect backoff stays well under the session timeout (kazoo's
    default grows to an hour), so a client reconnects while its session is still alive."""
    handler = SequentialThreadingHandler()
    max_delay_s = min(1.0, max(0.1, session_timeout_ms / 1000 / 4))

    def retry() -> KazooRetry:
        return KazooRetry(
            max_tries=-1, delay=0.05, backoff=2, max_jitter=0.2, max_delay=max_delay_s,
            sleep_func=handler.sleep_func,
        )  # fmt: skip

    return KazooClient(
        hosts=hosts,
        timeout=session_timeout_ms / 1000,
        handler=handler,
        connection_retry=retry(),
        command_retry=retry(),
        **kwargs,
    )


def _post(loop: asyncio.AbstractEventLoop, fn: Callable[..., None], *args: Any) -> None:
    """From a kazoo thread: run fn(*args) on the loop. Every kazoo callback goes through here."""
    with contextlib.suppress(RuntimeError):  # the loop closed under us: nobody is listening
        loop.call_soon_threadsafe(fn, *args)


def _guarded(handle: WatchHandle, callback: Callable[..., None], *args: Any) -> None:
    if not handle.cancelled:
        callback(*args)


async def _ensure_chroot(base: str, chroot: str, session_timeout_ms: int, timeout_s: float) -> None:
    """Create the chroot node with a short-lived session on the bare connect string."""
    loop = asyncio.get_running_loop()
    kz = _kazoo_client(base, session_timeout_ms)

    def run() -> None:
        try:
            kz.start(timeout_s)
            kz.ensure_path(chroot)
        finally:
            kz.stop()
            kz.close()

    try:
        await loop.run_in_executor(None, run)
    except Exception as exc:
        raise _translate(exc, chroot) from None
