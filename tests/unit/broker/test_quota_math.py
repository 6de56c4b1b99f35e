"""Client quotas without a broker: KIP-55's resolution order, Kafka's Rate window, the throttle
time formula (QuotaUtils.throttleTime), metric tags, and the entity/ZooKeeper path model."""

from __future__ import annotations

import asyncio
import datetime

import pytest

from broker.quota.manager import ClientQuotaManager, Quotas
from broker.quota.metrics import quota_families, quota_reading
from broker.quota.rate import Avg, Rate, bounded_throttle_ms, throttle_ms
from broker.quota.throttle import ChannelMute, throttle_of, with_throttle
from protocol import quota as q
from protocol.api.produce import ProduceResponse
from protocol.errors import InvalidRequestError
from protocol.quota import DEFAULT, QuotaEntity, resolution_order, resolve

# ----- resolution order ------------------------------------------------------------------------


def test_resolution_order_is_kip55s() -> None:
    paths = [e.config_path for e in resolution_order("alice", "app")]
    assert paths == [
        "/config/users/alice/clients/app",
        "/config/users/alice/clients/<default>",
        "/config/users/alice",
        "/config/users/<default>/clients/app",
        "/config/users/<default>/clients/<default>",
        "/config/users/<default>",
        "/config/clients/app",
        "/config/clients/<default>",
    ]


def test_resolve_takes_the_most_specific_set_entity() -> None:
    everything = {e: float(i) for i, e in enumerate(resolution_order("alice", "app"))}
    remaining = dict(everything)
    for expected in resolution_order("alice", "app"):
        found = resolve(remaining, "alice", "app")
        assert found == (expected, everything[expected])
        del remaining[expected]
    assert resolve(remaining, "alice", "app") is None
    # another user's quota never applies
    assert resolve({QuotaEntity("bob"): 5.0}, "alice", "app") is None


def test_manager_limits_follow_kafka_default_callback() -> None:
    m = ClientQuotaManager(q.PRODUCER_BYTE_RATE)
    m.update(QuotaEntity(None, DEFAULT), 100)
    assert m.quota("alice", "app") == 100 and m.metric_tags("alice", "app") == ("", "app")
    m.update(QuotaEntity(DEFAULT), 200)
    assert m.quota("alice", "app") == 200 and m.metric_tags("alice", "app") == ("alice", "")
    m.update(QuotaEntity("alice", "app"), 300)
    assert m.quota("alice", "app") == 300 and m.metric_tags("alice", "app") == ("alice", "app")
    assert m.quota("alice", "other") == 200  # falls to <default> user
    assert m.quota("bob", "app") == 200
    m.update(QuotaEntity("alice"), 400)
    assert m.quota("alice", "other") == 400
    m.update(QuotaEntity("alice", "app"), None)
    assert m.quota("alice", "app") == 400
    for e in list(m.overrides):
        m.update(e, None)
    assert not m.enabled and m.record("alice", "app", 10**9, 0) == 0


# ----- rate and throttle -----------------------------------------------------------------------


def test_rate_measures_over_at_least_samples_minus_one_windows() -> None:
    rate = Rate(samples=11, window_ms=1000)
    rate.record(1000, now_ms=0)
    # one sample 0 ms old: elapsed counted as 10 full windows
    assert rate.window_size_ms(0) == 10_000
    assert rate.measure(0) == pytest.approx(100.0)
    rate.record(1000, now_ms=10_500)  # 10.5 s: past 10 full windows, no padding
    assert rate.window_size_ms(10_500) == 10_500
    assert rate.measure(10_500) == pytest.approx(2000 * 1000 / 10_500)


def test_rate_forgets_windows_older_than_all_samples() -> None:
    rate = Rate(samples=3, window_ms=1000)
    rate.record(600, 0)
    rate.record(600, 1000)
    rate.record(600, 2000)
    assert rate.measure(2000) == pytest.approx(1800 * 1000 / 2000)
    # at 3 s the sample started at 0 is 3 windows old: purged (reset, now starting at 3 s);
    # the oldest left started at 1 s
    assert rate.measure(3000) == pytest.approx(1200 * 1000 / 2000)
    assert rate.measure(10_000) == 0.0


def test_avg_is_the_mean_of_the_windows_recordings() -> None:
    avg = Avg(samples=3, window_ms=1000)
    assert avg.measure(0) == 0.0  # nothing recorded (Kafka: NaN)
    avg.record(100, 0)
    avg.record(300, 500)
    avg.record(800, 1000)
    assert avg.measure(1000) == pytest.approx(400.0)
    assert avg.measure(3000) == pytest.approx(800.0)  # the window started at 0 is purged
    assert avg.measure(10_000) == 0.0


