"""`odradek console` in a real browser: Debian's Chromium driven by Playwright.

One three-broker cluster and one console (started as `cluster up` starts it, by
deploy/console/launch.py) for the module, one Chromium page loaded once: every check after the
first load happens without a reload (the page's `performance.timeOrigin` and a marker set at
load stay). Tests that kill a broker start it again before they end. The brokers' cleaners look
for work every 200 ms (Kafka's default is 15 s), so a compacted topic is cleaned while a test
waits. Every wait is a bounded
wait for a condition on the page (Playwright's `wait_for_function`), never a fixed sleep.
"""

from __future__ import annotations

import json
import math
import re
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import pytest

from client import Admin, Consumer, NewTopic, Producer, TopicPartition
from deploy.cluster import LocalCluster, process_state
from deploy.console.launch import start_console
from deploy.console.screenshots import chromium_page
from deploy.console.timeline import EVENTS_FILE
from deploy.zookeeper import ZkProcess
from tests.fixtures.cluster import _make_cluster, _tear_down, run_odradek, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SESSION_TIMEOUT_MS = 20_000  # a paused controller stays the controller this long
WAIT_MS = 40_000  # a killed broker's partitions move after its ZooKeeper session (4 s) expires
MARKER = "odradek-console-test-marker"
CLEANER_BACKOFF_MS = 200
HANGING_AFTER_MS = 4000  # the console's --hanging-after-ms: an open transaction older is listed
T = TypeVar("T")


@pytest.fixture(scope="module")
def cluster(
    zk_server: ZkProcess, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalCluster]:
    where = tmp_path_factory.mktemp("console")
    c = _make_cluster(zk_server, where, 3, session_timeout_ms=SESSION_TIMEOUT_MS,
                      broker_settings={"log_cleaner_backoff_ms": CLEANER_BACKOFF_MS})  # fmt: skip
    try:
        c.up()
        yield c
    finally:
        _tear_down(c)  # `down` stops the console too (by the PID in the state)


@pytest.fixture(scope="module")
def url(cluster: LocalCluster) -> str:
    return start_console(cluster, hanging_after_ms=HANGING_AFTER_MS)


@pytest.fixture(scope="module")
def page(url: str) -> Iterator[Any]:
    with chromium_page() as p:
        p.goto(url)
        p.wait_for_selector("#brokers tbody tr[data-broker]")
        p.evaluate(f"window.__marker = {json.dumps(MARKER)}")
        p.__dict__["time_origin"] = p.evaluate("performance.timeOrigin")
        yield p


