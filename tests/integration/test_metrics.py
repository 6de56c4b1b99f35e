"""Prometheus metrics scraped over HTTP from real broker processes (broker/metrics.py) and
parsed with prometheus_client's own parser: each metric moves when the cluster does.

The session's shared three-broker cluster (`cluster up` gives each broker a metrics port) for
the tests that only read and write; the tests that kill a broker (slow) share a cluster of the
module's own, `faults3`, and start the broker again before they end.
"""

from __future__ import annotations

import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from typing import TypeVar

import pytest
from prometheus_client.parser import text_string_to_metric_families

from client import Admin, Consumer, NewTopic, Producer, TopicPartition
from deploy.cluster import LocalCluster
from deploy.zookeeper import ZkProcess
from protocol.errors import TopicAlreadyExistsError
from tests.fixtures.cluster import alive_bootstrap, run_odradek, shared_cluster, wait_until

pytestmark = pytest.mark.integration
T = TypeVar("T")
WAIT_S = 40.0


@pytest.fixture(scope="module")
def faults3(
    zk_server: ZkProcess, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalCluster]:
    yield from shared_cluster(zk_server, tmp_path_factory, 3)


Samples = list[tuple[str, dict[str, str], float]]


def scrape(port: int) -> Samples:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as answer:
        assert answer.status == 200
        text = answer.read().decode()
    return [
        (s.name, dict(s.labels), s.value)
        for family in text_string_to_metric_families(text)
        for s in family.samples
    ]


def total(samples: Samples, name: str, **labels: str) -> float:
    return sum(
        v for n, ls, v in samples if n == name and all(ls.get(k) == x for k, x in labels.items())
    )


def metrics_ports(cluster: LocalCluster) -> dict[int, int]:
    assert cluster.state is not None
    ports = {b.id: b.metrics_port for b in cluster.state.brokers}
    assert all(ports.values()), ports
    return ports


def cluster_total(cluster: LocalCluster, name: str, skip: int = -1, **labels: str) -> float:
    return sum(
        total(scrape(port), name, **labels)
        for broker_id, port in metrics_ports(cluster).items()
        if broker_id != skip
    )


def _wait(check: Callable[[], T], what: str) -> T:
    return wait_until(check, what, WAIT_S)


def create_topic(
    cluster: LocalCluster, name: str, partitions: int = 1, rf: int = 3, **configs: str
) -> None:
    with Admin(cluster.bootstrap) as admin:
        admin.create_topics([NewTopic(name, partitions, rf, {k.replace("_", "."): v for k, v in
                                                             configs.items()})])  # fmt: skip
        _wait(lambda: all(p.leader >= 0 for d in admin.describe_topics([name]) for p in
                          d.partitions), f"{name} has leaders")  # fmt: skip


def leader_of(cluster: LocalCluster, topic: str, partition: int = 0) -> tuple[int, list[int]]:
    def described() -> tuple[int, list[int]] | None:
        with Admin(alive_bootstrap(cluster)) as admin:
            (d,) = admin.describe_topics([topic])
        found = [p for p in d.partitions if p.partition == partition and p.leader >= 0]
        return (found[0].leader, list(found[0].isr)) if found else None

    return _wait(described, f"{topic}-{partition} has a leader")


def produce(bootstrap: str, topic: str, count: int, size: int = 100) -> None:
    with Producer(bootstrap, acks=-1) as producer:
        futures = [producer.send(topic, b"v" * size, partition=0) for _ in range(count)]
        producer.flush()
        for f in futures:
            f.result()


