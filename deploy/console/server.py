"""The console's web server (aiohttp): the page, the live snapshot, the browser, the controls.

    GET  /                       static/index.html (vanilla JS and CSS beside it, no build step)
    GET  /api/snapshot           the latest snapshot (JSON, gather.py)
    GET  /api/events             Server-Sent Events: the snapshot each time it changes
    POST /api/browse             one page of records or one search step (browse.py), JSON in/out
    POST /api/brokers/{id}/{kill|pause|start}   a local cluster's broker (deploy/cluster.py)
    GET  /api/health             "ok" (for `cluster up` to wait on)
    GET  /api/whoami             {"login": required?, "user", "cluster_alter", "controls"}
    POST /api/login, /api/logout a secured cluster's user (auth.py), JSON {"user", "password"}

A background task refreshes the snapshot every `interval_s` and wakes the event streams when it
changed (the time it was taken aside); each stream sends only the newest snapshot, so a slow
page skips snapshots instead of queueing them. Streams are capped at `STREAMS_MAX`.

The controls exist only with a local cluster (--dir) and a loopback address (unless
`allow_control`); each POST must carry the header `X-Odradek-Console: 1`, which a page of another
origin cannot send without a CORS preflight this server never grants.

On a secured cluster (its client settings, --command-config, use SASL) every /api/ path but
health, whoami and login needs a login: the cluster's own users, checked by a broker
(auth.py), kept in an HttpOnly cookie; the controls need the user's login to have been allowed
Alter on the Cluster. Logins are checked at most LOGINS_AT_ONCE at a time.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import time
from pathlib import Path
from typing import Any

from aiohttp import web

from deploy.console import auth, browse
from deploy.console.gather import Gatherer
from deploy.netns import is_loopback
from protocol.errors import OdradekError, UsageError

STATIC_DIR = Path(__file__).parent / "static"
STREAMS_MAX = 32
KEEPALIVE_S = 15.0
BODY_BYTES_MAX = 64 * 1024
CONTROL_HEADER = "X-Odradek-Console"
ACTIONS = {"kill": "KILL", "pause": "STOP", "start": None}
LOGINS_AT_ONCE = 4
OPEN_PATHS = ("/api/health", "/api/whoami", "/api/login")
GATHER_KEY: web.AppKey[Console] = web.AppKey("console")


class Console:
    """The refresher and what the handlers share."""

    def __init__(
        self,
        bootstrap: str,
        cluster_dir: Path | None = None,
        *,
        interval_s: float = 0.4,
        controls: bool = False,
        hanging_max_age_ms: int | None = None,
        security: dict[str, Any] | None = None,
        clock: Any = time.time,
    ) -> None:
        self.security = dict(security or {})
        self.login_required = self.security.get("security_protocol", "").startswith("SASL_")
        self.logins = auth.LoginStore()
        self.login_slots = asyncio.Semaphore(LOGINS_AT_ONCE)
        self.clock = clock
        self.gatherer = Gatherer(bootstrap, cluster_dir, hanging_max_age_ms=hanging_max_age_ms,
                                 security=self.security)  # fmt: skip
        self.bootstrap = bootstrap
        self.cluster_dir = cluster_dir
        self.interval_s = interval_s
        self.controls = controls and cluster_dir is not None
        self.snapshot: dict[str, Any] = {"brokers": [], "topics": [], "groups": [], "stale": []}
        self.text = json.dumps(self.snapshot)
        self.version = 0
        self.changed = asyncio.Condition()
        self.streams = 0
        self._tasks: list[asyncio.Task[None]] = []
        self._last_key = ""  # the last snapshot published, less its time

    def login_of(self, request: web.Request) -> auth.ConsoleLogin | None:
        return self.logins.get(request.cookies.get(auth.COOKIE), int(self.clock() * 1000))

    async def start(self) -> None:
        await self.publish(await self.gatherer.refresh())
        self._tasks = [
            asyncio.create_task(self.gatherer.run(self.interval_s)),
            asyncio.create_task(self._publish_forever()),
        ]

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await self.gatherer.close()

    async def publish(self, snap: dict[str, Any]) -> None:
        """Take `snap` as the snapshot, and wake the streams if it changed."""
        snap["controls"] = self.controls
        key = json.dumps({k: v for k, v in snap.items() if k != "now_ms"}, default=str)
        if key == self._last_key:
            return
        self.snapshot, self.text, self._last_key = snap, json.dumps(snap, default=str), key
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
                    self.changed.wait_for(lambda: self.version != seen), timeout_s
                )
            return self.version


# ----- handlers --------------------------------------------------------------------------------


async def index(request: web.Request) -> web.FileResponse:
    return web.FileResponse(STATIC_DIR / "index.html")


async def health(request: web.Request) -> web.Response:
    return web.Response(text="ok")


async def snapshot(request: web.Request) -> web.Response:
    return web.Response(text=request.app[GATHER_KEY].text, content_type="application/json")


async def events(request: web.Request) -> web.StreamResponse:
    console = request.app[GATHER_KEY]
    if console.streams >= STREAMS_MAX:
        raise web.HTTPServiceUnavailable(text=f"at most {STREAMS_MAX} pages at once")
    resp = web.StreamResponse(headers={
        "Content-Type": "text/event-stream", "Cache-Control": "no-cache",
    })  # fmt: skip
    await resp.prepare(request)
    console.streams += 1
    try:
        seen = -1
        while True:
            if console.version != seen:
                seen = console.version
                await resp.write(f"data: {console.text}\n\n".encode())
            else:
                await resp.write(b": keepalive\n\n")
            await console.wait_change(seen, KEEPALIVE_S)
    except (ConnectionResetError, asyncio.CancelledError):
        pass
    finally:
        console.streams -= 1
    return resp


async def _json_body(request: web.Request) -> dict[str, Any]:
    if request.content_length is not None and request.content_length > BODY_BYTES_MAX:
        raise UsageError("request body too large")
    raw = await request.content.read(BODY_BYTES_MAX + 1)
    if len(raw) > BODY_BYTES_MAX:
        raise UsageError("request body too large")
    try:
        body = json.loads(raw or b"{}")
    except ValueError:
        raise UsageError("the request body is not JSON") from None
    if not isinstance(body, dict):
        raise UsageError("the request body must be a JSON object")
    return body


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)


async def browse_handler(request: web.Request) -> web.Response:
    console = request.app[GATHER_KEY]
    try:
        body = await _json_body(request)
        topic = body.get("topic")
        if not isinstance(topic, str) or not topic:
            raise UsageError("pick a topic")
        cursor = body.get("cursor")
        if cursor is not None and not isinstance(cursor, dict):
            raise UsageError("cursor must be an object")
        answer = await browse.browse(
            console.gatherer.admin, console.bootstrap, topic,
            partitions=str(body.get("partitions", "")), start=str(body.get("start", "earliest")),
            cursor=cursor, direction=str(body.get("direction", "forward")),
            limit=int(body.get("limit", 50)), search=str(body.get("search", "")),
            security=console.security,
        )  # fmt: skip
    except UsageError as exc:
        return _error(400, exc.message)
    except (OdradekError, OSError, ValueError, TypeError) as exc:
        return _error(502, browse.error_text(exc))
    return web.json_response(answer)


def _control(cluster_dir: Path, broker_id: int, action: str) -> str:
    from deploy.cluster import LocalCluster

    lines: list[str] = []
    cluster = LocalCluster.open(cluster_dir, progress=lines.append)
    sig = ACTIONS[action]
    if sig is None:
        cluster.start(broker_id, wait=False)
    else:
        cluster.kill(broker_id, sig, reload=True)
    return "; ".join(lines) or f"broker {broker_id}: {action} done"


async def control_handler(request: web.Request) -> web.Response:
    console = request.app[GATHER_KEY]
    if not console.controls or console.cluster_dir is None:
        return _error(403, "controls are for a local cluster's console (--dir, on loopback)")
    if request.headers.get(CONTROL_HEADER) != "1":
        return _error(403, f"missing the {CONTROL_HEADER} header")
    login = console.login_of(request)
    if console.login_required and (login is None or not login.cluster_alter):
        who = "this user" if login is None else f"User:{login.user}"
        return _error(403, f"{who} is not allowed Alter on the Cluster, which the controls need")
    action = request.match_info["action"]
    if action not in ACTIONS:
        return _error(404, f"unknown action {action!r} (kill, pause, start)")
    try:
        broker_id = int(request.match_info["id"])
        message = await asyncio.to_thread(_control, console.cluster_dir, broker_id, action)
    except ValueError:
        return _error(400, "the broker id is not a number")
    except OdradekError as exc:
        return _error(409, str(exc))
    return web.json_response({"ok": True, "message": message})


async def whoami(request: web.Request) -> web.Response:
    console = request.app[GATHER_KEY]
    login = console.login_of(request)
    alter = login is not None and login.cluster_alter
    return web.json_response({
        "login": console.login_required,
        "user": None if login is None else login.user,
        "cluster_alter": alter or not console.login_required,
        "controls": console.controls,
    })  # fmt: skip


async def login_handler(request: web.Request) -> web.Response:
    """Check the user against a broker; a session cookie when it lets them in."""
    console = request.app[GATHER_KEY]
    if not console.login_required:
        return _error(400, "this cluster's console needs no login")
    if request.headers.get(CONTROL_HEADER) != "1":
        return _error(403, f"missing the {CONTROL_HEADER} header")
    try:
        body = await _json_body(request)
    except UsageError as exc:
        return _error(400, exc.message)
    given = auth.check_credentials_shape(body.get("user"), body.get("password"))
    if given is None:
        return _error(400, "give a user name and a password")
    user, password = given
    async with console.login_slots:
        try:
            alter = await auth.check_login(console.bootstrap, console.security, user, password)
        except OdradekError as exc:
            status = 401 if exc.name == "SASL_AUTHENTICATION_FAILED" else 502
            return _error(status, exc.message)
    token = console.logins.create(user, alter, int(console.clock() * 1000))
    resp = web.json_response({"user": user, "cluster_alter": alter})
    resp.set_cookie(auth.COOKIE, token, httponly=True, samesite="Strict", path="/",
                    max_age=console.logins.ttl_ms // 1000)  # fmt: skip
    return resp


async def logout_handler(request: web.Request) -> web.Response:
    console = request.app[GATHER_KEY]
    console.logins.drop(request.cookies.get(auth.COOKIE))
    resp = web.json_response({"ok": True})
    resp.del_cookie(auth.COOKIE, path="/")
    return resp


@web.middleware
async def require_login(request: web.Request, handler: Any) -> web.StreamResponse:
    """On a secured cluster, /api/ paths other than OPEN_PATHS need a live login."""
    console = request.app[GATHER_KEY]
    path = request.path
    if (
        console.login_required
        and path.startswith("/api/")
        and path not in OPEN_PATHS
        and console.login_of(request) is None
    ):
        return _error(401, "log in first (this cluster's SASL users)")
    resp: web.StreamResponse = await handler(request)
    return resp


def make_app(console: Console) -> web.Application:
    app = web.Application(client_max_size=BODY_BYTES_MAX, middlewares=[require_login])
    app[GATHER_KEY] = console
    app.router.add_get("/", index)
    app.router.add_get("/api/health", health)
    app.router.add_get("/api/whoami", whoami)
    app.router.add_post("/api/login", login_handler)
    app.router.add_post("/api/logout", logout_handler)
    app.router.add_get("/api/snapshot", snapshot)
    app.router.add_get("/api/events", events)
    app.router.add_post("/api/browse", browse_handler)
    app.router.add_post("/api/brokers/{id}/{action}", control_handler)
    app.router.add_static("/static/", STATIC_DIR)

    async def on_startup(_app: web.Application) -> None:
        await console.start()

    async def on_cleanup(_app: web.Application) -> None:
        await console.stop()

    app.on_startup.append(on_startup)
    app.on_cleanup.append(on_cleanup)
    return app


async def serve(
    bootstrap: str,
    cluster_dir: Path | None,
    host: str,
    port: int,
    *,
    allow_control: bool = False,
    interval_s: float = 0.4,
    hanging_max_age_ms: int | None = None,
    security: dict[str, Any] | None = None,
) -> None:
    """Serve until SIGTERM or SIGINT; prints the URL once listening."""
    controls = cluster_dir is not None and (is_loopback(host) or allow_control)
    console = Console(bootstrap, cluster_dir, interval_s=interval_s, controls=controls,
                      hanging_max_age_ms=hanging_max_age_ms, security=security)  # fmt: skip
    runner = web.AppRunner(
        make_app(console), handle_signals=False, access_log=None, shutdown_timeout=2.0
    )
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    bound = runner.addresses[0] if runner.addresses else (host, port)
    print(f"odradek console at http://{host}:{bound[1]}/", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    started = time.monotonic()
    try:
        await stop.wait()
    finally:
        print(f"odradek console: stopping after {time.monotonic() - started:.0f} s", flush=True)
        await runner.cleanup()
