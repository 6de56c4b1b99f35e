"""A broker's per-request metrics: one job, counting every request a door answers, with its
latency and its error codes, per API and protocol (native or Kafka).

`MeteredDoor` wraps a listener's door (broker/doors.py) so the server itself is unchanged: its
`route` hands the server a handler wrapped to time the call and look at the answer (a coroutine
is wrapped in one of its own; a Deferred is returned as it is, with a listener added). The
latency is the handler's (from the decoded request to its answer, long-poll waits included;
not the socket write). Errors: the code of an exception a handler raised (UNKNOWN_SERVER_ERROR
for a bug), else every non-zero `error_code` in the response (its topics and partitions too, as
Kafka's errorCounts, walked by `response_error_codes`); frames refused before any handler
(undecodable, unknown API) are counted apart. `RequestMetrics` keeps one counter and one
histogram update per request in plain dicts (no lock; the scrape reads them on the loop, with
`snapshot`), and `request_families` turns a snapshot into Prometheus families off the loop.
broker/metrics.py puts them in the broker's registry.

A handler that answers with a Deferred (a delayed operation: an acks=all Produce waiting for
the followers, a long-polling Fetch) is also split as Kafka's RequestMetrics split it: local
time until the handler returned (the append, the read), remote time in the purgatory until the
Deferred resolved (the followers' fetches that move the high watermark). A handler answering at
once has all of it local; a coroutine's time is only counted whole.
"""

from __future__ import annotations

import asyncio
import bisect
import dataclasses
import itertools
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any

from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric

from broker.doors import Door
from broker.session import Refusal, Session
from protocol.errors import OdradekError, UnknownServerError, for_code
from protocol.kafka import versions as kafka_versions

# seconds: from a sub-millisecond produce to a long-polling fetch's max wait
LATENCY_BUCKETS_S: tuple[float, ...] = (
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
)  # fmt: skip
WALK_MAX_NODES = 10_000  # the response walk for error codes stops there (a bound, not a limit met)

KAFKA_API_NAMES: dict[int, str] = {
    getattr(kafka_versions, name): "".join(w.capitalize() for w in name.split("_"))
    for name in dir(kafka_versions)
    if name.isupper() and isinstance(getattr(kafka_versions, name), int)
}


def error_label(code: int) -> str:
    return for_code(code).name if code in _KNOWN_CODES else f"CODE_{code}"


_KNOWN_CODES = {code for code in range(-1, 200) if for_code(code).code == code}


class RequestMetrics:
    """Request counts, latencies and errors by API and protocol: plain ints and lists bumped on
    the broker's loop (no lock, no Prometheus object: ~1 us a request), turned into families
    at scrape time on the same loop (`families`)."""

    def __init__(self, buckets_s: tuple[float, ...] = LATENCY_BUCKETS_S) -> None:
        self.buckets_s = buckets_s
        self.stats: dict[tuple[str, str], list[Any]] = {}  # [count, sum_s, bucket counts]
        self.local: dict[tuple[str, str], list[Any]] = {}  # the same, of the local time
        self.remote: dict[tuple[str, str], list[Any]] = {}  # ... of the purgatory's
        self.errors: dict[tuple[str, str, int], int] = {}
        self.refused: dict[str, int] = {}

    def finished(
        self, request: str, protocol: str, seconds: float, codes: Iterable[int],
        remote_s: float | None = None,
    ) -> None:  # fmt: skip
        """`remote_s`: of `seconds`, the time in a purgatory (None: not known, a coroutine's)."""
        key = (request, protocol)
        self._observe(self.stats, key, seconds)
        if remote_s is not None:
            self._observe(self.local, key, seconds - remote_s)
            self._observe(self.remote, key, remote_s)
        for code in codes:
            error = (request, protocol, code)
            self.errors[error] = self.errors.get(error, 0) + 1

    def _observe(self, stats: dict[tuple[str, str], list[Any]], key: tuple[str, str],
                 seconds: float) -> None:  # fmt: skip
        stat = stats.get(key)
        if stat is None:
            stat = stats[key] = [0, 0.0, [0] * (len(self.buckets_s) + 1)]
        stat[0] += 1
        stat[1] += seconds
        stat[2][bisect.bisect_left(self.buckets_s, seconds)] += 1

    def refuse(self, protocol: str) -> None:
        self.refused[protocol] = self.refused.get(protocol, 0) + 1

    def snapshot(self) -> RequestsReading:
        """A copy of the counts (on the loop), for `request_families` (off it)."""

        def copy(stats: dict[tuple[str, str], list[Any]]) -> list[Stat]:
            return [(k, count, sum_s, list(b)) for k, (count, sum_s, b) in stats.items()]

        return RequestsReading(self.buckets_s, copy(self.stats), dict(self.errors),
                               dict(self.refused), copy(self.local), copy(self.remote))  # fmt: skip

    def families(self) -> list[Metric]:
        return request_families(self.snapshot())