def test_produce_moves_bytes_and_records_in_and_out(cluster3: LocalCluster) -> None:
    create_topic(cluster3, "m-traffic")
    name = "odradek_server_brokertopicmetrics_"
    bytes_before = cluster_total(cluster3, name + "bytes_in_total", topic="m-traffic")
    records_before = cluster_total(cluster3, name + "messages_in_total", topic="m-traffic")
    produce(cluster3.bootstrap, "m-traffic", 20, size=100)
    leader, _ = leader_of(cluster3, "m-traffic")
    leader_port = metrics_ports(cluster3)[leader]
    # answers may be up to HttpLimits.cache_s old: wait for the new ones
    _wait(lambda: total(scrape(leader_port), name + "messages_in_total", topic="m-traffic")
          == records_before + 20, "records in")  # fmt: skip
    assert total(scrape(leader_port), name + "bytes_in_total", topic="m-traffic") >= (
        bytes_before + 20 * 100
    )
    # the followers fetched it: replication bytes out on the leader, log size everywhere
    _wait(lambda: total(scrape(leader_port), name + "replication_bytes_out_total",
                        topic="m-traffic") >= 2000, "replication bytes out")  # fmt: skip
    for port in metrics_ports(cluster3).values():
        _wait(lambda p=port: total(scrape(p), "odradek_log_log_size", topic="m-traffic") >= 2000,
              "log size on every replica")  # fmt: skip
        assert total(scrape(port), "odradek_log_log_numlogsegments", topic="m-traffic") == 1
    with Consumer(cluster3.bootstrap) as consumer:
        consumer.assign([TopicPartition("m-traffic", 0)])
        consumer.seek(TopicPartition("m-traffic", 0), 0)
        got = 0
        deadline = time.monotonic() + WAIT_S
        while got < 20 and time.monotonic() < deadline:
            got += sum(len(r) for r in consumer.poll(timeout_ms=500).values())
    assert got == 20
    _wait(lambda: total(scrape(leader_port), name + "messages_out_total", topic="m-traffic")
          >= 20, "records out")  # fmt: skip
    assert total(scrape(leader_port), name + "bytes_out_total", topic="m-traffic") >= 2000


def test_requests_by_api_and_protocol_and_errors_by_code(cluster3: LocalCluster) -> None:
    from kafka import KafkaProducer

    create_topic(cluster3, "m-requests")
    req = "odradek_network_requests_total"
    native_before = cluster_total(cluster3, req, request="Produce", protocol="native")
    kafka_before = cluster_total(cluster3, req, request="Produce", protocol="kafka")
    produce(cluster3.bootstrap, "m-requests", 3)
    p = KafkaProducer(bootstrap_servers=cluster3.kafka_bootstrap, acks="all")
    try:
        p.send("m-requests", b"from kafka-python", partition=0).get(timeout=30)
        conns = "odradek_network_connections"
        _wait(lambda: cluster_total(cluster3, conns, protocol="kafka") >= 1, "a Kafka connection")
    finally:
        p.close()
    _wait(lambda: cluster_total(cluster3, req, request="Produce", protocol="native")
          > native_before, "native produce requests")  # fmt: skip
    _wait(lambda: cluster_total(cluster3, req, request="Produce", protocol="kafka")
          > kafka_before, "kafka produce requests")  # fmt: skip
    assert cluster_total(cluster3, req, request="ApiVersions", protocol="kafka") >= 1
    hist = "odradek_network_request_duration_seconds_count"
    assert cluster_total(cluster3, hist, request="Produce", protocol="native") > native_before
    # the acks=all Produce waited for the followers: Kafka's RemoteTimeMs
    remote = "odradek_network_request_remote_seconds_count"
    assert cluster_total(cluster3, remote, request="Produce", protocol="kafka") >= 1
    # ... for which the followers stepped from one fetch to the next
    assert cluster_total(cluster3, "odradek_replica_fetcher_step_seconds_count") >= 1
    # ... and the leader saw each follower's fetch confirm the append (replication_timeline.py)
    assert cluster_total(cluster3, "odradek_replica_confirm_seconds_count") >= 1
    # an error by code: creating a topic that exists answers TOPIC_ALREADY_EXISTS (36)
    errors = "odradek_network_errors_total"
    code = str(TopicAlreadyExistsError.code)
    before = cluster_total(cluster3, errors, request="CreateTopics", code=code)
    with Admin(cluster3.bootstrap) as admin, pytest.raises(TopicAlreadyExistsError):
        admin.create_topics([NewTopic("m-requests", 1, 3)])
    _wait(
        lambda: (
            cluster_total(
                cluster3, errors, request="CreateTopics", code=code, error="TOPIC_ALREADY_EXISTS"
            )
            == before + 1
        ),
        "the error counted",
    )


