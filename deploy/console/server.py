"""The console's web server (aiohttp): the page, the live snapshot, the browser, the controls.

    GET  /                       static/index.html (vanilla JS and CSS beside it, no build step)
    GET  /api/snapshot           the latest snapshot (JSON, gather.py)
    GET  /api/events             Server-Sent Events: the snapshot each time it changes
    POST /api/browse             one page of records or one search step (browse.py), JSON in/out
    POST /api/brokers/{id}/{kill|pause|start}   a local cluster's broker (deploy/cluster.py)
    GET  /api/health             "ok" (for `cluster up` to wait on)
    GET  /api/whoami             {"login": required?, "user", "cluster_alter", "controls"}
    POST /api/login, /api/logout a secured cluster's user (auth.py), JSON {"user", "password"}
    GET  /api/schemas            the schema registry's subjects, versions and levels (schemas.py)
    GET  /api/schemas/{subject}  a subject's versions with their schema texts, and its level

With the brokers' schema registry URLs (a local cluster's, or --registry), the browser shows
values framed with a registry id decoded (schemas.py), and the schema pages ask the registry
as the reader (on a secured cluster, with the logged-in user's login).

Each reader's View (views.py) refreshes its snapshot every `interval_s` and wakes its event
streams when it changed (the time it was taken aside); each stream sends only the newest
snapshot, so a slow page skips snapshots instead of queueing them; a stream sends nothing until
the first snapshot (the page says it is loading). Streams are capped at `STREAMS_MAX`.

The controls exist only with a local cluster (--dir) and a loopback address (unless
`allow_control`); each POST must carry the header `X-Odradek-Console: 1`, which a page of another
origin cannot send without a CORS preflight this server never grants.

On a secured cluster (its client settings, --command-config, use SASL) every /api/ path but
health, whoami and login needs a login: the cluster's own users, checked by a broker
(auth.py), kept in an HttpOnly cookie; the controls need the user's login to have been allowed
Alter on the Cluster. Logins are checked at most LOGINS_AT_ONCE at a time. Everything a
logged-in user gets (snapshot, event stream, browser) is read with that user's own SASL
session, so the broker's ACLs decide it (views.py says why this and not a filtered admin
view); a refusal (an authorization error) is answered 403 with the broker's words.
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

from deploy.console import auth, browse, schemas
from deploy.console.gather import Gatherer
from deploy.console.refusals import REFUSALS, Viewer
from deploy.console.views import Login, TooManyViews, View, Views
from deploy.netns import is_loopback
from protocol.errors import OdradekError, UsageError

STATIC_DIR = Path(__file__).parent / "static"
STREAMS_MAX = 32
KEEPALIVE_S = 15.0
BODY_BYTES_MAX = 64 * 1024
CONTROL_HEADER = "X-Odradek-Console"
ACTIONS = {"kill": "KILL", "pause": "STOP", "start": None}
LOGINS_AT_ONCE = 4
REAP_S = 5.0  # how often ended sessions' and idle Views are stopped
OPEN_PATHS = ("/api/health", "/api/whoami", "/api/login")
GATHER_KEY: web.AppKey[Console] = web.AppKey("console")


class Console:
    """What the handlers share: the logins and the Views (views.py)."""

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
        registry_urls: list[str] | None = None,
    ) -> None:
        self.security = dict(security or {})
        self.registry_urls = list(registry_urls or [])
        self.login_required = self.security.get("security_protocol", "").startswith("SASL_")
        self.logins = auth.LoginStore()
        self.login_slots = asyncio.Semaphore(LOGINS_AT_ONCE)
        self.clock = clock
        self.bootstrap = bootstrap
        self.cluster_dir = cluster_dir
        self.interval_s = interval_s
        self.hanging_max_age_ms = hanging_max_age_ms
        self.controls = controls and cluster_dir is not None
        self.streams = 0
        # unsecured: one View for everyone; secured: one per session, as its user (views.py)
        self.shared: View | None = None if self.login_required else self._view(None)
        self.views = Views(self._user_view)
        self._reaper: asyncio.Task[None] | None = None

    def _view(self, login: Login | None) -> View:
        security, viewer = self.security, None
        if login is not None:
            security = dict(self.security, sasl_plain_username=login.user,
                            sasl_plain_password=login.password)  # fmt: skip
            viewer = Viewer(login.user, login.cluster_alter)
        gatherer = Gatherer(self.bootstrap, self.cluster_dir, security=security, viewer=viewer,
                            hanging_max_age_ms=self.hanging_max_age_ms)  # fmt: skip
        return View(gatherer, self.interval_s, self.controls)

    def _user_view(self, login: Login) -> View:
        return self._view(login)

    def login_of(self, request: web.Request) -> auth.ConsoleLogin | None:
        return self.logins.get(request.cookies.get(auth.COOKIE), int(self.clock() * 1000))

    async def view_of(self, request: web.Request) -> View:
        """The View the request's reader gets (the require_login middleware let it in)."""
        if self.shared is not None:
            return self.shared
        token = request.cookies.get(auth.COOKIE)
        try:
            return await self.views.view(token or "")
        except KeyError:  # a session of this process with no View's login: a restart, say
            raise web.HTTPUnauthorized(text="log in again") from None
        except TooManyViews as exc:
            raise web.HTTPServiceUnavailable(text=str(exc)) from None

    async def start(self) -> None:
        if self.shared is not None:
            await self.shared.start(wait=True)
        self._reaper = asyncio.create_task(self._reap_forever())

    async def _reap_forever(self) -> None:
        while True:
            await asyncio.sleep(REAP_S)
            await self.views.reap(self._alive)

    def _alive(self, token: str) -> bool:
        return self.logins.get(token, int(self.clock() * 1000)) is not None

    async def stop(self) -> None:
        if self._reaper is not None:
            self._reaper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reaper
        if self.shared is not None:
            await self.shared.stop()
        await self.views.close()


