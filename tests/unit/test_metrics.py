"""The pure pieces of broker/metrics*.py and coordinator/group/metrics.py, and the metrics HTTP
server's limits against real sockets on 127.0.0.1 (its own thread, no broker)."""

from __future__ import annotations

import asyncio
import socket
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from broker.metrics_counters import FsyncStats, TopicTraffic
from broker.metrics_http import HttpLimits, MetricsHttpServer, route
from broker.metrics_requests import (
    KAFKA_API_NAMES,
    MeteredDoor,
    RequestMetrics,
    error_label,
    response_error_codes,
)
from broker.session import Refusal, Session
from coordinator.group.group import Group, Member, OffsetEntry
from coordinator.group.metrics import group_samples
from coordinator.group.states import State
from protocol.errors import NotLeaderForPartitionError


def samples(registry: CollectorRegistry) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    text = generate_latest(registry).decode()
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for f in text_string_to_metric_families(text)
        for s in f.samples
    }


# ----- routing of HTTP request heads -----------------------------------------------------------


def test_route_serves_get_and_head_of_metrics_only() -> None:
    assert route(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n") == (None, False)
    assert route(b"GET /metrics?x=1 HTTP/1.0\r\n\r\n") == (None, False)
    assert route(b"HEAD /metrics HTTP/1.1\r\n\r\n") == (None, True)
    assert route(b"GET / HTTP/1.1\r\n\r\n")[0].status == 404  # type: ignore[union-attr]
    answer = route(b"POST /metrics HTTP/1.1\r\n\r\n")[0]
    assert answer is not None and answer.status == 405 and answer.allow
    for bad in (b"\x00\xff\r\n\r\n", b"GET /metrics\r\n\r\n", b"GET /metrics HTTP/2\r\n\r\n"):
        assert route(bad)[0].status == 400  # type: ignore[union-attr]


# ----- counters --------------------------------------------------------------------------------


@dataclass
class Read:
    topic: str
    size_bytes: int
    record_count: int


def test_topic_traffic_counts_consumers_and_replicas_apart() -> None:
    t = TopicTraffic()
    t.produced("a", 100, 3)
    t.produced("a", 50, 2)
    t.fetched(-1, [Read("a", 150, 5), Read("b", 0, 0)])
    t.fetched(2, [Read("a", 150, 5)])
    assert (t.bytes_in, t.records_in) == ({"a": 150}, {"a": 5})
    assert (t.bytes_out, t.records_out) == ({"a": 150}, {"a": 5})
    assert t.replication_bytes_out == {"a": 150}
    t.isr_changed(3, 2)
    t.isr_changed(2, 3)
    t.isr_changed(2, 3)
    t.isr_changed(3, 3)
    assert (t.isr_shrinks, t.isr_expands) == (1, 2)


def test_fsync_histogram_is_cumulative() -> None:
    f = FsyncStats((0.001, 0.01))
    for seconds in (0.0005, 0.002, 0.002, 5.0):
        f.record(seconds)
    buckets, total_s, count = f.snapshot()
    assert buckets == [("0.001", 1), ("0.01", 3), ("+Inf", 4)]
    assert count == 4 and total_s == pytest.approx(5.0045)


# ----- requests --------------------------------------------------------------------------------


@dataclass
class Part:
    partition: int
    error_code: int


@dataclass
class Topic:
    name: str
    partitions: list[Part] = field(default_factory=list)


@dataclass
class Response:
    topics: list[Topic]
    error_code: int = 0


def test_response_error_codes_walk_topics_and_partitions() -> None:
    resp = Response([Topic("a", [Part(0, 0), Part(1, 6)]), Topic("b", [Part(0, 3)])])
    assert sorted(response_error_codes(resp)) == [3, 6]
    assert response_error_codes(Response([], error_code=15)) == [15]
    assert response_error_codes(b"not a dataclass") == []


@dataclass(frozen=True)
class Spec:
    name: str


@dataclass(frozen=True)
class Req:
    spec: Spec


SESSION = Session()


class FakeDoor:
    """A door whose route hands back a given handler (or refuses)."""

    name = "native"

    def __init__(self, handler: Any) -> None:
        self.handler = handler

    def route(self, frame: bytes, session: Session) -> tuple[Any, Any]:
        if frame == b"bad":
            raise Refusal("bad frame")
        return Req(Spec("Produce")), self.handler

    def encode(self, request: Any, result: Any) -> list[Any]:
        return [result]

    def failure(self, request: Any, exc: BaseException, peer: str) -> list[Any] | None:
        return None

    def describe(self, request: Any) -> str:
        return "x"


def test_metered_door_counts_requests_latency_errors_and_refusals() -> None:
    metrics = RequestMetrics()
    clock = iter([1.0, 1.25, 2.0, 2.5, 3.0, 3.125])
    door = MeteredDoor(FakeDoor(lambda ctx, req, session: Response([Topic("a", [Part(0, 6)])])),
                       metrics, now=lambda: next(clock))  # fmt: skip
    request, handler = door.route(b"frame", SESSION)
    handler(None, request, SESSION)

    def failing(ctx: Any, req: Any, session: Any) -> None:
        raise NotLeaderForPartitionError("no")

    door.door = FakeDoor(failing)  # type: ignore[assignment]
    request, handler = door.route(b"frame", SESSION)
    with pytest.raises(NotLeaderForPartitionError):
        handler(None, request, SESSION)

    async def later(ctx: Any, req: Any, session: Any) -> Response:
        return Response([])

    door.door = FakeDoor(later)  # type: ignore[assignment]
    request, handler = door.route(b"frame", SESSION)
    assert asyncio.run(handler(None, request, SESSION)) == Response([])
    with pytest.raises(Refusal):
        door.route(b"bad", SESSION)
    registry = CollectorRegistry()
    registry.register(Families(metrics))
    got = samples(registry)
    key = frozenset({("request", "Produce"), ("protocol", "native")})
    assert got[("odradek_network_requests_total", key)] == 3
    assert got[("odradek_network_request_duration_seconds_sum", key)] == 0.25 + 0.5 + 0.125
    code = NotLeaderForPartitionError.code
    err = key | {("error", error_label(code)), ("code", str(code))}
    assert got[("odradek_network_errors_total", err)] == 2  # the raised one, the answered one
    assert got[("odradek_network_refused_requests_total", frozenset({("protocol", "native")}))] == 1


class Families:
    def __init__(self, metrics: RequestMetrics) -> None:
        self.metrics = metrics

    def collect(self) -> Any:
        return iter(self.metrics.families())


def test_kafka_api_names_are_kafkas() -> None:
    assert KAFKA_API_NAMES[0] == "Produce"
    assert KAFKA_API_NAMES[1] == "Fetch"
    assert KAFKA_API_NAMES[18] == "ApiVersions"


# ----- groups ----------------------------------------------------------------------------------


def test_group_samples_lag_is_end_offset_minus_committed() -> None:
    g = Group("g", state=State.READY)  # a group's Ready is Kafka's Stable
    g.members["m"] = Member("m", "c", 3000, 3000, ("t",), None)
    g.offsets[("t", 0)] = OffsetEntry(5, None, 0)
    g.offsets[("t", 1)] = OffsetEntry(9, None, 0)
    g.offsets[("elsewhere", 0)] = OffsetEntry(1, None, 0)
    ends = {("t", 0): 12, ("t", 1): 7}
    (s,) = group_samples([g], lambda t, p: ends.get((t, p)))
    assert (s.group_id, s.state, s.members) == ("g", "Stable", 1)
    assert s.lags == (("t", 0, 7), ("t", 1, 0))  # never below 0; not hosted: no sample


def test_group_counts_by_protocol_and_consumer_state_with_epochs() -> None:
    from broker.metrics_state import _group_families
    from coordinator.group.consumer_group import ConsumerGroup, ConsumerMember
    from coordinator.group.reconcile import Reconciled

    classic = Group("c", state=State.READY)
    kip848 = Group("k")
    kip848.consumer = ConsumerGroup("k", group_epoch=4, target_epoch=4, members={
        "a": ConsumerMember("a", assignment=Reconciled(member_epoch=4)),
        "b": ConsumerMember("b", assignment=Reconciled(member_epoch=3)),
    })  # fmt: skip
    samples = group_samples([classic, kip848], lambda t, p: None)
    assert [(s.group_type, s.group_epoch, s.member_epochs) for s in samples] == [
        ("classic", -1, ()), ("consumer", 4, (3, 4))
    ]  # fmt: skip
    families = {f.name: f for f in _group_families(samples)}
    count = {
        s.labels["protocol"]: s.value for s in families["odradek_coordinator_group_count"].samples
    }
    assert count == {"classic": 1, "consumer": 1}
    states = families["odradek_coordinator_consumer_group_count"].samples
    assert {s.labels["state"]: s.value for s in states} == {
        "empty": 0, "assigning": 0, "reconciling": 1, "stable": 0, "dead": 0
    }  # fmt: skip
    lowest = families["odradek_coordinator_consumer_group_member_epoch_min"].samples
    assert [(s.labels["group"], s.value) for s in lowest] == [("k", 3)]


# ----- the HTTP server's limits ----------------------------------------------------------------


def _get(port: int, request: bytes, timeout_s: float = 5.0) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=timeout_s) as s:
        s.sendall(request)
        out = b""
        while chunk := s.recv(65536):
            out += chunk
    return out


