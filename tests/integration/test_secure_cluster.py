"""`odradek cluster up --secure`: a cluster a newcomer starts with one command, that lets in
only its own users, and the tools and clients that use what it prints.

One module-scoped secure cluster (two brokers, the session's ZooKeeper in a chroot of its
own), started by the `odradek` command as a user would. Then:
- what it prints: a client.properties (also in the cluster dir, 0600) and a Python snippet;
- confluent-kafka with the printed Python `conf` creates a topic, produces, and consumes in a
  group, committing; the same records come back;
- `odradek topics list --command-config client.properties` lists that topic; without the file
  the command is refused (the brokers' listeners are SASL_SSL), and with a wrong password it
  fails with SASL_AUTHENTICATION_FAILED's message, each quickly;
- a user who may Describe a topic but not Read it is told so in words by `odradek consume`;
- `odradek cluster status` shows SASL_SSL;
- the console asks for a login: its API is closed without one, a wrong password is refused,
  the admin (a super user) gets in and may use the broker controls, and a user the broker does
  not allow Alter on the Cluster gets in but may not;
- the schema registry speaks HTTPS with the cluster's CA and takes HTTP Basic with its SCRAM
  users: confluent-kafka's SchemaRegistryClient with the printed `registry_conf` registers
  through either broker, a wrong password is 401, and a user allowed only Describe on the
  topic `_schemas` reads but cannot register (403, 40301); `odradek schemas` logs in with
  --command-config.
"""

from __future__ import annotations

import http.cookiejar
import json
import stat
import time
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

pytestmark = pytest.mark.integration

QUICK_S = 30.0  # "quickly": a refusal, not a retry loop until some far timeout


@dataclass
class Secure:
    dir: Path
    stdout: str
    properties: Path
    conf: dict[str, str]  # confluent-kafka's, from the printed snippet
    native: dict[str, Any]
    console: str


def _printed_scope(stdout: str) -> dict[str, Any]:
    """The names the printed Python snippet defines (conf, registry_conf, native)."""
    start = stdout.index("# confluent-kafka")
    end = stdout.index("\n)\n", start) + 3
    scope: dict[str, Any] = {}
    exec(stdout[start:end], scope)
    return scope


def _printed_python(stdout: str) -> tuple[dict[str, str], dict[str, Any]]:
    scope = _printed_scope(stdout)
    return scope["conf"], scope["native"]


@pytest.fixture(scope="module")
def secure(zk_server: ZkProcess, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secure]:
    where = tmp_path_factory.mktemp("secure") / "cluster"
    connect = f"{zk_server.connect}/odradek-{uuid.uuid4().hex[:12]}"
    up = run_odradek("cluster", "up", "--secure", "--dir", str(where), "--brokers", "2",
                     "--zookeeper", connect, "--session-timeout-ms", "4000")  # fmt: skip
    try:
        assert up.returncode == 0, up.stderr
        conf, native = _printed_python(up.stdout)
        console = next(line for line in up.stdout.splitlines() if line.startswith("console="))
        yield Secure(where, up.stdout, where / "client.properties", conf, native,
                     console.partition("=")[2])  # fmt: skip
    finally:
        down = run_odradek("cluster", "down", "--dir", str(where))
        assert down.returncode == 0, down.stderr


def test_up_prints_the_client_properties_it_wrote(secure: Secure) -> None:
    text = secure.properties.read_text()
    assert stat.S_IMODE(secure.properties.stat().st_mode) == 0o600
    assert "security.protocol=SASL_SSL" in text and "sasl.mechanism=SCRAM-SHA-512" in text
    assert text.strip() in secure.stdout  # printed as written
    assert secure.conf["security.protocol"] == "SASL_SSL"
    assert secure.native["sasl_mechanism"] == "SCRAM-SHA-512"
    for toml in secure.dir.glob("broker-*.toml"):  # they hold the broker user's password
        assert stat.S_IMODE(toml.stat().st_mode) == 0o600


