"""The console of a secured cluster reads as the logged-in user (issue 31, point 1), marks
transactional records (point 4) and says it is loading (point 6).

One module-scoped `odradek cluster up --secure` (two brokers) and its console. As the admin:
topics `orders.secret` (a payload no one else may see, one committed, one aborted and one still
open transaction, a group `orders.secret.billing` that committed its offsets) and
`orders.public`. Users, made with `odradek users add` and given ACLs with `odradek acls add`,
as an operator would:

    reader   ALLOW Read on orders.secret (Read implies Describe), Describe on the group
    denied   DENY Read on orders.secret, ALLOW Read on orders.public
    nobody   no ACL at all

Each logs in to the console over HTTP and in Chromium. What `denied` and `nobody` receive (the
raw bodies of /api/snapshot, the first /api/events message, /api/browse, and the rendered
page) holds neither a byte of orders.secret's records nor its name; their browse of it is the
broker's TOPIC_AUTHORIZATION_FAILED. `reader` browses it, with the aborted and open
transactions' records marked, and read_committed leaves them out.
"""

from __future__ import annotations

import http.cookiejar
import json
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from deploy.zookeeper import ZkProcess
from tests.fixtures.cluster import run_odradek, wait_until

# slow: the browser, and a whole secure cluster of its own
pytestmark = [pytest.mark.integration, pytest.mark.slow]

SECRET = "orders.secret"
PUBLIC = "orders.public"
PAYLOAD = "SECRET-PAYLOAD-7f3a"  # in every record of orders.secret
GROUP = f"{SECRET}.billing"  # a group that read orders.secret (its id names the topic)
PASSWORDS = {"reader": "reader-pw-1", "denied": "denied-pw-2", "nobody": "nobody-pw-3"}
HTTP_S = 30.0
SETTLE_S = 60.0


@dataclass
class Setup:
    dir: Path
    console: str
    conf: dict[str, str]
    open_txn: Any  # a confluent-kafka producer with its transaction left open


def _odradek(where: Path, *args: str) -> None:
    done = run_odradek(*args, "--dir", str(where), "--command-config",
                       str(where / "client.properties"))  # fmt: skip
    assert done.returncode == 0, done.stderr


def _txn(conf: dict[str, str], txn_id: str, values: list[str], end: str | None) -> Any:
    from confluent_kafka import Producer

    producer = Producer({**conf, "transactional.id": txn_id, "transaction.timeout.ms": 900_000})
    producer.init_transactions(30)
    producer.begin_transaction()
    for v in values:
        producer.produce(SECRET, value=v.encode(), key=b"k", partition=0)
    assert producer.flush(30) == 0
    if end == "commit":
        producer.commit_transaction(30)
    elif end == "abort":
        producer.abort_transaction(30)
    return producer


def _commit_group(conf: dict[str, str]) -> None:
    """GROUP commits offset 2 of orders.secret-0 (and leaves)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({**conf, "group.id": GROUP, "enable.auto.commit": False})
    try:
        consumer.commit(offsets=[TopicPartition(SECRET, 0, 2)], asynchronous=False)
    finally:
        consumer.close()


def _fill(conf: dict[str, str]) -> Any:
    """The topics and their records; returns the producer whose transaction stays open."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient(conf)
    for f in admin.create_topics([NewTopic(SECRET, 1, 2), NewTopic(PUBLIC, 1, 2)]).values():
        f.result(timeout=30)
    plain = Producer({**conf, "acks": "all"})
    for i in range(3):
        plain.produce(SECRET, value=f"{PAYLOAD} plain-{i}".encode(), partition=0)
        plain.produce(PUBLIC, value=f"public-{i}".encode(), partition=0)
    assert plain.flush(30) == 0
    _commit_group(conf)
    _txn(conf, "txn-committed", [f"{PAYLOAD} committed-{i}" for i in range(2)], "commit")
    _txn(conf, "txn-aborted", [f"{PAYLOAD} aborted-{i}" for i in range(2)], "abort")
    open_txn = _txn(conf, "txn-open", [f"{PAYLOAD} open-{i}" for i in range(2)], None)
    # the coordinator writes the ended transactions' markers after it answers EndTxn: wait
    # until the last stable offset stands at the open transaction (3 + 2 + 1 + 2 + 1 offsets)
    wait_until(lambda: _last_stable_offset(admin) == 9, "the markers written", SETTLE_S)
    return open_txn