def test_http_server_limits() -> None:
    limits = HttpLimits(max_connections=2, head_max_bytes=1024, read_timeout_s=0.3, cache_s=0)
    server = MetricsHttpServer("127.0.0.1", 0, lambda: b"metric 1\n", limits)
    server.start()
    try:
        answer = _get(server.port, b"GET /metrics HTTP/1.1\r\n\r\n")
        assert answer.startswith(b"HTTP/1.1 200") and answer.endswith(b"metric 1\n")
        assert _get(server.port, b"HEAD /metrics HTTP/1.1\r\n\r\n").endswith(b"\r\n\r\n")
        big = b"GET /metrics HTTP/1.1\r\nX: " + b"a" * 4096 + b"\r\n\r\n"
        assert _get(server.port, big).startswith(b"HTTP/1.1 431")
        # two slowloris connections take both slots: a third waits in the backlog until the
        # read timeout closes them, then is answered
        slow = [socket.create_connection(("127.0.0.1", server.port)) for _ in range(2)]
        for s in slow:
            s.sendall(b"GET /metrics HTTP/1.1\r\n")
        assert _get(server.port, b"GET /metrics HTTP/1.1\r\n\r\n").startswith(b"HTTP/1.1 200")
        for s in slow:
            assert s.recv(100) == b""  # closed without an answer
            s.close()
    finally:
        server.stop()