def test_confluent_kafka_with_the_printed_config_produces_and_consumes(secure: Secure) -> None:
    from confluent_kafka import Consumer, Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = "secure-orders"
    admin = AdminClient(secure.conf)
    for f in admin.create_topics([NewTopic(topic, 2, 2)]).values():
        f.result(timeout=30)
    producer = Producer({**secure.conf, "acks": "all"})
    sent = [f"order-{i}".encode() for i in range(20)]
    for value in sent:
        producer.produce(topic, value=value, key=value)
    assert producer.flush(30) == 0, "not every record was delivered"
    consumer = Consumer({**secure.conf, "group.id": "secure-group",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})  # fmt: skip
    got: list[bytes] = []
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + 60
        while len(got) < len(sent) and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            assert msg.error() is None, msg.error()
            got.append(msg.value())
        consumer.commit(asynchronous=False)
        committed = consumer.committed(consumer.assignment(), timeout=30)
    finally:
        consumer.close()
    assert sorted(got) == sorted(sent)
    assert sum(tp.offset for tp in committed) == len(sent)


def test_cli_needs_the_command_config(secure: Secure) -> None:
    ok = run_odradek("topics", "list", "--dir", str(secure.dir),
                     "--command-config", str(secure.properties))  # fmt: skip
    assert ok.returncode == 0, ok.stderr
    wait_until(
        lambda: "secure-orders" in run_odradek(
            "topics", "list", "--dir", str(secure.dir), "--command-config", str(secure.properties)
        ).stdout, "the topic in the listing", 30,
    )  # fmt: skip
    started = time.monotonic()
    bare = run_odradek("topics", "list", "--dir", str(secure.dir), timeout_s=QUICK_S)
    assert bare.returncode != 0, bare.stdout
    assert bare.stderr.startswith("odradek: error:"), bare.stderr
    assert f"--command-config {secure.dir / 'client.properties'}" in bare.stderr, bare.stderr
    bootstrap = secure.stdout.splitlines()[0]  # the brokers themselves refuse a plaintext client
    plain = run_odradek("topics", "list", "--bootstrap", bootstrap, timeout_s=QUICK_S * 2)
    assert plain.returncode == 1 and plain.stderr.startswith("odradek: error:"), plain.stderr
    assert time.monotonic() - started < QUICK_S


def test_a_wrong_password_is_refused_with_kafkas_error(secure: Secure, tmp_path: Path) -> None:
    text = secure.properties.read_text()
    password = secure.native["sasl_plain_password"]
    wrong = tmp_path / "wrong.properties"
    wrong.write_text(text.replace(password, "not-" + password))
    bad = run_odradek("topics", "list", "--dir", str(secure.dir), "--command-config", str(wrong),
                      timeout_s=QUICK_S)  # fmt: skip
    assert bad.returncode == 1
    assert "Authentication failed" in bad.stderr, bad.stderr
    assert password not in bad.stderr


def test_a_refused_read_says_which_user_may_not_read_which_partition(
    secure: Secure, tmp_path: Path
) -> None:
    """A user who may Describe a topic but not Read it: `odradek consume` ends with one line
    saying so in words (it said "TopicPartition(topic='orders.created', partition=0): fetch at
    offset 0 failed")."""
    admin = ("--dir", str(secure.dir), "--command-config", str(secure.properties))
    password_file = tmp_path / "reader.password"
    password_file.write_text("reader-secret\n")
    add = run_odradek("users", "add", "reader", "--mechanism", "SCRAM-SHA-512",
                      "--password-file", str(password_file), *admin)  # fmt: skip
    assert add.returncode == 0, add.stderr
    made = run_odradek("topics", "create", "orders.created", "--partitions", "1", *admin)
    assert made.returncode == 0, made.stderr
    wrote = run_odradek("produce", "orders.created", "--acks", "all", *admin, input="o-1\n")
    assert wrote.returncode == 0, wrote.stderr
    acl = run_odradek("acls", "add", "--allow-principal", "User:reader", "--operation",
                      "Describe", "--topic", "orders.created", *admin)  # fmt: skip
    assert acl.returncode == 0, acl.stderr
    reader = tmp_path / "reader.properties"
    password = secure.native["sasl_plain_password"]
    text = secure.properties.read_text().replace(password, "reader-secret")
    reader.write_text(text.replace('username="admin"', 'username="reader"'))
    assert 'username="reader"' in reader.read_text()

    def refused() -> Any:
        done = run_odradek("consume", "orders.created", "--from-beginning", "--timeout-ms",
                           "20000", "--dir", str(secure.dir),
                           "--command-config", str(reader))  # fmt: skip
        return done if "TOPIC_AUTHORIZATION_FAILED" in done.stderr else None

    done = wait_until(refused, "the reader's login and Describe ACL on the brokers", 60)
    assert done.returncode == 1 and done.stdout == "", done.stderr
    assert done.stderr.splitlines() == [
        "odradek: error: TOPIC_AUTHORIZATION_FAILED: user reader may not Read topic "
        "orders.created (partition 0, fetch at offset 0)"
    ], done.stderr