def test_quota_metrics_carry_kafkas_names_and_window_values() -> None:
    """kafka.server:type=Produce,user=,client-id= byte-rate and throttle-time, as Prometheus'
    JMX exporter names them, beside our counters."""
    quotas = Quotas()
    quotas.configure(QuotaEntity(None, "app"), {q.PRODUCER_BYTE_RATE: 1000.0})
    quotas.produce.record("", "app", 10_000, now_ms=0)
    quotas.produce.throttled("", "app", 4000, now_ms=0)
    quotas.produce.throttled("", "app", 2000, now_ms=0)
    families = {f.name: f for f in quota_families(quota_reading(quotas, now_ms=0))}
    labels = {"user": "", "client_id": "app"}

    def value(name: str) -> float:
        (sample,) = [s for s in families[name].samples if s.labels == labels]
        return sample.value

    assert value("kafka_server_produce_byte_rate") == pytest.approx(1000.0)  # 10 kB / 10 s
    assert value("kafka_server_produce_throttle_time") == pytest.approx(3000.0)  # ms, mean
    assert value("odradek_server_produce_throttle_time_seconds") == pytest.approx(6.0)
    assert value("odradek_server_produce_byte") == pytest.approx(10_000)
    assert {"kafka_server_fetch_byte_rate", "kafka_server_request_request_time",
            "kafka_server_request_throttle_time"} <= set(families)  # fmt: skip


def test_throttle_time_is_kafkas_formula() -> None:
    # O = 200, T = 100 over W = 10 s: X = (200 - 100) / 100 * 10000
    assert throttle_ms(200.0, 100.0, 10_000) == 10_000
    assert throttle_ms(150.0, 100.0, 10_000) == 5_000
    assert throttle_ms(100.25, 100.0, 1000) == 3  # 2.5 rounds up, as Java's Math.round
    assert bounded_throttle_ms(300.0, 100.0, 10_000, 1000) == 1000


def test_manager_throttles_a_producer_over_quota() -> None:
    m = ClientQuotaManager(q.PRODUCER_BYTE_RATE)
    m.update(QuotaEntity(None, "app"), 1000)  # 1000 B/s
    # 10 s of 1000 B/s windows pad the first record: 10_000 B at once is just at quota
    assert m.record("u", "app", 10_000, now_ms=0) == 0
    t = m.record("u", "app", 5_000, now_ms=0)
    # O = 15000 B / 10 s = 1500 B/s; X = 500/1000 * 10000
    assert t == 5_000
    # the bytes throttled reduce as time passes: 15 s later the rate is 15000 B / 15 s
    assert m.record("u", "app", 0, now_ms=15_000) == 0
    other = m.record("u", "other", 10**6, now_ms=0)  # no quota for client "other"
    assert other == 0


def test_request_quota_is_capped_at_one_window() -> None:
    quotas = Quotas()
    quotas.configure(QuotaEntity("alice"), {q.REQUEST_PERCENTAGE: 1.0})
    # 5 s of handler time in one request is 500% of a thread for 10 s: way over 1%
    t = quotas.record_request_time("alice", "c", 5 * 10**9, now_ms=0)
    assert t == 1000
    assert quotas.record_request_time("bob", "c", 5 * 10**9, now_ms=0) == 0


def test_sensors_are_bounded() -> None:
    m = ClientQuotaManager(q.CONSUMER_BYTE_RATE, max_sensors=3)
    m.update(QuotaEntity(None, DEFAULT), 10)
    for i in range(10):
        m.record("u", f"c{i}", 1, 0)
    assert list(m.sensors) == [("", "c7"), ("", "c8"), ("", "c9")]


def test_max_value_in_window() -> None:
    m = ClientQuotaManager(q.CONSUMER_BYTE_RATE)
    assert m.max_value_in_window("u", "c") is None
    m.update(QuotaEntity("u"), 100)
    assert m.max_value_in_window("u", "c") == 1000  # 100 B/s * 10 windows of 1 s


def test_quotas_configure_replaces_an_entitys_keys() -> None:
    quotas = Quotas()
    e = QuotaEntity("alice", "app")
    quotas.configure(e, {q.PRODUCER_BYTE_RATE: 10, q.CONSUMER_BYTE_RATE: 20})
    assert quotas.produce.quota("alice", "app") == 10
    quotas.configure(e, {q.CONSUMER_BYTE_RATE: 30})
    assert quotas.produce.quota("alice", "app") is None
    assert quotas.fetch.quota("alice", "app") == 30
    quotas.replace_all({})
    assert quotas.entities == {} and not quotas.fetch.enabled


# ----- entities, paths, validation ---------------------------------------------------------------