def _last_stable_offset(admin: Any) -> int:
    from confluent_kafka import IsolationLevel, TopicPartition
    from confluent_kafka.admin import OffsetSpec

    futures = admin.list_offsets({TopicPartition(SECRET, 0): OffsetSpec.latest()},
                                 isolation_level=IsolationLevel.READ_COMMITTED)  # fmt: skip
    return int(next(iter(futures.values())).result(timeout=30).offset)


@pytest.fixture(scope="module")
def setup(zk_server: ZkProcess, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    from tests.integration.test_secure_cluster import _printed_python

    where = tmp_path_factory.mktemp("console-secure") / "cluster"
    connect = f"{zk_server.connect}/odradek-{uuid.uuid4().hex[:12]}"
    up = run_odradek("cluster", "up", "--secure", "--dir", str(where), "--brokers", "2",
                     "--zookeeper", connect, "--session-timeout-ms", "4000")  # fmt: skip
    open_txn = None
    try:
        assert up.returncode == 0, up.stderr
        conf, _ = _printed_python(up.stdout)
        console = next(line for line in up.stdout.splitlines() if line.startswith("console="))
        for user, password in PASSWORDS.items():
            pw = where.parent / f"{user}.pw"
            pw.write_text(password + "\n")
            _odradek(where, "users", "add", user, "--mechanism", "SCRAM-SHA-512",
                     "--password-file", str(pw))  # fmt: skip
        _odradek(where, "acls", "add", "--allow-principal", "User:reader", "--operation", "Read",
                 "--topic", SECRET)  # fmt: skip
        _odradek(where, "acls", "add", "--allow-principal", "User:reader", "--operation",
                 "Describe", "--group", GROUP)  # fmt: skip
        _odradek(where, "acls", "add", "--deny-principal", "User:denied", "--operation", "Read",
                 "--topic", SECRET)  # fmt: skip
        _odradek(where, "acls", "add", "--allow-principal", "User:denied", "--operation", "Read",
                 "--topic", PUBLIC)  # fmt: skip
        open_txn = _fill(conf)
        yield Setup(where, console.partition("=")[2], conf, open_txn)
    finally:
        if open_txn is not None:
            open_txn.abort_transaction(30)
        down = run_odradek("cluster", "down", "--dir", str(where))
        assert down.returncode == 0, down.stderr


class Page:
    """An HTTP client with a cookie jar, as the console's page is; bodies kept raw."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.opener = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar())
        )

    def _request(self, method: str, path: str, body: dict[str, Any] | None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        return urllib.request.Request(self.base + path.lstrip("/"), data=data, method=method,
                                      headers={"X-Odradek-Console": "1",
                                               "Content-Type": "application/json"})  # fmt: skip

    def raw(self, method: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, bytes]:
        try:
            with self.opener.open(self._request(method, path, body), timeout=HTTP_S) as resp:
                return resp.status, resp.read()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read()

    def call(self, method: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, Any]:
        status, raw = self.raw(method, path, body)
        return status, json.loads(raw)

    def first_event(self) -> bytes:
        """The raw bytes of /api/events up to and including its first snapshot message."""
        got, in_data = b"", False
        with self.opener.open(self._request("GET", "/api/events", None), timeout=HTTP_S) as resp:
            while True:
                line = resp.readline()
                assert line, f"the stream ended before a snapshot: {got!r}"
                got += line
                if line.startswith(b"data: "):
                    in_data = True
                elif in_data and line == b"\n":
                    return got

    def login(self, user: str, password: str) -> None:
        status, body = wait_until(
            lambda: (lambda got: got if got[0] != 401 else None)(
                self.call("POST", "/api/login", {"user": user, "password": password})
            ), f"{user}'s credential on the brokers", SETTLE_S,
        )  # fmt: skip
        assert (status, body["user"]) == (200, user), body


def _topics(snap: dict[str, Any]) -> set[str]:
    return {t["name"] for t in snap["topics"]}


def _admin_password(setup: Setup) -> str:
    return setup.conf["sasl.password"]


@pytest.mark.parametrize("user", ["denied", "nobody"])
def test_a_refused_user_receives_nothing_of_the_topic(setup: Setup, user: str) -> None:
    page = Page(setup.console)
    page.login(user, PASSWORDS[user])
    # the page's own view: what the broker lets this user Describe (and the admin sees more)
    if user == "denied":
        wait_until(lambda: PUBLIC in _topics(page.call("GET", "/api/snapshot")[1]),
                   "orders.public in denied's view", SETTLE_S)  # fmt: skip
    admin = Page(setup.console)
    admin.login("admin", _admin_password(setup))
    wait_until(lambda: {SECRET, PUBLIC} <= _topics(admin.call("GET", "/api/snapshot")[1]),
               "both topics in the admin's view", SETTLE_S)  # fmt: skip
    wait_until(lambda: "txn-open" in admin.raw("GET", "/api/snapshot")[1].decode(),
               "the open transaction in the admin's view", SETTLE_S)  # fmt: skip
    wait_until(lambda: GROUP in {g["id"] for g in admin.call("GET", "/api/snapshot")[1]["groups"]},
               "the group in the admin's view", SETTLE_S)  # fmt: skip
    bodies = {"snapshot": page.raw("GET", "/api/snapshot")[1], "events": page.first_event()}
    status, bodies["browse"] = page.raw("POST", "/api/browse", {"topic": SECRET})
    assert status == 403, bodies["browse"]
    assert json.loads(bodies["browse"])["error"].startswith("TOPIC_AUTHORIZATION_FAILED")
    status, bodies["search"] = page.raw("POST", "/api/browse", {"topic": SECRET, "search": "x"})
    assert status == 403, bodies["search"]
    for what, body in bodies.items():
        assert SECRET.encode() not in body, f"{user}'s {what} names the topic: {body[:300]!r}"
        assert PAYLOAD.encode() not in body, f"{user}'s {what} holds its records"
        assert b"txn-open" not in body and b"txn-aborted" not in body, what
    snap = json.loads(bodies["snapshot"])
    assert snap["viewer"] == user and snap["brokers"], snap
    # the parts the broker refuses this user are said to be refused, in the broker's words
    refused = {r["section"]: r["why"] for r in snap["refused"]}
    assert refused.get("sizes", "").startswith("CLUSTER_AUTHORIZATION_FAILED"), snap["refused"]
    if user == "denied":
        assert _topics(snap) == {PUBLIC}
        status, answer = page.call("POST", "/api/browse", {"topic": PUBLIC})
        assert status == 200 and [r["value"]["text"] for r in answer["records"]] == [
            f"public-{i}" for i in range(3)
        ]  # fmt: skip
    else:
        assert _topics(snap) == set()
    page.call("POST", "/api/logout")
    assert page.raw("GET", "/api/snapshot")[0] == 401
    admin.call("POST", "/api/logout")


def test_an_allowed_user_reads_the_topic_with_transactions_marked(setup: Setup) -> None:
    page = Page(setup.console)
    page.login("reader", PASSWORDS["reader"])
    snap = wait_until(
        lambda: (lambda s: s if SECRET in _topics(s) else None)(
            page.call("GET", "/api/snapshot")[1]
        ), "orders.secret in reader's view", SETTLE_S,
    )  # fmt: skip
    assert PUBLIC not in _topics(snap)  # no ACL on it: not this user's to see
    group = wait_until(
        lambda: next((g for g in page.call("GET", "/api/snapshot")[1]["groups"]
                      if g["id"] == GROUP), None), "the group in reader's view", SETTLE_S,
    )  # fmt: skip
    assert [(o["topic"], o["partition"], o["committed"]) for o in group["offsets"]] == [
        (SECRET, 0, 2)
    ]
    status, answer = page.call("POST", "/api/browse", {"topic": SECRET, "limit": 50})
    assert status == 200, answer
    assert answer["isolation"] == "read_uncommitted"
    marks = {r["value"]["text"].split()[-1]: r["txn"] for r in answer["records"]}
    assert marks == {
        "plain-0": None, "plain-1": None, "plain-2": None,
        "committed-0": None, "committed-1": None,
        "aborted-0": "aborted", "aborted-1": "aborted",
        "open-0": "open", "open-1": "open",
    }  # fmt: skip
    status, committed = page.call(
        "POST", "/api/browse", {"topic": SECRET, "limit": 50, "isolation": "read_committed"}
    )
    assert status == 200, committed
    texts = [r["value"]["text"].split()[-1] for r in committed["records"]]
    assert texts == ["plain-0", "plain-1", "plain-2", "committed-0", "committed-1"]
    assert all(r["txn"] is None for r in committed["records"])
    status, bad = page.call("POST", "/api/browse", {"topic": SECRET, "isolation": "dirty"})
    assert status == 400 and "isolation must be" in bad["error"], bad
    page.call("POST", "/api/logout")


def _log_in(page: Any, console: str, user: str, password: str) -> None:
    page.goto(console)
    page.wait_for_selector("#login:not([hidden])")
    page.fill("#login-user", user)
    page.fill("#login-password", password)
    page.click("#login-go")
    page.wait_for_selector("main:not([hidden])")


def test_the_denied_users_page_shows_nothing_of_the_topic(setup: Setup) -> None:
    """In Chromium: the denied user's rendered pages (each tab) hold neither the topic's name
    nor its records; a browse of it (the name typed in) shows the broker's refusal."""
    from deploy.console.screenshots import chromium_page

    with chromium_page() as page:
        _log_in(page, setup.console, "denied", PASSWORDS["denied"])
        page.wait_for_selector(f'h3[data-topic-name="{PUBLIC}"]', state="attached")
        page.wait_for_selector("#refused:not([hidden])")
        assert "CLUSTER_AUTHORIZATION_FAILED" in page.text_content("#refused")
        for tab in ("brokers", "topics", "groups", "transactions", "chaos", "messages"):
            page.goto(f"{setup.console}#{tab}")
            page.wait_for_selector(f'section[data-section="{tab}"].active')
            page.wait_for_selector("main:not(.loading)")
            html = page.content()
            assert SECRET not in html and PAYLOAD not in html, tab
        options = page.eval_on_selector_all("#topic option", "os => os.map(o => o.value)")
        assert options == [PUBLIC]
        page.eval_on_selector("#topic", f"s => s.add(new Option('{SECRET}', '{SECRET}', 1, 1))")
        page.click("#go")
        page.wait_for_function(
            "document.querySelector('#browse-status').textContent.includes('AUTHORIZATION')"
        )
        assert "TOPIC_AUTHORIZATION_FAILED" in page.text_content("#browse-status")
        assert PAYLOAD not in page.content()


def test_the_readers_page_loads_then_marks_transactions(setup: Setup) -> None:
    """In Chromium: while no snapshot has come, every tab says it is loading; then the reader's
    page shows orders.secret, its records with the aborted and open ones marked, and only the
    committed ones once read_committed is picked. The groups chart's label agrees with the
    docs' five minutes."""
    from deploy.console.screenshots import chromium_page

    with chromium_page() as page:
        page.route("**/api/events", lambda route: None)  # held: no snapshot comes
        _log_in(page, setup.console, "reader", PASSWORDS["reader"])
        assert page.get_attribute("main", "class") == "loading"
        assert "loading" in page.text_content("#summary")
        for where in ("#brokers tbody", "#topics", "#groups", "#txns tbody", "#hanging tbody"):
            assert "loading" in page.text_content(where), where
        page.unroute("**/api/events")
        page.reload()
        page.wait_for_selector(f'h3[data-topic-name="{SECRET}"]', state="attached")
        assert page.get_attribute("main", "class") == ""
        assert "loading" not in page.text_content("#brokers tbody")

        page.goto(f"{setup.console}#messages")
        page.select_option("#topic", SECRET)
        page.fill("#limit", "50")
        page.click("#go")
        page.wait_for_selector("#records tr.record")
        marks = page.eval_on_selector_all(
            "#records tr.record", "rows => rows.map(r => r.dataset.txn || '')"
        )
        assert sorted(marks) == ["", "", "", "", "", "aborted", "aborted", "open", "open"]
        assert page.text_content("#records tr.txn-aborted .txn-mark") == "aborted"
        assert PAYLOAD in page.text_content("#records")
        page.select_option("#isolation", "read_committed")
        page.click("#go")
        page.wait_for_function(
            "document.querySelector('#browse-status').textContent.includes('committed only')"
        )
        assert page.eval_on_selector_all("#records tr.record", "rows => rows.length") == 5
        assert page.query_selector("#records tr[data-txn]") is None

        five_min = page.evaluate("lagChart([[0, 5], [360000, 7]], 300000)")
        assert "last 5 min" in five_min and "360" not in five_min
        assert "last 42 s" in page.evaluate("lagChart([[0, 1], [42000, 2]], 300000)")