def test_status_shows_the_security_protocol(secure: Secure) -> None:
    status = run_odradek("cluster", "status", "--dir", str(secure.dir))
    assert status.returncode == 0, status.stderr
    lines = status.stdout.splitlines()
    assert lines[1].endswith("(SASL_SSL)") and lines[2].endswith("(SASL_SSL)"), status.stdout
    doc = json.loads(
        run_odradek("cluster", "status", "--dir", str(secure.dir), "-o", "json").stdout
    )
    assert doc["security_protocol"] == "SASL_SSL"


# ----- the console ------------------------------------------------------------------------------


class Page:
    """An HTTP client with a cookie jar, as the console's page is."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.opener = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar())
        )

    def call(self, method: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path.lstrip("/"), data=data, method=method,
                                     headers={"X-Odradek-Console": "1",
                                              "Content-Type": "application/json"})  # fmt: skip
        try:
            with self.opener.open(req, timeout=QUICK_S) as resp:
                return resp.status, json.loads(resp.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read())


def test_console_asks_for_a_login_and_checks_it_with_a_broker(secure: Secure) -> None:
    page = Page(secure.console)
    assert page.call("GET", "/api/whoami")[1]["login"] is True
    assert page.call("GET", "/api/snapshot")[0] == 401
    assert page.call("POST", "/api/brokers/1/pause")[0] == 401
    status, body = page.call("POST", "/api/login", {"user": "admin", "password": "wrong"})
    assert status == 401 and "Authentication failed" in body["error"], body
    assert page.call("GET", "/api/snapshot")[0] == 401
    password = secure.native["sasl_plain_password"]
    status, body = page.call("POST", "/api/login", {"user": "admin", "password": password})
    assert (status, body) == (200, {"user": "admin", "cluster_alter": True})
    status, snap = page.call("GET", "/api/snapshot")
    assert status == 200 and snap["controls"] is True
    # the Schemas tab asks the registry (HTTPS, the cluster's CA) as the logged-in admin
    status, listed = page.call("GET", "/api/schemas")
    assert status == 200 and listed["level"] == "BACKWARD", listed
    # "start" on a running broker: allowed through to the cluster, which says it runs
    status, body = page.call("POST", "/api/brokers/1/start")
    assert status != 403 and status != 401, body
    page.call("POST", "/api/logout")
    assert page.call("GET", "/api/snapshot")[0] == 401


def test_console_controls_need_cluster_alter(secure: Secure, tmp_path: Path) -> None:
    password_file = tmp_path / "viewer.password"
    password_file.write_text("viewer-secret\n")
    add = run_odradek("users", "add", "viewer", "--mechanism", "SCRAM-SHA-512",
                      "--password-file", str(password_file), "--dir", str(secure.dir),
                      "--command-config", str(secure.properties))  # fmt: skip
    assert add.returncode == 0, add.stderr
    page = Page(secure.console)
    status, body = wait_until(
        lambda: (lambda got: got if got[0] != 401 else None)(
            page.call("POST", "/api/login", {"user": "viewer", "password": "viewer-secret"})
        ), "the new user's credential on the brokers", 30,
    )  # fmt: skip
    assert (status, body) == (200, {"user": "viewer", "cluster_alter": False})
    assert page.call("GET", "/api/snapshot")[0] == 200  # may look
    # ... but the registry refuses it DESCRIBE on `_schemas`: the page says so, in its words
    status, body = page.call("GET", "/api/schemas")
    assert status == 403 and "User:viewer is not allowed to read" in body["error"], body
    status, body = page.call("POST", "/api/brokers/1/pause")
    assert status == 403 and "Alter on the Cluster" in body["error"], body


# ----- the README's secure section ---------------------------------------------------------------


def _readme_section() -> tuple[list[str], str]:
    """The README's security section: its shell commands and its Python block."""
    from tests.integration.test_cli_readme import ROOT, code_blocks, shell_commands

    text = (ROOT / "README.md").read_text()
    start = text.index("## Security")
    section = text[start : text.index("\n## ", start + 1)]
    commands: list[str] = []
    python = ""
    for kind, first, lines in code_blocks(section):
        if kind == "python":
            python = "\n".join(lines)
        elif kind == "shell":
            commands += [cmd for _, cmd in shell_commands(first, lines)]
    return commands, python


