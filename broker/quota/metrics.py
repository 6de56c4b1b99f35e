"""Client quota metrics under Kafka's names, for broker/metrics.py's scrape.

Kafka keeps, per quota type and (user, client-id) sensor, `kafka.server:type=Produce|Fetch,
user=..,client-id=..` with `byte-rate` and `throttle-time`, and `type=Request` with
`request-time` and `throttle-time`. Prometheus wants counters it can rate(), so each becomes
a counter named after it (`odradek_server_<type>_...`, labels `user` and `client_id`: the
sensor's tags, "" where a level does not apply, as Kafka tags them):

    odradek_server_produce_byte_total                 bytes produced (Kafka: byte-rate)
    odradek_server_fetch_byte_total                   bytes fetched by consumers (byte-rate)
    odradek_server_request_time_seconds_total         handler time on the loop (request-time)
    odradek_server_<type>_throttle_time_seconds_total throttle given (throttle-time)
    odradek_server_<type>_throttles_total             throttles given

Sensors exist only while some quota of the type is set, and at most MAX_SENSORS per type
(broker/quota/manager.py), which bounds the series. `quota_reading` copies them on the
broker's loop; `quota_families` builds the families from the copy off it.
"""

from __future__ import annotations

from prometheus_client.core import CounterMetricFamily

from broker.quota.manager import Quotas

Row = tuple[str, str, float, int, int]  # user, client id, value, throttle ms, throttles
TYPES = ("produce", "fetch", "request")
LABELS = ["user", "client_id"]


def quota_reading(quotas: Quotas) -> dict[str, list[Row]]:
    out: dict[str, list[Row]] = {}
    for name, manager in zip(TYPES, (quotas.produce, quotas.fetch, quotas.request), strict=True):
        out[name] = [
            (user, client, s.value_total, s.throttle_ms_total, s.throttle_count)
            for (user, client), s in manager.sensors.items()
        ]
    return out


def quota_families(reading: dict[str, list[Row]]) -> list[CounterMetricFamily]:
    families: list[CounterMetricFamily] = []
    for name, rows in reading.items():
        kafka = f"kafka.server:type={name.capitalize()},user=..,client-id=.."
        if name == "request":
            value = CounterMetricFamily(
                "odradek_server_request_time_seconds", f"Handler time on the broker's loop "
                f"({kafka} request-time).", labels=LABELS,
            )  # fmt: skip
            scale = 1 / 100  # recorded as % of a thread-second
        else:
            value = CounterMetricFamily(
                f"odradek_server_{name}_byte", f"Bytes counted against {name} quotas "
                f"({kafka} byte-rate).", labels=LABELS,
            )  # fmt: skip
            scale = 1.0
        throttle = CounterMetricFamily(
            f"odradek_server_{name}_throttle_time_seconds", f"Throttle time given ({kafka} "
            "throttle-time).", labels=LABELS,
        )  # fmt: skip
        count = CounterMetricFamily(
            f"odradek_server_{name}_throttles", "Responses throttled.", labels=LABELS
        )
        for user, client, total, throttle_ms, throttles in sorted(rows):
            value.add_metric([user, client], total * scale)
            throttle.add_metric([user, client], throttle_ms / 1000)
            count.add_metric([user, client], throttles)
        families += [value, throttle, count]
    return families