def test_entity_paths_round_trip_and_sanitize() -> None:
    for e in [QuotaEntity("alice"), QuotaEntity(DEFAULT), QuotaEntity(None, "app"),
              QuotaEntity("a b*/c", "x~y"), QuotaEntity(DEFAULT, DEFAULT)]:  # fmt: skip
        assert QuotaEntity.from_entity_path(e.entity_path) == e
    assert QuotaEntity("a b*/c").entity_path == "users/a%20b%2A%2Fc"
    assert QuotaEntity("alice", "app").entity_path == "users/alice/clients/app"
    assert QuotaEntity.from_entity_path("topics/t") is None
    assert QuotaEntity.from_entity_path("users/alice/clients/") is None


def test_wire_entities_and_errors() -> None:
    assert q.entity_from_wire([("user", None), ("client-id", "app")]) == QuotaEntity(DEFAULT, "app")
    bad = [
        [],
        [("user", "a"), ("user", "b")],
        [("user", "")],
        [("ip", "1.2.3.4")],
        [("group", "g")],
    ]
    for parts in bad:
        with pytest.raises(InvalidRequestError):
            q.entity_from_wire(parts)


def test_apply_ops_keeps_other_keys_and_checks_values() -> None:
    current = {"SCRAM-SHA-256": "salt=..,iterations=4096", q.CONSUMER_BYTE_RATE: "5"}
    out = q.apply_ops(current, [(q.PRODUCER_BYTE_RATE, 1024.0), (q.CONSUMER_BYTE_RATE, None),
                                (q.REQUEST_PERCENTAGE, 12.5)])  # fmt: skip
    assert out == {"SCRAM-SHA-256": "salt=..,iterations=4096", q.PRODUCER_BYTE_RATE: "1024",
                   q.REQUEST_PERCENTAGE: "12.5"}  # fmt: skip
    for ops in ([("bogus", 1.0)], [(q.PRODUCER_BYTE_RATE, 1.5)], [(q.CONSUMER_BYTE_RATE, -1.0)],
                [(q.REQUEST_PERCENTAGE, float("nan"))], [(q.CONTROLLER_MUTATION_RATE, 5.0)],
                [("bogus", None)]):  # fmt: skip
        with pytest.raises(InvalidRequestError):
            q.apply_ops(current, ops)
    assert q.quota_values(out) == {q.PRODUCER_BYTE_RATE: 1024.0, q.REQUEST_PERCENTAGE: 12.5}


def test_describe_filter() -> None:
    alice_app, alice, app = (
        QuotaEntity("alice", "app"),
        QuotaEntity("alice"),
        QuotaEntity(None, "app"),
    )
    default_user = QuotaEntity(DEFAULT)
    entities = [alice_app, alice, app, default_user]

    def select(components: list[q.FilterComponent], strict: bool) -> list[QuotaEntity]:
        by_type = q.check_filter(components)
        return [e for e in entities if q.filter_matches(by_type, strict, e)]

    assert select([], False) == entities
    assert select([], True) == []
    user_alice = q.FilterComponent(q.USER, q.MATCH_EXACT, "alice")
    assert select([user_alice], False) == [alice_app, alice]
    assert select([user_alice], True) == [alice]
    assert select([q.FilterComponent(q.USER, q.MATCH_DEFAULT)], True) == [default_user]
    assert select([q.FilterComponent(q.USER, q.MATCH_SPECIFIED)], True) == [alice]
    with pytest.raises(InvalidRequestError):
        q.check_filter([user_alice, user_alice])
    with pytest.raises(InvalidRequestError):
        q.check_filter([q.FilterComponent("ip", 2), user_alice])


# ----- the connection side ---------------------------------------------------------------------


def test_with_throttle_sets_native_and_kio_fields() -> None:
    native = ProduceResponse(topics=[])
    assert throttle_of(with_throttle(native, 250)) == 250
    assert with_throttle(native, 0) is native
    from kio.schema.describe_client_quotas.v1.response import DescribeClientQuotasResponse

    kio = DescribeClientQuotasResponse(throttle_time=datetime.timedelta(0), error_code=0,  # type: ignore[arg-type]
                                       error_message=None, entries=())  # fmt: skip
    raised = with_throttle(kio, 40)
    assert raised.throttle_time == datetime.timedelta(milliseconds=40)
    assert with_throttle(raised, 10) is raised  # never lowered


def test_channel_mute_one_timer_extended_and_cancelled() -> None:
    async def run() -> list[bool]:
        flips: list[bool] = []
        mute = ChannelMute(asyncio.get_running_loop(), lambda: flips.append(mute.muted))
        mute.mute(30)
        mute.mute(5)  # shorter: the longer mute stands
        assert mute.muted
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 5
        while mute.muted and loop.time() < deadline:
            await asyncio.sleep(0.01)
        mute.mute(10_000)
        mute.cancel()
        assert not mute.muted
        return flips

    assert asyncio.run(run()) == [True, False, True]