def test_the_readme_secure_section_works_as_written(secure: Secure, tmp_path: Path) -> None:
    """Its commands and its confluent-kafka example, in a directory where `secure` is this
    module's cluster (started by the fixture as `cluster up --secure` does, with two brokers
    on the test ZooKeeper; stopped by it likewise)."""
    import subprocess
    import sys

    commands, python = _readme_section()
    assert commands[0].startswith("odradek cluster up --secure --dir secure"), commands
    assert commands[-1].startswith("odradek cluster down --dir secure"), commands
    (tmp_path / "secure").symlink_to(secure.dir)
    for command in commands[1:-1]:
        argv = command.split("#")[0].split()[1:]
        done = run_odradek(*argv, cwd=tmp_path, timeout_s=QUICK_S * 2)
        refused = "refused" in command  # the README says which command is refused
        assert (done.returncode != 0) == refused, f"{command}: {done.stderr}"
    script = python.replace("127.0.0.1:SECURE_KAFKA_PORT", secure.conf["bootstrap.servers"])
    script = script.replace("ADMIN-PASSWORD", secure.conf["sasl.password"])
    ran = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True,
                         text=True, timeout=120)  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert "b'customer-7' b'42.00 EUR'" in ran.stdout, ran.stdout


NATIVE_SCRIPT = """
import sys, time
from client import Admin, Consumer, NewTopic, Producer, TopicPartition
{snippet}
bootstrap = native.pop("bootstrap_servers")
with Admin(bootstrap, **native) as admin:
    admin.create_topics([NewTopic("secure-native", 1, 2)])
with Producer(bootstrap, acks="all", **native) as producer:
    meta = producer.send("secure-native", b"over SASL_SSL", key=b"k").get(timeout=30)
with Consumer(bootstrap, auto_offset_reset="earliest", **native) as consumer:
    consumer.assign([TopicPartition("secure-native", meta.partition)])
    got = []
    deadline = time.monotonic() + 30
    while not got and time.monotonic() < deadline:
        polled = consumer.poll(timeout_ms=500)
        got += [r.value for batch in polled.values() for r in batch]
print(got)
"""


def test_the_native_client_with_the_printed_settings(secure: Secure) -> None:
    """The printed native snippet, pasted into a script as a user would. (In a subprocess: in
    this process pytest turns warnings into errors, and the sync client's close over TLS then
    hangs on an unclosed-transport ResourceWarning inside uvloop: a transport/ finding.)"""
    import subprocess
    import sys

    start = secure.stdout.index("# odradek's native client")
    snippet = secure.stdout[start : secure.stdout.index("\n)\n", start) + 3]
    script = NATIVE_SCRIPT.format(snippet=snippet)
    ran = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=120, cwd=Path(__file__).resolve().parents[2])  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "[b'over SASL_SSL']", ran.stdout