@pytest.mark.slow  # kills or pauses brokers
def test_under_replicated_rises_when_a_follower_dies_and_falls_back(
    faults3: LocalCluster,
) -> None:
    create_topic(faults3, "m-urp")
    leader, isr = leader_of(faults3, "m-urp")
    controller = faults3.controller_id()
    follower = next(b for b in isr if b not in (leader, controller))
    ports = metrics_ports(faults3)
    urp = "odradek_server_replicamanager_underreplicatedpartitions"
    expands = "odradek_server_replicamanager_isrexpands_total"
    assert total(scrape(ports[leader]), urp) == 0
    expands_before = total(scrape(ports[leader]), expands)
    faults3.kill(follower)
    try:
        _wait(lambda: total(scrape(ports[leader]), urp) >= 1, "under-replicated on the leader")
        leader_again, _ = leader_of(faults3, "m-urp")
        assert leader_again == leader
    finally:
        faults3.start(follower)
    _wait(lambda: total(scrape(ports[leader]), urp) == 0, "no under-replicated partition")
    assert total(scrape(ports[leader]), expands) > expands_before  # the leader took it back
    assert all(total(scrape(p), urp) == 0 for p in ports.values())


def test_group_lag_grows_once_the_consumer_stops(cluster3: LocalCluster) -> None:
    create_topic(cluster3, "m-lag")
    produce(cluster3.bootstrap, "m-lag", 5)
    consumer = Consumer(
        cluster3.bootstrap, group_id="m-lag-group", enable_auto_commit=False,
        auto_offset_reset="earliest", session_timeout_ms=3000, heartbeat_interval_ms=300,
    )  # fmt: skip
    try:
        consumer.subscribe(["m-lag"])
        got = 0
        deadline = time.monotonic() + WAIT_S
        while got < 5 and time.monotonic() < deadline:
            got += sum(len(r) for r in consumer.poll(timeout_ms=500).values())
        assert got == 5
        consumer.commit()
        labels = {"group": "m-lag-group", "topic": "m-lag", "partition": "0"}
        _wait(lambda: _lag_reported(cluster3, labels) == 0.0, "lag 0 while consuming")
        assert cluster_total(cluster3, "odradek_coordinator_group_members",
                             group="m-lag-group") == 1  # fmt: skip
        assert cluster_total(cluster3, "odradek_coordinator_group_state",
                             group="m-lag-group", state="Stable") == 1  # fmt: skip
    finally:
        consumer.close()
    produce(cluster3.bootstrap, "m-lag", 7)
    _wait(lambda: _lag_reported(cluster3, labels) == 7.0, "lag 7 once stopped")


def _lag_reported(cluster: LocalCluster, labels: dict[str, str]) -> float | None:
    """The group's lag as the coordinator reports it (None while no broker reports it)."""
    found = [
        v
        for port in metrics_ports(cluster).values()
        for n, ls, v in scrape(port)
        if n == "odradek_coordinator_group_lag" and all(ls.get(k) == x for k, x in labels.items())
    ]
    return found[0] if len(found) == 1 else None


@pytest.mark.slow  # kills or pauses brokers
def test_active_controller_count_sums_to_one_and_moves(faults3: LocalCluster) -> None:
    name = "odradek_controller_kafkacontroller_activecontrollercount"
    ports = metrics_ports(faults3)

    def reporting(skip: int = -1) -> list[int]:
        return [b for b, port in ports.items() if b != skip and total(scrape(port), name) == 1]

    first = _wait(lambda: reporting() if len(reporting()) == 1 else None, "one controller")[0]
    epoch = "odradek_controller_kafkacontroller_controllerepoch"
    first_epoch = total(scrape(ports[first]), epoch)
    assert first_epoch >= 1
    faults3.kill(first)
    try:
        second = _wait(
            lambda: reporting(first) if len(reporting(first)) == 1 else None, "a new controller"
        )[0]
        assert second != first
        assert total(scrape(ports[second]), epoch) > first_epoch
        session = "odradek_server_sessionexpirelistener_sessionstate"
        assert total(scrape(ports[second]), session, state="CONNECTED") == 1
    finally:
        faults3.start(first)
    assert sum(total(scrape(p), name) for p in ports.values()) == 1


