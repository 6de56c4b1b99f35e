"""Client quota metrics under Kafka's names, for broker/metrics.py's scrape.

Kafka keeps, per quota type and (user, client-id) sensor, `kafka.server:type=Produce|Fetch,
user=..,client-id=..` with `byte-rate` and `throttle-time`, and `type=Request` with
`request-time` and `throttle-time`. They are here under the names Prometheus' JMX exporter
gives those beans (lowercased), as gauges with the sensor's tags as labels `user` and
`client_id` ("" where a level does not apply, as Kafka tags them), so a Kafka dashboard's
queries find them:

    kafka_server_produce_byte_rate       bytes/s produced, over the quota window (byte-rate)
    kafka_server_fetch_byte_rate         bytes/s fetched by consumers (byte-rate)
    kafka_server_request_request_time    % of a thread the handlers took (request-time)
    kafka_server_<type>_throttle_time    mean throttle given over the window, ms (throttle-time)

Prometheus also wants counters it can rate(), so each has one under our prefix:

    odradek_server_produce_byte_total                 bytes produced
    odradek_server_fetch_byte_total                   bytes fetched by consumers
    odradek_server_request_time_seconds_total         handler time on the loop
    odradek_server_<type>_throttle_time_seconds_total throttle given
    odradek_server_<type>_throttles_total             throttles given

Sensors exist only while some quota of the type is set, and at most MAX_SENSORS per type
(broker/quota/manager.py), which bounds the series. `quota_reading` copies them on the
broker's loop (the windows measured at `now_ms`); `quota_families` builds the families from
the copy off it.
"""

from __future__ import annotations

from typing import NamedTuple

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from broker.quota.manager import Quotas

TYPES = ("produce", "fetch", "request")
LABELS = ["user", "client_id"]


class Row(NamedTuple):
    user: str
    client_id: str
    total: float  # everything recorded: bytes, or request %
    throttle_ms: int  # throttle given, in all
    throttles: int
    rate: float  # the quota window's rate now (byte-rate, request-time)
    throttle_avg_ms: float  # the quota window's mean throttle (throttle-time)


def quota_reading(quotas: Quotas, now_ms: int) -> dict[str, list[Row]]:
    out: dict[str, list[Row]] = {}
    for name, manager in zip(TYPES, (quotas.produce, quotas.fetch, quotas.request), strict=True):
        rows = []
        for (user, client), s in manager.sensors.items():
            rate, throttle = s.rate.measure(now_ms), s.throttle_time.measure(now_ms)
            rows.append(Row(user, client, s.value_total, s.throttle_ms_total, s.throttle_count,
                            rate, throttle))  # fmt: skip
        out[name] = rows
    return out


def quota_families(reading: dict[str, list[Row]]) -> list[CounterMetricFamily | GaugeMetricFamily]:
    families: list[CounterMetricFamily | GaugeMetricFamily] = []
    for name, rows in reading.items():
        kafka = f"kafka.server:type={name.capitalize()},user=..,client-id=.."
        if name == "request":
            value = CounterMetricFamily(
                "odradek_server_request_time_seconds", f"Handler time on the broker's loop "
                f"({kafka} request-time).", labels=LABELS,
            )  # fmt: skip
            scale = 1 / 100  # recorded as % of a thread-second
            rate = GaugeMetricFamily(
                "kafka_server_request_request_time", f"{kafka} request-time: % of a thread "
                "the requests took, over the quota window.", labels=LABELS,
            )  # fmt: skip
        else:
            value = CounterMetricFamily(
                f"odradek_server_{name}_byte", f"Bytes counted against {name} quotas "
                f"({kafka} byte-rate).", labels=LABELS,
            )  # fmt: skip
            scale = 1.0
            rate = GaugeMetricFamily(
                f"kafka_server_{name}_byte_rate", f"{kafka} byte-rate: bytes/s over the "
                "quota window.", labels=LABELS,
            )  # fmt: skip
        throttle = CounterMetricFamily(
            f"odradek_server_{name}_throttle_time_seconds", f"Throttle time given ({kafka} "
            "throttle-time).", labels=LABELS,
        )  # fmt: skip
        count = CounterMetricFamily(
            f"odradek_server_{name}_throttles", "Responses throttled.", labels=LABELS
        )
        average = GaugeMetricFamily(
            f"kafka_server_{name}_throttle_time", f"{kafka} throttle-time: the mean throttle "
            "given over the quota window, ms.", labels=LABELS,
        )  # fmt: skip
        for row in sorted(rows):
            tags = [row.user, row.client_id]
            value.add_metric(tags, row.total * scale)
            throttle.add_metric(tags, row.throttle_ms / 1000)
            count.add_metric(tags, row.throttles)
            rate.add_metric(tags, row.rate)
            average.add_metric(tags, row.throttle_avg_ms)
        families += [value, throttle, count, rate, average]
    return families