def in_thread(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run `fn` on another thread: Playwright's sync API keeps an event loop running on this
    one, and LocalCluster's probes call asyncio.run."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(fn, *args, **kwargs).result()


def not_reloaded(page: Any) -> None:
    assert page.evaluate("window.__marker") == MARKER
    assert page.evaluate("performance.timeOrigin") == page.__dict__["time_origin"]


def tab(page: Any, name: str) -> None:
    """Switch tabs the way a user does: the hash changes, the document stays."""
    page.click(f'nav a[data-tab="{name}"]')
    page.wait_for_selector(f"section#tab-{name}.active")


def wait_js(page: Any, expression: str, arg: Any = None, timeout_ms: int = WAIT_MS) -> Any:
    """Wait (bounded) until `expression` is true on the page; on a timeout, say what the page
    showed (its summary line and stale notice, and the server's snapshot)."""
    from playwright.sync_api import TimeoutError as PageTimeout

    try:
        return page.wait_for_function(expression, arg=arg, timeout=timeout_ms).json_value()
    except PageTimeout:
        shown = page.evaluate("[document.querySelector('#summary').textContent, "
                              "document.querySelector('#stale').textContent]")  # fmt: skip
        snap = page.evaluate("fetch('/api/snapshot').then(r => r.text())")
        raise AssertionError(f"page never showed {expression!r} ({arg!r}); it shows {shown}; "
                             f"snapshot {snap[:3000]}") from None  # fmt: skip


PARTITION_ROW = """([t, p]) => {
  const r = document.querySelector(`#topics tr[data-topic="${t}"][data-partition="${p}"]`);
  return r && {leader: r.querySelector('.leader').textContent,
               isr: r.querySelector('.isr').textContent, hw: r.querySelector('.hw').textContent,
               status: r.querySelector('td.status').textContent};
}"""


def partition_row(page: Any, topic: str, partition: int) -> dict[str, str] | None:
    got: dict[str, str] | None = page.evaluate(PARTITION_ROW, [topic, partition])
    return got


def broker_state_is(page: Any, broker: int, state: str) -> None:
    wait_js(page, """([b, s]) => {
      const c = document.querySelector(`#brokers tr[data-broker="${b}"] td.state`);
      return c && c.textContent === s;
    }""", [broker, state])  # fmt: skip


def describe(cluster: LocalCluster, topic: str) -> list[Any]:
    cluster.state = LocalCluster.open(cluster.dir).state  # the page may have restarted one
    alive = [b for b, s in cluster.broker_states().items() if s == "alive"]
    bootstrap = ",".join(
        f"{cluster.state.host}:{cluster.broker(b).port}"  # type: ignore[union-attr]
        for b in alive
    )
    with Admin(bootstrap, request_timeout_ms=5000) as admin:
        return list(admin.describe_topics([topic])[0].partitions)


def restart(cluster: LocalCluster, broker: int, topic: str) -> None:
    cluster.state = LocalCluster.open(cluster.dir).state
    if cluster.broker_states()[broker] != "alive":
        in_thread(cluster.start, broker)
    wait_until(lambda: all(len(p.isr) == 3 for p in describe(cluster, topic)),
               f"{topic}'s ISR full again", 60)  # fmt: skip


# ----- tests ---------------------------------------------------------------------------------


def test_pages_load_and_show_the_cluster(cluster: LocalCluster, page: Any) -> None:
    with Admin(cluster.bootstrap) as admin:
        admin.create_topics([NewTopic("orders", 3, 3)])
    with Producer(cluster.bootstrap) as producer:
        for i in range(60):
            doc = json.dumps({"order": i, "total": i * 2})
            headers = [("trace", f"trace-{i:04}".encode())]
            if i == 42:
                headers.append(("needle", b"find-me-42"))
            producer.send("orders", doc.encode(), key=f"k{i}".encode(), headers=headers,
                          partition=0 if i < 40 else i % 3)  # fmt: skip
        producer.flush()
    rows = page.locator("#brokers tbody tr[data-broker]")
    assert rows.count() == 3
    wait_js(page, "() => document.querySelectorAll('#brokers td.state-alive').length === 3")
    assert page.locator("#brokers .badge.controller").count() == 1
    endpoints = page.inner_text('#brokers tr[data-broker="1"]')
    assert f":{cluster.broker(1).port}" in endpoints and "kafka://" in endpoints
    # each broker's loop lag between the console's last two readings of its metrics
    lag_shown = r"/^[0-9.]+ \/ [0-9.]+ \/ [0-9.]+$/.test(td.textContent)"
    wait_js(page, "() => [...document.querySelectorAll('#brokers td.loop-lag')]"
                  f".filter((td) => {lag_shown}).length === 3")  # fmt: skip
    tab(page, "topics")
    # the records sent above show up without a reload: HW, log end and size from the brokers
    in_0 = 40 + len([i for i in range(40, 60) if i % 3 == 0])
    wait_js(page, "() => { const r = document.querySelector("
                  "'#topics tr[data-topic=\"orders\"][data-partition=\"0\"]');"
                  f" return r && r.querySelector('.hw').textContent === '{in_0}'"
                  " && /[1-9].* (B|KiB)$/.test(r.querySelectorAll('td')[7].textContent);"
                  " }")  # fmt: skip
    row = page.locator('#topics tr[data-topic="orders"][data-partition="0"]')
    cells = row.locator("td").all_inner_texts()
    assert cells[1] in {"1", "2", "3"} and cells[3].count(",") == 2
    assert cells[4] == "0" and cells[6] == str(in_0) and cells[7].endswith("B")
    assert row.locator("td.status").inner_text() == "ok"
    not_reloaded(page)


def leader_dirty_ratio(cluster: LocalCluster, topic: str, partition: int) -> float | None:
    """The dirty ratio the partition's leader serves on its metrics port (None: none)."""
    leader = next(p.leader for p in describe(cluster, topic) if p.partition == partition)
    port = cluster.broker(leader).metrics_port
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as answer:
        text = answer.read().decode()
    line = f'odradek_log_cleaner_dirty_ratio{{partition="{partition}",topic="{topic}"}} '
    found = re.search("^" + re.escape(line) + "(\\S+)$", text, re.MULTILINE)
    return float(found.group(1)) if found else None


def test_a_compacted_topics_partitions_show_their_dirty_ratio(
    cluster: LocalCluster, page: Any, url: str
) -> None:
    """Each partition's first round of unique keys (several 1 KiB segments) is cleaned in one
    pass once it is older than min.compaction.lag.ms (every record has the same timestamp, so
    no pass starts while the round is being written); a second round as large, as old, makes
    the ratio about one half, below the topic's min.cleanable.dirty.ratio of 0.9, so it stays
    there. The page shows each partition's ratio as its leader's metrics give it, and "—" for
    a topic that is not compacted."""
    lag_ms = 5000  # longer than writing a round takes
    configs = {"cleanup.policy": "compact", "segment.bytes": "1024",
               "min.cleanable.dirty.ratio": "0.9",
               "min.compaction.lag.ms": str(lag_ms)}  # fmt: skip
    with Admin(cluster.bootstrap) as admin:
        admin.create_topics([NewTopic("changelog", 2, 3, configs), NewTopic("plain", 1, 1)])

    written_ms = int(time.time() * 1000)

    def write(round_: int) -> None:
        with Producer(cluster.bootstrap, acks="all") as producer:
            for i in range(40):
                for partition in (0, 1):
                    producer.send("changelog", b"v" * 60, key=b"r%d-k%d" % (round_, i),
                                  partition=partition, timestamp_ms=written_ms)  # fmt: skip
                if i % 4 == 3:
                    producer.flush()  # small batches: several segments per round

    write(1)
    assert time.time() * 1000 < written_ms + lag_ms, "the first round took longer than the lag"

    def cleaned() -> bool:  # once the round is old enough, its dirty ratio is 1 until cleaned
        old = time.time() * 1000 > written_ms + lag_ms + 500
        return old and all(leader_dirty_ratio(cluster, "changelog", p) == 0.0 for p in (0, 1))

    wait_until(cleaned, "the first round cleaned", 30)
    write(2)

    def between() -> list[float | None] | None:  # the leaders' metrics see the second round
        got = [leader_dirty_ratio(cluster, "changelog", p) for p in (0, 1)]
        return got if all(r is not None and 0 < r < 0.9 for r in got) else None

    found = wait_until(between, "the second round dirty on both leaders", 30)
    assert found is not None
    ratios = found

    def shown() -> list[float | None]:
        with urllib.request.urlopen(url + "api/snapshot", timeout=10) as answer:
            snap = json.loads(answer.read())
        [topic] = [t for t in snap["topics"] if t["name"] == "changelog"]
        return [p["dirty_ratio"] for p in topic["partitions"]]

    wait_until(lambda: shown() == ratios, f"the snapshot's dirty ratios {ratios}", 30)
    tab(page, "topics")
    cells = [f"{math.floor(r * 100 + 0.5)}%" for r in ratios if r is not None]
    wait_js(page, """(want) => JSON.stringify(want) === JSON.stringify(
      [0, 1].map(p => { const r = document.querySelector(
        `#topics tr[data-topic="changelog"][data-partition="${p}"] td.dirty`);
        return r && r.textContent; }))""", cells)  # fmt: skip
    heading = page.inner_text('#topics h3[data-topic-name="changelog"]')
    assert "cleanup.policy=compact" in heading
    wait_js(page, """() => { const r = document.querySelector(
      '#topics tr[data-topic="plain"][data-partition="0"] td.dirty');
      return r && r.textContent === '\u2014'; }""")  # fmt: skip
    not_reloaded(page)


def test_browser_finds_a_record_by_header_and_pages(page: Any) -> None:
    tab(page, "messages")
    page.wait_for_selector('#topic option[value="orders"]', state="attached")
    page.select_option("#topic", "orders")
    page.fill("#search", "find-me-42")
    page.click("#go")
    wait_js(page, "() => /1 match/.test(document.querySelector('#browse-status').textContent)")
    record = page.locator("#records tr.record")
    assert record.count() == 1
    assert record.get_attribute("data-offset") is not None
    assert "needle: find-me-42" in record.locator("td.headers").inner_text()
    assert "42" in record.locator("td.value pre").inner_text()
    assert record.locator("td.value .kind").inner_text().lower() == "json"  # pretty-printed
    # paging: partition 0 from offset 5, ten a page, forward then back
    page.fill("#search", "")
    page.fill("#partitions", "0")
    page.select_option("#start-kind", "offset")
    page.fill("#start-value", "5")
    page.fill("#limit", "10")
    page.click("#go")
    offsets = wait_offsets(page, list(range(5, 15)))
    page.click("#next")
    offsets = wait_offsets(page, list(range(15, 25)))
    page.click("#prev")
    offsets = wait_offsets(page, list(range(5, 15)))
    page.click("#prev")
    offsets = wait_offsets(page, list(range(0, 5)))
    assert offsets == [0, 1, 2, 3, 4]
    assert page.is_disabled("#prev")
    # latest: the last page before the high watermark; time: the first record at or after it
    end = int(page.evaluate("() => document.querySelector("
                            "'#topics tr[data-topic=\"orders\"][data-partition=\"0\"] .hw')"
                            ".textContent"))  # fmt: skip
    page.select_option("#start-kind", "latest")
    page.fill("#limit", "3")
    page.click("#go")
    wait_offsets(page, [end - 3, end - 2, end - 1])
    assert page.is_disabled("#next")
    page.select_option("#start-kind", "time")
    page.fill("#start-value", "0")
    page.click("#go")
    wait_offsets(page, [0, 1, 2])
    not_reloaded(page)


def test_schemas_tab_and_a_framed_record_decoded(cluster: LocalCluster, page: Any) -> None:
    """The Schemas tab lists the registry's subjects; one picked shows its versions, schema
    text and level; the browser shows an Avro record framed with the registry's id decoded."""
    import warnings

    from confluent_kafka import Producer as KafkaProducer
    from confluent_kafka.serialization import MessageField, SerializationContext

    with warnings.catch_warnings():  # authlib's own warning (see test_schema_registry.py)
        import authlib.deprecate  # noqa: F401

        warnings.simplefilter("ignore")
        from confluent_kafka.schema_registry import SchemaRegistryClient
        from confluent_kafka.schema_registry.avro import AvroSerializer

    schema = json.dumps({"type": "record", "name": "Invoice", "fields": [
        {"name": "invoice", "type": "string"}, {"name": "cents", "type": "long"}]})  # fmt: skip
    with SchemaRegistryClient({"url": cluster.schema_registry_urls[0]}) as registry:
        serialize = AvroSerializer(registry, schema)
        producer = KafkaProducer({"bootstrap.servers": cluster.kafka_bootstrap})
        ctx = SerializationContext("invoices", MessageField.VALUE)
        producer.produce("invoices", value=serialize({"invoice": "i-77", "cents": 1250}, ctx))
        assert producer.flush(30) == 0
        schema_id = registry.get_latest_version("invoices-value").schema_id
    tab(page, "schemas")
    page.click("#schemas-refresh")
    page.wait_for_selector('#subjects tr[data-subject="invoices-value"]')
    assert page.inner_text('#subjects tr[data-subject="invoices-value"] td.level') == "BACKWARD"
    page.click('#subjects tr[data-subject="invoices-value"] a')
    wait_js(page, "() => document.querySelector('#subject-name').textContent === "
                  "'invoices-value' && /cents/.test(document.querySelector('#schema-text')"
                  ".textContent)")  # fmt: skip
    assert page.inner_text("#subject-level") == "BACKWARD"
    assert page.inner_text("#schema-meta").startswith(f"id {schema_id}, AVRO")
    tab(page, "messages")
    page.wait_for_selector('#topic option[value="invoices"]', state="attached")
    page.select_option("#topic", "invoices")
    page.fill("#search", "")
    page.fill("#partitions", "")
    page.select_option("#start-kind", "earliest")
    page.click("#go")
    wait_js(page, "() => document.querySelectorAll('#records tr.record').length === 1")
    value = page.locator("#records tr.record td.value")
    assert value.locator(".kind").inner_text().lower() == f"avro, schema id {schema_id}"
    assert json.loads(value.locator("pre").inner_text()) == {"invoice": "i-77", "cents": 1250}
    not_reloaded(page)


def wait_offsets(page: Any, expected: list[int]) -> list[int]:
    got: list[int] = wait_js(page, """(want) => {
      const got = Array.from(document.querySelectorAll('#records tr.record'))
        .map(r => Number(r.dataset.offset));
      return JSON.stringify(got) === JSON.stringify(want) && got;
    }""", expected, timeout_ms=20_000)  # fmt: skip
    return got


def test_a_group_shows_its_lag(cluster: LocalCluster, page: Any) -> None:
    with Admin(cluster.bootstrap) as admin:
        admin.create_topics([NewTopic("lagged", 1, 3)])
    with Producer(cluster.bootstrap) as producer:
        for i in range(30):
            producer.send("lagged", f"v{i}".encode())
        producer.flush()
    consumer = Consumer(cluster.bootstrap, group_id="slow-readers", auto_offset_reset="earliest",
                        session_timeout_ms=6000, heartbeat_interval_ms=500)  # fmt: skip
    try:
        consumer.subscribe(["lagged"])
        read = 0
        deadline = time.monotonic() + 30
        while read < 10 and time.monotonic() < deadline:
            read += sum(
                len(r) for r in consumer.poll(timeout_ms=300, max_records=10 - read).values()
            )
        assert read == 10
        consumer.commit({TopicPartition("lagged", 0): 10})
        tab(page, "groups")
        group = '.group[data-group="slow-readers"]'
        # one refresh describes the group, then reads its offsets: it may show the commit with
        # the state from just before it (Rebalancing until the member's first heartbeat or
        # commit of the generation); the next refresh shows Ready (a native group: Stable)
        wait_js(page, f"""() => {{
          const g = document.querySelector('{group}');
          const row = g && g.querySelector('tr[data-topic="lagged"][data-partition="0"]');
          return row && row.querySelector('.lag').textContent === '20'
            && row.querySelector('.committed').textContent === '10'
            && row.querySelector('.end').textContent === '30'
            && g.querySelector('.group-state').textContent === 'Ready';
        }}""")  # fmt: skip
        assert page.inner_text(f"{group} .lag-total") == "20"
        assert "lagged-0" in page.inner_text(f"{group} ul.members")
        # the lag-over-time chart gathers a point a second
        wait_js(page, f"() => Number(document.querySelector('{group} svg.chart')"
                      ".dataset.points || 0) >= 2")  # fmt: skip
    finally:
        consumer.close()
    # a Kafka client's group, on the same coordinator: kafka-python reads 5 and commits
    from kafka import KafkaConsumer

    kafka = KafkaConsumer("lagged", bootstrap_servers=cluster.kafka_bootstrap,
                          group_id="kafka-readers", client_id="kp", auto_offset_reset="earliest",
                          enable_auto_commit=False, max_poll_records=5)  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        # the topic's metadata first: kafka-python assigns from what it has at the join
        while not kafka.partitions_for_topic("lagged") and time.monotonic() < deadline:
            time.sleep(0.1)
        read = 0
        while read < 5 and time.monotonic() < deadline:
            read += sum(len(r) for r in kafka.poll(timeout_ms=300, max_records=5 - read).values())
        assert read == 5
        kafka.commit()
        group = '.group[data-group="kafka-readers"]'
        wait_js(page, f"""() => {{ const g = document.querySelector('{group}');
          return g && g.querySelector('.lag-total').textContent === '25'
            && g.querySelector('.group-state').textContent === 'Stable'; }}""")  # fmt: skip
        assert "kafka group" in page.inner_text(f"{group} .meta")
        assert "kp@" in page.inner_text(f"{group} ul.members")
    finally:
        kafka.close()
    # a KIP-848 consumer group of a native consumer: its type, epochs and member epoch
    kip848 = Consumer(cluster.bootstrap, group_id="new-readers", auto_offset_reset="earliest",
                      group_protocol="consumer", client_id="nr")  # fmt: skip
    try:
        kip848.subscribe(["lagged"])
        read = 0
        deadline = time.monotonic() + 30
        while read < 30 and time.monotonic() < deadline:
            read += sum(len(r) for r in kip848.poll(timeout_ms=300).values())
        assert read == 30
        kip848.commit()
        group = '.group[data-group="new-readers"]'
        # the group epoch is 1, or 2 if the topic's metadata reached the coordinator late
        epoch = wait_js(
            page,
            f"""() => {{ const g = document.querySelector('{group}');
          const e = g && g.querySelector('.group-epoch').textContent;
          return g && g.querySelector('.lag-total').textContent === '0'
            && g.querySelector('.group-type').textContent === 'consumer'
            && g.querySelector('.target-epoch').textContent === e
            && g.querySelector('.member-epoch').textContent === `(epoch ${{e}})` && e; }}""",
        )
        assert int(epoch) >= 1
        assert "lagged-0" in page.inner_text(f"{group} ul.members")
    finally:
        kip848.close()
    not_reloaded(page)


TXN_ROW = """(tid) => {
  const r = document.querySelector(`#txns tr[data-txn="${tid}"]`);
  return r && {state: r.querySelector('.txn-state').textContent,
               age: Number(r.querySelector('.age').dataset.ageMs),
               partitions: r.querySelector('.txn-partitions').textContent};
}"""


def test_an_open_transaction_shows_with_its_partitions_and_growing_age(
    cluster: LocalCluster, page: Any
) -> None:
    """confluent-kafka's transactional producer holds a transaction open over two partitions:
    the Transactions tab lists it with both, its age grows, and past --hanging-after-ms it is
    listed as hanging too; once committed it is gone from both tables."""
    from confluent_kafka import Producer as KafkaProducer

    with Admin(cluster.bootstrap) as admin:
        admin.create_topics([NewTopic("txn-shown", 2, 3)])
    tid = "console-txn"
    producer = KafkaProducer({"bootstrap.servers": cluster.kafka_bootstrap,
                              "transactional.id": tid, "linger.ms": 5})  # fmt: skip
    producer.init_transactions(30)
    producer.begin_transaction()
    for p in (0, 1):
        producer.produce("txn-shown", value=b"v", partition=p)
    assert producer.flush(30) == 0
    tab(page, "transactions")
    first = wait_js(page, f"() => ({TXN_ROW})({json.dumps(tid)})")
    assert first["state"] == "Ongoing"
    assert first["partitions"] == "txn-shown-0, txn-shown-1"
    wait_js(page, f"() => (({TXN_ROW})({json.dumps(tid)}) || {{}}).age > {first['age'] + 1000}")
    wait_js(page, """() => [...document.querySelectorAll('#hanging tr[data-hanging]')]
      .some(r => r.dataset.hanging.startsWith('txn-shown-')
                 && r.textContent.includes('console-txn'))""")  # fmt: skip
    producer.commit_transaction(30)
    wait_js(page, f"""() => !document.querySelector('#txns tr[data-txn="{tid}"]')
      && !document.querySelector('#hanging tr[data-hanging^="txn-shown-"]')""")  # fmt: skip
    not_reloaded(page)


def test_killing_a_broker_from_the_page_moves_leaders(cluster: LocalCluster, page: Any) -> None:
    controller = in_thread(cluster.controller_id)
    parts = describe(cluster, "orders")
    victim = next(p.leader for p in parts if p.leader != controller)
    led = [p.partition for p in parts if p.leader == victim]
    tab(page, "brokers")
    page.click(f'button[data-action="kill"][data-broker="{victim}"]')
    broker_state_is(page, victim, "dead")
    tab(page, "topics")
    for partition in led:
        wait_js(
            page,
            f"""([t, p, v]) => {{ const r = ({PARTITION_ROW})([t, p]);
          return r && r.leader !== String(v) && r.leader !== 'none'
            && !r.isr.split(',').includes(String(v)); }}""",
            ["orders", partition, victim],
        )
    row = partition_row(page, "orders", led[0])
    assert row is not None and "under-replicated" in row["status"]
    assert f"broker {victim} down" in row["status"]  # the cause, explained
    not_reloaded(page)
    tab(page, "brokers")
    page.click(f'button[data-action="start"][data-broker="{victim}"]')
    broker_state_is(page, victim, "alive")
    restart(cluster, victim, "orders")
    tab(page, "topics")
    wait_js(page, """([t, p, v]) => { const r = document.querySelector(
      `#topics tr[data-topic="${t}"][data-partition="${p}"]`);
      return r && r.querySelector('.isr').textContent.split(',').includes(String(v)); }""",
            ["orders", led[0], victim])  # fmt: skip
    not_reloaded(page)


def test_killing_a_broker_through_the_cluster_api_shows(cluster: LocalCluster, page: Any) -> None:
    controller = in_thread(cluster.controller_id)
    parts = describe(cluster, "orders")
    victim = next(p.leader for p in parts if p.leader != controller)
    partition = next(p.partition for p in parts if p.leader == victim)
    tab(page, "topics")
    before = partition_row(page, "orders", partition)
    assert before is not None and before["leader"] == str(victim)
    cluster.kill(victim, reload=True)
    wait_js(page, f"""([t, p, v]) => {{ const r = ({PARTITION_ROW})([t, p]);
      return r && r.leader !== String(v) && !r.isr.split(',').includes(String(v)); }}""",
            ["orders", partition, victim])  # fmt: skip
    not_reloaded(page)
    restart(cluster, victim, "orders")


def test_controls_need_the_console_header(url: str) -> None:
    req = urllib.request.Request(url + "api/brokers/1/kill", method="POST", data=b"")
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(req, timeout=10)
    info.value.close()
    assert info.value.code == 403


def test_page_says_data_is_stale_while_the_controller_is_down(
    cluster: LocalCluster, page: Any
) -> None:
    """Paused from the page (SIGSTOP), the controller keeps its ZooKeeper session for
    SESSION_TIMEOUT_MS, so no other broker takes over meanwhile: the metadata the others serve
    is what it last sent them, and the page says so, with its age."""
    controller = in_thread(cluster.controller_id)
    assert controller is not None
    tab(page, "brokers")
    page.click(f'button[data-action="pause"][data-broker="{controller}"]')
    try:
        broker_state_is(page, controller, "paused")
        text = wait_js(page, """() => { const s = document.querySelector('#stale');
          const m = s && !s.hidden && s.querySelector('[data-stale="metadata"]');
          return m && m.textContent; }""", timeout_ms=SESSION_TIMEOUT_MS // 2)  # fmt: skip
        assert "controller is down" in text and " old" in text
        assert "no controller" in page.inner_text("#summary")
        page.click(f'button[data-action="start"][data-broker="{controller}"]')
        broker_state_is(page, controller, "alive")
    finally:
        restart(cluster, controller, "orders")
    wait_js(page, "() => document.querySelector('#stale').hidden")
    not_reloaded(page)


def test_chaos_timeline_shows_a_faults_run(cluster: LocalCluster, page: Any) -> None:
    done = run_odradek("chaos", "faults", "--dir", str(cluster.dir), "--cycles", "1",
                       "--faults", "term", "--seed", "3")  # fmt: skip
    assert done.returncode == 0, done.stderr
    events = (Path(cluster.dir) / EVENTS_FILE).read_text().splitlines()
    assert [json.loads(e)["event"] for e in events][:2] == ["injected", "healed"]
    tab(page, "chaos")
    wait_js(page, """() => document.querySelector('#chaos li[data-event="injected"]')
      && document.querySelector('#chaos li[data-event="healed"]')""")  # fmt: skip
    assert "term" in page.inner_text('#chaos li[data-event="injected"]')
    not_reloaded(page)


def test_cluster_up_starts_the_console_and_down_stops_it(
    zk_server: ZkProcess, tmp_path: Path
) -> None:
    where = tmp_path / "c"
    up = run_odradek("cluster", "up", "--dir", str(where), "--brokers", "1",
                     "--zookeeper", zk_server.connect + "/console-up-test",
                     "--session-timeout-ms", "4000")  # fmt: skip
    try:
        assert up.returncode == 0, up.stderr
        [line] = [ln for ln in up.stdout.splitlines() if ln.startswith("console=")]
        console = line.removeprefix("console=")
        with urllib.request.urlopen(console, timeout=10) as resp:
            assert b"odradek console" in resp.read()
        state = json.loads((where / "cluster.json").read_text())
        pid = state["console_pid"]
        assert console.endswith(f":{state['console_port']}/") and process_state(pid) == "alive"
    finally:
        down = run_odradek("cluster", "down", "--dir", str(where))
    assert down.returncode == 0, down.stderr
    assert "stopped the console" in down.stderr
    assert process_state(pid) == "dead"