Stat = tuple[tuple[str, str], int, float, list[int]]  # (request, protocol), count, sum, buckets


@dataclass(frozen=True, slots=True)
class RequestsReading:
    buckets_s: tuple[float, ...]
    stats: list[Stat]
    errors: dict[tuple[str, str, int], int]
    refused: dict[str, int]
    local: list[Stat] = dataclasses.field(default_factory=list)
    remote: list[Stat] = dataclasses.field(default_factory=list)


def request_families(reading: RequestsReading) -> list[Metric]:
    labels = ["request", "protocol"]
    requests = CounterMetricFamily(
        "odradek_network_requests", "Requests answered (Kafka: kafka.network:"
        "type=RequestMetrics,name=RequestsPerSec).", labels=labels,
    )  # fmt: skip
    for (request, protocol), count, _, _ in sorted(reading.stats):
        requests.add_metric([request, protocol], count)
    latency = _histogram(
        reading, reading.stats, "odradek_network_request_duration_seconds",
        "Time from a decoded request to its answer (Kafka: RequestMetrics TotalTimeMs).",
    )  # fmt: skip
    local = _histogram(
        reading, reading.local, "odradek_network_request_local_seconds",
        "Of a request answered at once or from a purgatory, the time until its handler "
        "returned (Kafka: RequestMetrics LocalTimeMs).",
    )  # fmt: skip
    remote = _histogram(
        reading, reading.remote, "odradek_network_request_remote_seconds",
        "Of a request answered from a purgatory (acks=all Produce, long-polling Fetch), the "
        "time it waited there (Kafka: RequestMetrics RemoteTimeMs).",
    )  # fmt: skip
    errors = CounterMetricFamily(
        "odradek_network_errors", "Error codes answered, by code (Kafka: RequestMetrics "
        "ErrorsPerSec).", labels=[*labels, "error", "code"],
    )  # fmt: skip
    for (request, protocol, code), n in sorted(reading.errors.items()):
        errors.add_metric([request, protocol, error_label(code), str(code)], n)
    refused = CounterMetricFamily(
        "odradek_network_refused_requests", "Frames refused before any handler: "
        "undecodable, unknown API or version (Kafka closes the connection too).",
        labels=["protocol"],
    )  # fmt: skip
    for protocol, n in sorted(reading.refused.items()):
        refused.add_metric([protocol], n)
    return [requests, latency, local, remote, errors, refused]


def _histogram(
    reading: RequestsReading, stats: list[Stat], name: str, documentation: str
) -> HistogramMetricFamily:
    family = HistogramMetricFamily(name, documentation, labels=["request", "protocol"])
    bounds = [*map(str, reading.buckets_s), "+Inf"]
    for (request, protocol), _, sum_s, counts in sorted(stats):
        cumulative = list(itertools.accumulate(counts))
        family.add_metric([request, protocol], list(zip(bounds, cumulative, strict=True)), sum_s)
    return family


def response_error_codes(obj: Any) -> list[int]:
    """Every non-zero `error_code` in a response (dataclasses, and lists or tuples of them),
    walked to at most WALK_MAX_NODES objects."""
    out: list[int] = []
    todo = [obj]
    seen = 0
    while todo and seen < WALK_MAX_NODES:
        node = todo.pop()
        seen += 1
        has_code, containers = _plan(type(node))
        if has_code:
            value = node.error_code
            code = value if type(value) is int else int(getattr(value, "value", value or 0))
            if code:
                out.append(code)
        for name in containers:
            items = getattr(node, name)
            if items and type(items) in (list, tuple) and _plan(type(items[0])) != _NOTHING:
                todo.extend(items)
    return out