# ----- handlers --------------------------------------------------------------------------------


async def index(request: web.Request) -> web.FileResponse:
    return web.FileResponse(STATIC_DIR / "index.html")


async def health(request: web.Request) -> web.Response:
    return web.Response(text="ok")


async def snapshot(request: web.Request) -> web.Response:
    view = await request.app[GATHER_KEY].view_of(request)
    text = await view.first_snapshot()
    if not text:
        return _error(503, "the first snapshot is still being gathered")
    return web.Response(text=text, content_type="application/json")


async def events(request: web.Request) -> web.StreamResponse:
    """The reader's own View's snapshots; ends when its View stops (the session ended) or the
    session expires."""
    console = request.app[GATHER_KEY]
    if console.streams >= STREAMS_MAX:
        raise web.HTTPServiceUnavailable(text=f"at most {STREAMS_MAX} pages at once")
    view = await console.view_of(request)
    resp = web.StreamResponse(headers={
        "Content-Type": "text/event-stream", "Cache-Control": "no-cache",
    })  # fmt: skip
    await resp.prepare(request)
    console.streams += 1
    view.streams += 1
    try:
        seen = 0  # 0: nothing published yet (the page shows that it is loading)
        while not view.closed and (not console.login_required or console.login_of(request)):
            if view.version != seen:
                seen = view.version
                await resp.write(f"data: {view.text}\n\n".encode())
            else:
                await resp.write(b": keepalive\n\n")
            await view.wait_change(seen, KEEPALIVE_S)
    except (ConnectionResetError, asyncio.CancelledError):
        pass
    finally:
        console.streams -= 1
        view.streams -= 1
        view.touch()
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
        view = await console.view_of(request)
        answer = await browse.browse(
            view.gatherer.admin, console.bootstrap, topic,
            partitions=str(body.get("partitions", "")), start=str(body.get("start", "earliest")),
            cursor=cursor, direction=str(body.get("direction", "forward")),
            limit=int(body.get("limit", 50)), search=str(body.get("search", "")),
            security=view.gatherer.security,
            isolation=str(body.get("isolation", browse.READ_UNCOMMITTED)),
            decoder=registry_of(console, view).decoder() if console.registry_urls else None,
        )  # fmt: skip
    except UsageError as exc:
        return _error(400, exc.message)
    except REFUSALS as exc:  # the broker's refusal to this user, in its words
        return _error(403, browse.error_text(exc))
    except (OdradekError, OSError, ValueError, TypeError) as exc:
        return _error(502, browse.error_text(exc))
    return web.json_response(answer)


def registry_of(console: Console, view: View) -> schemas.Registry:
    """The schema registry as this View's reader (their login on a secured cluster)."""
    return schemas.Registry(console.registry_urls, view.gatherer.security)


async def schemas_handler(request: web.Request) -> web.Response:
    console = request.app[GATHER_KEY]
    if not console.registry_urls:
        return _error(404, "this console knows no schema registry (--registry URL)")
    registry = registry_of(console, await console.view_of(request))
    subject = request.match_info.get("subject")
    try:
        answer = await (registry.subjects() if subject is None else registry.subject(subject))
    except schemas.RegistryUnavailable as exc:
        status = {401: 403, 403: 403, 404: 404}.get(exc.status, 502)
        return _error(status, exc.message)
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
        "registry": bool(console.registry_urls),
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
    old = request.cookies.get(auth.COOKIE)
    if old:  # this page's earlier session ends: its View and password go
        console.logins.drop(old)
        await console.views.drop(old)
    token = console.logins.create(user, alter, int(console.clock() * 1000))
    console.views.add(token, Login(user, password, alter))  # its View reads as this user
    resp = web.json_response({"user": user, "cluster_alter": alter})
    resp.set_cookie(auth.COOKIE, token, httponly=True, samesite="Strict", path="/",
                    max_age=console.logins.ttl_ms // 1000)  # fmt: skip
    return resp


async def logout_handler(request: web.Request) -> web.Response:
    console = request.app[GATHER_KEY]
    token = request.cookies.get(auth.COOKIE)
    console.logins.drop(token)
    if token:
        await console.views.drop(token)  # its connections closed, its password forgotten
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
    app.router.add_get("/api/schemas", schemas_handler)
    app.router.add_get("/api/schemas/{subject}", schemas_handler)
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
    registry_urls: list[str] | None = None,
) -> None:
    """Serve until SIGTERM or SIGINT; prints the URL once listening."""
    controls = cluster_dir is not None and (is_loopback(host) or allow_control)
    console = Console(bootstrap, cluster_dir, interval_s=interval_s, controls=controls,
                      hanging_max_age_ms=hanging_max_age_ms, security=security,
                      registry_urls=registry_urls)  # fmt: skip
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