def test_zookeeper_session_state_follows_the_listener() -> None:
    from broker.context import ControllerEpoch
    from broker.fetch_session import FetchSessionCache
    from broker.histograms import BucketCounts
    from broker.metadata_cache import MetadataCache
    from broker.metrics import BrokerMetrics
    from broker.metrics_state import BrokerParts, state_families

    replicas: Any = type("R", (), {"partitions": {}, "delayed_fetches": 0,
                                   "traffic": TopicTraffic(),
                                   "sessions": FetchSessionCache(),
                                   "fetchers": SimpleNamespace(steps=BucketCounts()),
                                   "timeline": SimpleNamespace(confirm=BucketCounts()),
                                   })()  # fmt: skip
    metrics = BrokerMetrics(BrokerParts(replicas, MetadataCache(), ControllerEpoch()))
    for state in ("CONNECTED", "SUSPENDED", "LOST"):
        metrics.on_zk_state(state)
        shown = {
            s.labels["state"]: s.value
            for f in state_families(metrics.parts)
            for s in f.samples
            if s.name == "odradek_server_sessionexpirelistener_sessionstate"
        }
        assert shown[state] == 1 and sum(shown.values()) == 1


class Later:
    """Shaped like broker/deferred.py's Deferred: listeners called when it completes."""

    def __init__(self) -> None:
        self.listeners: list[Any] = []

    def add_listener(self, listener: Any) -> None:
        self.listeners.append(listener)

    def resolve(self, value: Any) -> None:
        for listener in self.listeners:
            listener(value, None)


def test_a_deferred_answer_is_handed_on_as_it_is_and_counted_when_it_completes() -> None:
    metrics = RequestMetrics()
    later = Later()
    clock = iter([1.0, 1.5, 3.0])  # called, returned its Deferred (local), resolved (remote)
    door = MeteredDoor(FakeDoor(lambda ctx, req, session: later), metrics, now=lambda: next(clock))
    request, handler = door.route(b"frame", SESSION)
    assert (
        handler(None, request, SESSION) is later
    )  # not wrapped: the server answers it synchronously
    assert metrics.stats == {}
    later.resolve(Response([Topic("a", [Part(0, 3)])]))
    key = ("Produce", "native")
    assert metrics.stats[key][:2] == [1, 2.0]
    assert (metrics.local[key][:2], metrics.remote[key][:2]) == ([1, 0.5], [1, 1.5])
    assert metrics.errors == {("Produce", "native", 3): 1}
    families = {f.name: f for f in metrics.families()}
    (remote_sum,) = [s for s in families["odradek_network_request_remote_seconds"].samples
                     if s.name.endswith("_sum")]  # fmt: skip
    assert remote_sum.value == 1.5 and remote_sum.labels == {
        "request": "Produce",
        "protocol": "native",
    }


def test_http_server_stops_while_every_slot_is_held() -> None:
    server = MetricsHttpServer("127.0.0.1", 0, lambda: b"", HttpLimits(max_connections=1))
    server.start()
    held = socket.create_connection(("127.0.0.1", server.port))
    held.sendall(b"GET /metrics HTTP/1.1\r\n")  # the only slot, for read_timeout_s
    try:
        server.stop(timeout_s=30)
        assert server._thread is not None and not server._thread.is_alive()
    finally:
        held.close()


def test_a_refusal_a_handler_raises_is_counted_under_the_error_its_answer_carries() -> None:
    metrics = RequestMetrics()

    async def failed_login(ctx: Any, req: Any, session: Any) -> None:  # a SASL exchange's end
        raise Refusal("bad password", b"answer", logged=True, code=58)

    door = MeteredDoor(FakeDoor(failed_login), metrics, now=lambda: 1.0)
    request, handler = door.route(b"frame", SESSION)
    with pytest.raises(Refusal):
        asyncio.run(handler(None, request, SESSION))
    assert metrics.errors == {("Produce", "native", 58): 1}  # SASL_AUTHENTICATION_FAILED