@pytest.mark.slow  # the browser
def test_the_console_page_shows_a_login_then_the_cluster(secure: Secure) -> None:
    """In a browser: the login form first (the tables hidden), a wrong password's message, then
    the admin's page with the brokers and the controls."""
    from deploy.console.screenshots import chromium_page

    with chromium_page() as page:
        page.goto(secure.console)
        page.wait_for_selector("#login:not([hidden])")
        assert page.is_hidden("main")
        page.fill("#login-user", "admin")
        page.fill("#login-password", "wrong")
        page.click("#login-go")
        page.wait_for_function(
            "document.querySelector('#login-status').textContent.includes('Authentication')"
        )
        page.fill("#login-password", secure.native["sasl_plain_password"])
        page.click("#login-go")
        page.wait_for_selector("#brokers tbody tr[data-broker]")
        assert page.is_hidden("#login")
        assert page.text_content("#me-name") == "User:admin"
        page.wait_for_selector('#brokers button[data-action="kill"]')


# ----- the schema registry ----------------------------------------------------------------------


def _add_user(secure: Secure, tmp_path: Path, user: str, password: str) -> None:
    password_file = tmp_path / f"{user}.password"
    password_file.write_text(password + "\n")
    add = run_odradek("users", "add", user, "--mechanism", "SCRAM-SHA-512",
                      "--password-file", str(password_file), "--dir", str(secure.dir),
                      "--command-config", str(secure.properties))  # fmt: skip
    assert add.returncode == 0, add.stderr


def test_the_schema_registry_takes_tls_and_the_clusters_users(
    secure: Secure, tmp_path: Path
) -> None:
    import warnings

    with warnings.catch_warnings():  # see test_schema_registry.py: authlib's own warning
        import authlib.deprecate  # noqa: F401

        warnings.simplefilter("ignore")
        from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
        from confluent_kafka.schema_registry.error import SchemaRegistryError

    conf = _printed_scope(secure.stdout)["registry_conf"]
    urls = conf["url"].split(",")
    assert len(urls) == 2 and all(u.startswith("https://") for u in urls), conf
    schema = Schema(json.dumps({"type": "record", "name": "Secured", "namespace": "sec",
                                "fields": [{"name": "a", "type": "int"}]}), "AVRO")  # fmt: skip
    ids = set()
    for i, url in enumerate(urls):  # the second broker forwards the write, login and all
        with SchemaRegistryClient({**conf, "url": url}) as admin:
            ids.add(admin.register_schema(f"secured-{i}-value", schema))
    assert len(ids) == 1, ids  # one global id for the same schema
    with SchemaRegistryClient({**conf, "basic.auth.user.info": "admin:wrong"}) as wrong:
        with pytest.raises(SchemaRegistryError) as refused:
            wrong.get_subjects()
        assert (refused.value.http_status_code, refused.value.error_code) == (401, 401)
    _add_user(secure, tmp_path, "schema-reader", "reader-secret")
    acl = run_odradek("acls", "add", "--allow-principal", "User:schema-reader", "--operation",
                      "Describe", "--topic", "_schemas", "--dir", str(secure.dir),
                      "--command-config", str(secure.properties))  # fmt: skip
    assert acl.returncode == 0, acl.stderr
    reader_conf = {**conf, "url": urls[1], "basic.auth.user.info": "schema-reader:reader-secret"}
    with SchemaRegistryClient(reader_conf) as reader:

        def subjects() -> list[str] | None:
            try:
                return list(reader.get_subjects())
            except SchemaRegistryError as exc:  # 401 / 403 until the user and ACL reach it
                assert exc.http_status_code in (401, 403), exc
                return None

        assert "secured-0-value" in wait_until(subjects, "schema-reader's first read", QUICK_S)
        with pytest.raises(SchemaRegistryError) as forbidden:
            reader.register_schema("secured-reader-value", schema)
        assert (forbidden.value.http_status_code, forbidden.value.error_code) == (403, 40301)
        assert "User:schema-reader" in forbidden.value.error_message
    # `odradek schemas` logs in as --command-config's user, over the cluster's CA
    listed = run_odradek("schemas", "list", "--dir", str(secure.dir), "--command-config",
                         str(secure.properties))  # fmt: skip
    assert listed.returncode == 0, listed.stderr
    assert {"secured-0-value", "secured-1-value"} <= set(listed.stdout.split())
