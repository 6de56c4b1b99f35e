"""The console's logins (deploy/console/auth.py, server.py): sessions bounded and expiring, and
on a secured cluster the API closed without one and the controls closed without Cluster Alter.
The broker's answer to a login (check_login) is replaced by a table here; a real broker gives
it in tests/integration/test_secure_cluster.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from deploy.console import auth, server
from protocol.errors import SaslAuthenticationFailedError


def test_sessions_expire_and_are_bounded() -> None:
    store = auth.LoginStore(ttl_ms=1000, max_sessions=2)
    a = store.create("alice", True, now_ms=0)
    assert store.get(a, 999) == auth.ConsoleLogin("alice", True, 1000)
    assert store.get(a, 1000) is None  # expired, and forgotten
    assert len(store) == 0
    b = store.create("bob", False, 10)
    c = store.create("carol", False, 20)
    d = store.create("dave", False, 30)  # a third: the oldest goes
    assert store.get(b, 40) is None
    assert store.get(c, 40) is not None and store.get(d, 40) is not None
    store.drop(c)
    assert store.get(c, 40) is None
    assert store.get(None, 40) is None and store.get("made-up", 40) is None


def test_credentials_shape() -> None:
    assert auth.check_credentials_shape("u", "p") == ("u", "p")
    for bad in [("", "p"), ("u", ""), (1, "p"), ("u", None), ("u" * 300, "p")]:
        assert auth.check_credentials_shape(*bad) is None


USERS = {"admin": ("admin-pw", True), "viewer": ("viewer-pw", False)}


async def _fake_check(bootstrap: str, security: dict[str, Any], user: str, password: str,
                      timeout_ms: int = 0) -> bool:  # fmt: skip
    known = USERS.get(user)
    if known is None or known[0] != password:
        raise SaslAuthenticationFailedError("Authentication failed during authentication")
    return known[1]


@pytest.fixture
async def page(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    monkeypatch.setattr(auth, "check_login", _fake_check)
    security = {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "SCRAM-SHA-512",
                "sasl_plain_username": "admin", "sasl_plain_password": "admin-pw"}  # fmt: skip
    # no cluster here (nothing listens on port 1): the handlers are what is tested; a user's
    # view gathers a snapshot of failures, quickly
    console = server.Console("127.0.0.1:1", tmp_path, controls=True, security=security)
    client = TestClient(TestServer(server.make_app(console)))
    await client.start_server()
    yield client
    await client.close()


HEADERS = {server.CONTROL_HEADER: "1"}


async def test_a_secured_console_needs_a_login(page: TestClient) -> None:
    assert (await (await page.get("/api/whoami")).json())["login"] is True
    assert (await page.get("/api/snapshot")).status == 401
    assert (await page.post("/api/browse", json={"topic": "t"})).status == 401
    wrong = await page.post("/api/login", json={"user": "admin", "password": "x"}, headers=HEADERS)
    assert wrong.status == 401 and "Authentication failed" in (await wrong.json())["error"]
    no_header = await page.post("/api/login", json={"user": "admin", "password": "admin-pw"})
    assert no_header.status == 403
    ok = await page.post("/api/login", json={"user": "admin", "password": "admin-pw"},
                         headers=HEADERS)  # fmt: skip
    assert ok.status == 200
    cookie = ok.cookies[auth.COOKIE]
    assert cookie["httponly"] and cookie["samesite"] == "Strict"
    assert (await page.get("/api/snapshot")).status == 200
    me = await (await page.get("/api/whoami")).json()
    assert me == {"login": True, "user": "admin", "cluster_alter": True, "controls": True,
                  "registry": False}  # fmt: skip
    await page.post("/api/logout", headers=HEADERS)
    assert (await page.get("/api/snapshot")).status == 401


async def test_the_controls_need_cluster_alter(page: TestClient) -> None:
    await page.post("/api/login", json={"user": "viewer", "password": "viewer-pw"},
                    headers=HEADERS)  # fmt: skip
    assert (await page.get("/api/snapshot")).status == 200  # may look
    denied = await page.post("/api/brokers/1/kill", headers=HEADERS)
    assert denied.status == 403
    assert "User:viewer is not allowed Alter on the Cluster" in (await denied.json())["error"]


async def test_a_login_past_the_views_bound_is_told_so(page: TestClient) -> None:
    console = page.server.app[server.GATHER_KEY]
    console.views.views_max = 0  # every users' view slot taken
    await page.post("/api/login", json={"user": "viewer", "password": "viewer-pw"},
                    headers=HEADERS)  # fmt: skip
    for path in ("/api/snapshot", "/api/events"):
        refused = await page.get(path)
        assert refused.status == 503
        assert "at most 0 users' views at once" in await refused.text()
