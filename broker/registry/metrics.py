"""The schema registry's metrics: requests and their latency per endpoint, errors by code,
and the number of schemas and subjects, in the broker's Prometheus registry.

The routes' middleware calls `finished` once per answered request (forwarded ones too: each
broker counts what it answered), with the route's pattern as the endpoint
(`/subjects/{subject}/versions`, so subjects do not make labels; `unmatched` for a path no
route takes), its method, the time from the request's arrival to its answer, and for an
error answer its HTTP status and Confluent's `error_code`. Plain dicts bumped on the loop;
`reading` copies them (and counts the state's schemas and subjects) on the loop at scrape
time, and `families` builds the Prometheus families from that copy off the loop
(broker/metrics_state.py calls both). docs/metrics.md lists the names.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Callable
from dataclasses import dataclass

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)

from coordinator.schema_registry.state import RegistryState

# seconds: a read answered from memory to a write forwarded and waited for
LATENCY_BUCKETS_S: tuple[float, ...] = (
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
)  # fmt: skip
Endpoint = tuple[str, str]  # (method, route pattern)
Stat = tuple[Endpoint, int, float, list[int]]  # count, sum of seconds, bucket counts


@dataclass(slots=True)
class _Stat:
    count: int
    sum_s: float
    buckets: list[int]


class RegistryMetrics:
    def __init__(self, buckets_s: tuple[float, ...] = LATENCY_BUCKETS_S) -> None:
        self.buckets_s = buckets_s
        self.stats: dict[Endpoint, _Stat] = {}
        self.errors: dict[tuple[str, str, int, int], int] = {}  # method, route, status, code

    def finished(
        self, method: str, route: str, seconds: float, status: int, error_code: int | None
    ) -> None:
        stat = self.stats.get((method, route))
        if stat is None:
            stat = self.stats[method, route] = _Stat(0, 0.0, [0] * (len(self.buckets_s) + 1))
        stat.count += 1
        stat.sum_s += seconds
        stat.buckets[bisect.bisect_left(self.buckets_s, seconds)] += 1
        if error_code is not None:
            key = (method, route, status, error_code)
            self.errors[key] = self.errors.get(key, 0) + 1

    def reading(self, state: RegistryState) -> RegistryReading:
        """A copy of the counts and of the state's sizes (on the loop)."""
        stats = [(k, s.count, s.sum_s, list(s.buckets)) for k, s in self.stats.items()]
        return RegistryReading(self.buckets_s, stats, dict(self.errors), len(state.schemas),
                               len(state.subject_names()))  # fmt: skip


@dataclass(frozen=True, slots=True)
class RegistryReading:
    buckets_s: tuple[float, ...]
    stats: list[Stat]
    errors: dict[tuple[str, str, int, int], int]
    schemas: int
    subjects: int


def families(reading: RegistryReading) -> list[Metric]:
    labels = ["method", "endpoint"]
    requests = CounterMetricFamily(
        "odradek_schema_registry_requests", "Schema registry requests answered, per endpoint "
        "(the route's pattern) and method.", labels=labels,
    )  # fmt: skip
    latency = HistogramMetricFamily(
        "odradek_schema_registry_request_duration_seconds", "Time from a schema registry "
        "request's arrival to its answer (a forwarded write: the writer's answer included).",
        labels=labels,
    )  # fmt: skip
    bounds = [*map(str, reading.buckets_s), "+Inf"]
    for (method, route), count, sum_s, buckets in sorted(reading.stats):
        requests.add_metric([method, route], count)
        cumulative = list(itertools.accumulate(buckets))
        latency.add_metric([method, route], list(zip(bounds, cumulative, strict=True)), sum_s)
    errors = CounterMetricFamily(
        "odradek_schema_registry_errors", "Schema registry error answers, by HTTP status and "
        "Confluent's error_code.", labels=[*labels, "status", "error_code"],
    )  # fmt: skip
    for (method, route, status, code), n in sorted(reading.errors.items()):
        errors.add_metric([method, route, str(status), str(code)], n)
    schemas = GaugeMetricFamily("odradek_schema_registry_schemas", "Schema ids this broker's "
                                "registry knows (deleted versions' ids kept).",
                                value=reading.schemas)  # fmt: skip
    subjects = GaugeMetricFamily("odradek_schema_registry_subjects", "Subjects with a live "
                                 "version.", value=reading.subjects)  # fmt: skip
    return [requests, latency, errors, schemas, subjects]


def reader(
    metrics: RegistryMetrics, state: Callable[[], RegistryState]
) -> Callable[[], Callable[[], list[Metric]]]:
    """What BrokerParts.registry holds: read on the loop, returning the families' builder."""

    def read() -> Callable[[], list[Metric]]:
        copy = metrics.reading(state())
        return lambda: families(copy)

    return read