_NOTHING: tuple[bool, tuple[str, ...]] = (False, ())
_PLANS: dict[type, tuple[bool, tuple[str, ...]]] = {}


def _plan(cls: type) -> tuple[bool, tuple[str, ...]]:
    """(has an error_code field, the fields that may hold lists of messages) of a class."""
    plan = _PLANS.get(cls)
    if plan is None:
        plan = _NOTHING
        if dataclasses.is_dataclass(cls):
            fields = dataclasses.fields(cls)
            containers = tuple(
                f.name for f in fields if "[" in str(f.type) and "dict" not in str(f.type)
            )
            plan = (any(f.name == "error_code" for f in fields), containers)
        _PLANS[cls] = plan
    return plan


class MeteredDoor:
    """A door (broker/doors.py) whose handlers are timed and whose answers are counted."""

    def __init__(
        self, door: Door, metrics: RequestMetrics, now: Callable[[], float] = time.perf_counter
    ) -> None:
        self.door = door
        self.name = door.name
        self.metrics = metrics
        self._now = now

    def route(self, frame: bytes, session: Session) -> tuple[Any, Any]:
        try:
            request, handler = self.door.route(frame, session)
        except Refusal:
            self.metrics.refuse(self.name)
            raise
        return request, self._timed(self.api_name(request), handler)

    def admit(self, session: Session, request: Any) -> None:
        self.door.admit(session, request)

    def api_name(self, request: Any) -> str:
        if self.name == "kafka":
            key = request.header.api_key
            return KAFKA_API_NAMES.get(key, f"api{key}")
        return str(request.spec.name)

    def _timed(
        self, api: str, handler: Callable[[Any, Any, Session], Any]
    ) -> Callable[[Any, Any, Session], Any]:
        now, finished, protocol = self._now, self.metrics.finished, self.name

        def run(ctx: Any, request: Any, session: Session) -> Any:
            start = now()
            try:
                result = handler(ctx, request, session)
            except BaseException as exc:
                finished(api, protocol, now() - start, (_exception_code(exc),))
                raise
            kind = type(result)
            if hasattr(kind, "add_listener"):  # a Deferred (broker/deferred.py): stays one
                returned = now()

                def done(value: Any, exc: BaseException | None) -> None:
                    end = now()
                    codes = _result_codes(value) if exc is None else (_exception_code(exc),)
                    finished(api, protocol, end - start, codes, end - returned)

                result.add_listener(done)
                return result
            if hasattr(kind, "__await__"):
                return self._awaited(result, api, start)
            finished(api, protocol, now() - start, _result_codes(result), 0.0)
            return result

        return run

    async def _awaited(self, result: Awaitable[Any], api: str, start: float) -> Any:
        try:
            answer = await result
        except asyncio.CancelledError:
            raise  # the connection closed: nothing was answered
        except BaseException as exc:
            self.metrics.finished(api, self.name, self._now() - start, (_exception_code(exc),))
            raise
        self.metrics.finished(api, self.name, self._now() - start, _result_codes(answer))
        return answer

    def encode(self, request: Any, result: Any) -> Any:
        return self.door.encode(request, result)

    def failure(self, request: Any, exc: BaseException, peer: str) -> Any:
        return self.door.failure(request, exc, peer)

    def describe(self, request: Any) -> str:
        return self.door.describe(request)


def _exception_code(exc: BaseException) -> int:
    if isinstance(exc, OdradekError):
        return exc.code
    if isinstance(exc, Refusal) and exc.code is not None:  # a failed SASL exchange's answer
        return exc.code
    return UnknownServerError.code


def _result_codes(result: Any) -> list[int]:
    if result is None or type(result) is list:  # acks=0, or Kafka fetch chunks (no codes)
        return []
    return response_error_codes(result)