def test_fsyncs_segments_and_fetch_purgatory(cluster3: LocalCluster) -> None:
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KTP

    # flush.messages=1: every append is fdatasynced; tiny segments roll on every batch
    create_topic(cluster3, "m-fsync", flush_messages="1", segment_bytes="1024")
    leader, _ = leader_of(cluster3, "m-fsync")
    port = metrics_ports(cluster3)[leader]
    flushes = "odradek_log_logflushstats_flushes_total"
    before = total(scrape(port), flushes)
    for _ in range(3):
        produce(cluster3.bootstrap, "m-fsync", 1, size=2000)
    _wait(lambda: total(scrape(port), flushes) >= before + 3, "fsyncs counted")
    assert total(scrape(port), "odradek_log_logflushstats_logflush_seconds_count") >= before + 3
    segments = "odradek_log_log_numlogsegments"
    _wait(lambda: total(scrape(port), segments, topic="m-fsync") >= 3, "segments rolled")
    # a long-polling fetch on an empty partition waits in the fetch purgatory
    create_topic(cluster3, "m-empty")
    leader, _ = leader_of(cluster3, "m-empty")
    port = metrics_ports(cluster3)[leader]
    purgatory = "odradek_server_delayedoperationpurgatory_purgatorysize"
    c = KafkaConsumer(bootstrap_servers=cluster3.kafka_bootstrap, fetch_max_wait_ms=5000,
                      consumer_timeout_ms=20_000)  # fmt: skip
    stop = threading.Event()
    poller = threading.Thread(target=lambda: [c.poll(500) for _ in iter(stop.is_set, True)])
    try:
        c.assign([KTP("m-empty", 0)])
        poller.start()
        _wait(lambda: total(scrape(port), purgatory, operation="Fetch") >= 1, "a parked fetch")
    finally:
        stop.set()
        if poller.is_alive():
            poller.join(30)
        c.close()


def test_event_loop_lag_gc_pauses_and_the_frozen_heap(cluster3: LocalCluster) -> None:
    create_topic(cluster3, "m-loop")
    lag = "odradek_broker_event_loop_lag_seconds"
    ports = metrics_ports(cluster3)
    before = {b: total(scrape(port), lag + "_count") for b, port in ports.items()}
    produce(cluster3.bootstrap, "m-loop", 500, size=1000)
    with Consumer(cluster3.bootstrap, auto_offset_reset="earliest") as consumer:
        consumer.assign([TopicPartition("m-loop", 0)])
        _wait(lambda: sum(len(rs) for rs in consumer.poll(timeout_ms=500).values()) > 0,
              "records read back")  # fmt: skip
    for broker, port in ports.items():  # every broker's loop ticks on, whatever it hosts
        _wait(lambda port=port, broker=broker: total(scrape(port), lag + "_count")
              > before[broker], f"broker {broker}'s loop lag counted")  # fmt: skip
        samples = scrape(port)
        count = total(samples, lag + "_count")
        assert total(samples, lag + "_bucket", le="+Inf") == count
        assert 0 <= total(samples, lag + "_bucket", le="0.0001") <= count
        assert total(samples, lag + "_sum") >= 0
        # start-up and the traffic allocated: the youngest generation was collected
        assert total(samples, "odradek_broker_gc_pause_seconds_count", generation="0") > 0
        assert any(n == "odradek_broker_gc_pause_seconds_count" and ls == {"generation": "2"}
                   for n, ls, _ in samples)  # fmt: skip
        assert total(samples, "odradek_broker_gc_frozen_objects") > 10_000  # start-up's heap


@pytest.mark.slow  # kills or pauses brokers
def test_offline_partitions_on_the_controller(faults3: LocalCluster) -> None:
    create_topic(faults3, "m-offline", partitions=3, rf=1)
    controller = faults3.controller_id()
    leaders = {leader_of(faults3, "m-offline", i)[0] for i in range(3)}
    victim = next(b for b in leaders if b != controller)
    offline = "odradek_controller_kafkacontroller_offlinepartitionscount"
    assert cluster_total(faults3, offline) == 0
    faults3.kill(victim)
    try:
        _wait(lambda: cluster_total(faults3, offline, skip=victim) >= 1, "offline partitions")
        assert controller is not None
        assert total(scrape(metrics_ports(faults3)[controller]), offline) >= 1
    finally:
        faults3.start(victim)
    _wait(lambda: cluster_total(faults3, offline) == 0, "no offline partition")


