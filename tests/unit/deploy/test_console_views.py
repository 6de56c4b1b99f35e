"""The console's per-reader Views (deploy/console/views.py) and the refusals kept apart from
failures (deploy/console/refusals.py): a session's View starts on first use and stops at logout
or when its session ended or it idled, its stream ending with it; at most `views_max` run; a
whole-cluster request the broker refuses is asked again topic by topic. The View's Gatherer is
replaced by a stub here (pure bookkeeping); a real secured cluster drives them in
tests/integration/test_console_secure.py."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from deploy.console.refusals import each_topic, refused_text
from deploy.console.views import Login, TooManyViews, View, Views
from protocol.errors import NetworkError, TopicAuthorizationFailedError


class StubGatherer:
    """What a View asks of its Gatherer; counts what it was asked."""

    def __init__(self, user: str) -> None:
        self.user = user
        self.closed = False

    async def refresh(self) -> dict[str, Any]:
        return self.snapshot()

    async def run(self, interval_s: float) -> None:
        await asyncio.Event().wait()

    def snapshot(self) -> dict[str, Any]:
        return {"now_ms": 0, "viewer": self.user}

    async def close(self) -> None:
        self.closed = True


def _views(views_max: int = 2, idle_s: float = 60.0) -> Views:
    def make(login: Login) -> View:
        return View(StubGatherer(login.user), 0.05, False)  # type: ignore[arg-type]

    return Views(make, views_max=views_max, idle_s=idle_s)


def test_a_login_never_shows_its_password() -> None:
    assert "pw" not in repr(Login("alice", "pw", False))


async def test_each_session_gets_its_own_view_as_its_user() -> None:
    views = _views()
    views.add("t1", Login("alice", "a-pw", False))
    views.add("t2", Login("bob", "b-pw", False))
    alice, bob = await views.view("t1"), await views.view("t2")
    assert alice is not bob and await views.view("t1") is alice
    assert '"viewer": "alice"' in await alice.first_snapshot(5)
    assert '"viewer": "bob"' in await bob.first_snapshot(5)
    with pytest.raises(KeyError):
        await views.view("not-a-session")
    await views.close()


async def test_logout_stops_the_view_and_ends_its_stream() -> None:
    views = _views()
    views.add("t1", Login("alice", "a-pw", False))
    view = await views.view("t1")
    seen = await view.wait_change(0, 5)
    waiting = asyncio.create_task(view.wait_change(seen, 30))
    await asyncio.sleep(0)
    await views.drop("t1")
    await asyncio.wait_for(waiting, 5)  # woken at once, not after its 30 s
    assert view.closed and view.gatherer.closed  # type: ignore[attr-defined]
    with pytest.raises(KeyError):  # its login (and password) forgotten
        await views.view("t1")


async def test_views_are_bounded_and_idle_ones_make_room() -> None:
    views = _views(views_max=2, idle_s=0.0)
    for t in ("t1", "t2", "t3"):
        views.add(t, Login(t, "pw", False))
    one, two = await views.view("t1"), await views.view("t2")
    one.streams = two.streams = 1  # both pages open
    with pytest.raises(TooManyViews, match="at most 2 users' views"):
        await views.view("t3")
    one.streams = 0  # t1's page closed (idle_s 0: idle at once)
    await views.view("t3")
    assert one.closed and not two.closed and len(views) == 2
    two.streams = 0
    assert await views.view("t1") is not one  # a new View when t1 comes back
    await views.close()


async def test_reap_drops_ended_sessions() -> None:
    views = _views(idle_s=3600)
    views.add("t1", Login("alice", "pw", False))
    views.add("t2", Login("bob", "pw", False))
    alice, bob = await views.view("t1"), await views.view("t2")
    await views.reap(lambda token: token == "t2")  # t1 expired
    assert alice.closed and not bob.closed
    await views.close()
    assert bob.closed


async def test_each_topic_keeps_what_the_broker_answers() -> None:
    asked: list[list[str]] = []

    async def ask(topics: list[str]) -> dict[str, int]:
        asked.append(topics)
        if "secret" in topics:
            raise TopicAuthorizationFailedError()
        return {t: 1 for t in topics}

    answers, refused = await each_topic(["a", "secret", "b"], ask)
    assert answers == [{"a": 1}, {"b": 1}] and refused == ["secret"]
    assert asked[0] == ["a", "secret", "b"]
    assert await each_topic(["a"], ask) == ([{"a": 1}], [])

    async def broken(topics: list[str]) -> None:
        raise NetworkError("down")

    with pytest.raises(NetworkError):  # a failure is not a refusal
        await each_topic(["a"], broken)
    text = refused_text([f"t{i}" for i in range(7)], "DescribeConfigs")
    assert text == "TOPIC_AUTHORIZATION_FAILED (DescribeConfigs) on t0, t1, t2, t3, t4 and 2 more"