# ----- abuse of the metrics port ----------------------------------------------------------------


class Abuse:
    """Connections that hold the metrics port: slowloris heads, garbage, huge headers."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.socks: list[socket.socket] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _connect(self) -> socket.socket | None:
        try:
            s = socket.create_connection(("127.0.0.1", self.port), timeout=2)
        except OSError:
            return None
        self.socks.append(s)
        return s

    def _run(self) -> None:
        while not self.stop.is_set():
            for kind in range(60):
                if self.stop.is_set():
                    return
                s = self._connect()
                if s is None:
                    continue
                try:
                    if kind % 3 == 0:
                        s.sendall(b"GET /metrics HTTP/1.1\r\nX-Slow: ")  # and never finishes
                    elif kind % 3 == 1:
                        s.sendall(bytes(range(256)) * 8)
                    else:
                        s.sendall(b"GET /metrics HTTP/1.1\r\nX-Big: " + b"a" * 200_000)
                except OSError:
                    pass
            time.sleep(0.2)
            self._close_some()

    def _close_some(self) -> None:
        old, self.socks = self.socks[:-30], self.socks[-30:]
        for s in old:
            s.close()

    def __enter__(self) -> Abuse:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(10)
        for s in self.socks:
            s.close()


def http(port: int, request: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(request)
        chunks = []
        while chunk := s.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def test_abusive_http_cannot_stop_the_listeners(cluster3: LocalCluster) -> None:
    from kafka import KafkaConsumer, KafkaProducer

    create_topic(cluster3, "m-abuse")
    leader, _ = leader_of(cluster3, "m-abuse")
    port = metrics_ports(cluster3)[leader]
    assert http(port, b"POST /metrics HTTP/1.1\r\n\r\n").startswith(b"HTTP/1.1 405")
    assert http(port, b"GET /other HTTP/1.1\r\n\r\n").startswith(b"HTTP/1.1 404")
    assert http(port, b"\x00\x01garbage\r\n\r\n").startswith(b"HTTP/1.1 400")
    with Abuse(port):
        time.sleep(1.0)  # the slots are taken and the backlog is full
        produce(cluster3.bootstrap, "m-abuse", 10)  # native produce to that leader
        with Consumer(cluster3.bootstrap) as consumer:
            consumer.assign([TopicPartition("m-abuse", 0)])
            consumer.seek(TopicPartition("m-abuse", 0), 0)
            got = 0
            deadline = time.monotonic() + WAIT_S
            while got < 10 and time.monotonic() < deadline:
                got += sum(len(r) for r in consumer.poll(timeout_ms=500).values())
        assert got == 10
        p = KafkaProducer(bootstrap_servers=cluster3.kafka_bootstrap, acks="all")
        try:
            p.send("m-abuse", b"kafka", partition=0).get(timeout=30)
        finally:
            p.close()
        c = KafkaConsumer(bootstrap_servers=cluster3.kafka_bootstrap, consumer_timeout_ms=15000,
                          auto_offset_reset="earliest")  # fmt: skip
        try:
            from kafka import TopicPartition as KTP

            c.assign([KTP("m-abuse", 0)])
            values = [m.value for _, m in zip(range(11), c, strict=False)]
        finally:
            c.close()
        assert len(values) == 11
    # once the abuse stops, scrapes are answered again
    _wait(lambda: _scrapes(port), "a scrape after the abuse")


def _scrapes(port: int) -> bool:
    try:
        return total(scrape(port), "odradek_server_replicamanager_leadercount") >= 1
    except (OSError, urllib.error.URLError):
        return False


def test_cluster_status_shows_the_metrics_ports(cluster3: LocalCluster) -> None:
    out = run_odradek("cluster", "status", "--dir", str(cluster3.dir))
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[3].startswith("schema registry http://"), out.stdout
    header = lines[4].split()
    assert header[:5] == ["ID", "PID", "PORT", "KAFKA", "METRICS"], out.stdout
    shown = {int(f[0]): int(f[4]) for f in (line.split() for line in lines[5:])}
    assert shown == metrics_ports(cluster3)
    for port in shown.values():
        assert total(scrape(port), "odradek_server_sessionexpirelistener_sessionstate",
                     state="CONNECTED") == 1  # fmt: skip
