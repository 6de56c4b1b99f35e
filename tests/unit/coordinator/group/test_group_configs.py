"""KIP-848 group configs as pure functions: Kafka's GroupConfig checks against the broker's
group.consumer.* bounds, the broker's own settings within them, what DescribeConfigs answers
for a group, and how a change alters a group's override set."""

from __future__ import annotations

import pytest

from broker.config import load_config
from broker.group_configs import altered, entries
from coordinator.group.consumer_group import ConsumerConfig
from coordinator.group.group_configs import (
    HEARTBEAT,
    SESSION,
    SHARE_PREFIX,
    ConsumerBounds,
    GroupConfigs,
    broker_bounds,
    effective,
)
from coordinator.group.share_configs import ShareBounds
from protocol.api.admin import (
    OP_APPEND,
    OP_DELETE,
    OP_SET,
    SOURCE_DEFAULT_CONFIG,
    SOURCE_GROUP_CONFIG,
    SOURCE_STATIC_BROKER_CONFIG,
    TYPE_INT,
    TYPE_STRING,
)
from protocol.errors import InvalidConfigError, InvalidRequestError, UsageError

DEFAULTS = ConsumerConfig(45_000, 5_000)
BOUNDS = ConsumerBounds()  # Kafka's: session 45-60 s, heartbeat 5-15 s


def test_a_groups_overrides_replace_the_brokers_settings() -> None:
    got = effective({SESSION: "50000", HEARTBEAT: "7000"}, DEFAULTS, BOUNDS)
    assert (got.session_timeout_ms, got.heartbeat_interval_ms) == (50_000, 7_000)
    assert effective({}, DEFAULTS, BOUNDS) == DEFAULTS


@pytest.mark.parametrize(
    ("overrides", "why"),
    [
        ({SESSION: "44999"}, "consumer.session.timeout.ms must be greater than or equal to "
                             "group.consumer.min.session.timeout.ms"),
        ({SESSION: "60001"}, "consumer.session.timeout.ms must be less than or equal to "
                             "group.consumer.max.session.timeout.ms"),
        ({HEARTBEAT: "4999"}, "group.consumer.min.heartbeat.interval.ms"),
        ({HEARTBEAT: "15001"}, "group.consumer.max.heartbeat.interval.ms"),
        ({HEARTBEAT: "abc"}, "Invalid value abc for configuration consumer.heartbeat.interval.ms"),
        ({"retention.ms": "1"}, "Unknown group config name: retention.ms"),
        ({"share.partition.max.record.locks": "500"}, "share group config odradek does not "
                                                      "serve yet"),
        ({"share.auto.offset.reset": "newest"}, "String must be one of: latest, earliest"),
        ({"share.delivery.count.limit": "1"}, "share.delivery.count.limit: Value must be at "
                                              "least 2"),
        ({"share.delivery.count.limit": "11"}, "share.delivery.count.limit must be less than or "
                                               "equal to group.share.max.delivery.count.limit"),
        ({"share.record.lock.duration.ms": "x"}, "Not a number of type INT"),
        ({"share.record.lock.duration.ms": "14999"}, "share.record.lock.duration.ms must be "
                                                     "greater than or equal to group.share.min."
                                                     "record.lock.duration.ms"),
        ({"share.record.lock.duration.ms": "60001"}, "group.share.max.record.lock.duration.ms"),
        ({"share.session.timeout.ms": "44999"}, "group.share.min.session.timeout.ms"),
        ({"share.heartbeat.interval.ms": "15001"}, "group.share.max.heartbeat.interval.ms"),
    ],
)  # fmt: skip
def test_kafkas_checks_refuse_with_its_line(overrides: dict[str, str], why: str) -> None:
    with pytest.raises(InvalidConfigError, match=why):
        effective(overrides, DEFAULTS, BOUNDS)


def test_share_configs_are_accepted_beside_the_consumer_ones() -> None:
    overrides = {
        "share.auto.offset.reset": "earliest",
        "share.record.lock.duration.ms": "20000",
        "share.session.timeout.ms": "50000",
        "share.heartbeat.interval.ms": "6000",
        "share.delivery.count.limit": "3",
        "share.isolation.level": "read_committed",
    }
    assert effective(overrides, DEFAULTS, BOUNDS) == DEFAULTS  # the consumer ones unchanged


def test_the_session_must_be_longer_than_the_heartbeat() -> None:
    wide = ConsumerBounds(1000, 60_000, 1000, 60_000)
    with pytest.raises(InvalidConfigError, match=r"must be greater than consumer\.heartbeat"):
        effective({SESSION: "10000", HEARTBEAT: "10000"}, DEFAULTS, wide)


def test_a_group_keeps_the_brokers_settings_where_its_own_are_out_of_bounds() -> None:
    configs = GroupConfigs(DEFAULTS, BOUNDS)
    configs.apply("g", {HEARTBEAT: "6000"})
    assert configs.consumer_config("g").heartbeat_interval_ms == 6000
    assert configs.consumer_config("other") == DEFAULTS
    configs.replace_all({"g": {HEARTBEAT: "1"}})  # bounds narrowed since it was set
    assert configs.consumer_config("g") == DEFAULTS
    configs.apply("g", {})
    assert configs.overrides("g") == {}


def test_the_brokers_settings_must_be_within_its_bounds() -> None:
    base = {"broker_id": 1, "log_dir": "/x"}
    with pytest.raises(UsageError, match="group_consumer_session_timeout_ms 6000 must be within"):
        load_config(None, **base, group_consumer_session_timeout_ms=6000)
    config = load_config(None, **base, group_consumer_session_timeout_ms=6000,
                         group_consumer_min_session_timeout_ms=6000)  # fmt: skip
    assert config.group_consumer_session_timeout_ms == 6000
    with pytest.raises(UsageError, match="heartbeat_interval_ms must be below"):
        broker_bounds({"group_consumer_session_timeout_ms": 5000,
                       "group_consumer_heartbeat_interval_ms": 5000,
                       "group_consumer_min_session_timeout_ms": 1000,
                       "group_consumer_max_session_timeout_ms": 9000,
                       "group_consumer_min_heartbeat_interval_ms": 1000,
                       "group_consumer_max_heartbeat_interval_ms": 9000})  # fmt: skip


def test_a_group_is_described_as_kafka_describes_it() -> None:
    config = load_config(None, broker_id=1, log_dir="/x", group_consumer_heartbeat_interval_ms=6000)
    beat, session = entries(config, {SESSION: "50000"}, synonyms=True)[:2]
    assert (session.name, session.value, session.source) == (SESSION, "50000", SOURCE_GROUP_CONFIG)
    assert [(s.name, s.value, s.source) for s in session.synonyms] == [
        (SESSION, "50000", SOURCE_GROUP_CONFIG),
        ("group.consumer.session.timeout.ms", "45000", SOURCE_DEFAULT_CONFIG),
    ]
    assert (beat.value, beat.source, beat.is_default) == ("6000", SOURCE_STATIC_BROKER_CONFIG, True)
    assert [s.source for s in beat.synonyms] == [SOURCE_STATIC_BROKER_CONFIG, SOURCE_DEFAULT_CONFIG]
    assert all(e.config_type == TYPE_INT and not e.read_only and e.documentation
               for e in (session, beat))  # fmt: skip
    assert entries(config, {}, synonyms=False)[0].synonyms == []


def test_a_groups_share_configs_are_described_with_their_defaults() -> None:
    config = load_config(None, broker_id=1, log_dir="/x", group_share_delivery_count_limit=3)
    got = {e.name: e for e in entries(config, {"share.auto.offset.reset": "earliest"}, True)}
    share = {n: (e.value, e.source, e.config_type) for n, e in got.items()
             if n.startswith(SHARE_PREFIX)}  # fmt: skip
    assert share == {
        "share.auto.offset.reset": ("earliest", SOURCE_GROUP_CONFIG, TYPE_STRING),
        "share.delivery.count.limit": ("3", SOURCE_STATIC_BROKER_CONFIG, TYPE_INT),
        "share.heartbeat.interval.ms": ("5000", SOURCE_DEFAULT_CONFIG, TYPE_INT),
        "share.isolation.level": ("read_uncommitted", SOURCE_DEFAULT_CONFIG, TYPE_STRING),
        "share.record.lock.duration.ms": ("30000", SOURCE_DEFAULT_CONFIG, TYPE_INT),
        "share.session.timeout.ms": ("45000", SOURCE_DEFAULT_CONFIG, TYPE_INT),
    }
    assert [(s.name, s.value) for s in got["share.delivery.count.limit"].synonyms] == [
        ("group.share.delivery.count.limit", "3"),
        ("group.share.delivery.count.limit", "5"),
    ]
    assert [(s.name, s.value, s.source) for s in got["share.auto.offset.reset"].synonyms] == [
        ("share.auto.offset.reset", "earliest", SOURCE_GROUP_CONFIG),
        ("share.auto.offset.reset", "latest", SOURCE_DEFAULT_CONFIG)]  # fmt: skip


def test_a_share_groups_members_get_its_session_and_heartbeat() -> None:
    configs = GroupConfigs(DEFAULTS, BOUNDS)
    configs.apply("s", {"share.session.timeout.ms": "50000", "share.heartbeat.interval.ms": "6000",
                        "share.delivery.count.limit": "99"})  # fmt: skip
    got = configs.share_config("s")
    assert (got.session_timeout_ms, got.heartbeat_interval_ms) == (50_000, 6_000)
    assert got.delivery_count_limit == 5, "out of bounds: the broker's stands"
    assert configs.share_config("other") == configs.share
    wide = GroupConfigs(DEFAULTS, BOUNDS, share_bounds=ShareBounds(1000, 60_000, 1000, 60_000))
    same = {"share.session.timeout.ms": "10000", "share.heartbeat.interval.ms": "10000"}
    with pytest.raises(InvalidConfigError, match=r"share\.session\.timeout\.ms must be greater"):
        wide.check(same)


def test_the_brokers_share_settings_must_be_within_their_bounds() -> None:
    base = {"broker_id": 1, "log_dir": "/x"}
    with pytest.raises(
        UsageError,
        match="group_share_record_lock_duration_ms 8000 must be within "
        "group_share_min_record_lock_duration_ms 15000",
    ):
        load_config(None, **base, group_share_record_lock_duration_ms=8000)
    config = load_config(None, **base, group_share_record_lock_duration_ms=8000,
                         group_share_min_record_lock_duration_ms=1000)  # fmt: skip
    assert config.group_share_record_lock_duration_ms == 8000
    with pytest.raises(UsageError, match="group_share_heartbeat_interval_ms must be below"):
        load_config(
            None,
            **base,
            group_share_heartbeat_interval_ms=5000,
            group_share_session_timeout_ms=5000,
            group_share_min_session_timeout_ms=1000,
        )


def test_a_change_alters_the_override_set() -> None:
    current = {SESSION: "50000"}
    assert altered(current, [(HEARTBEAT, "6000", OP_SET)], True) == {
        SESSION: "50000", HEARTBEAT: "6000"}  # fmt: skip
    assert altered(current, [(SESSION, None, OP_DELETE)], True) == {}
    assert altered(current, [(HEARTBEAT, "6000", OP_SET)], False) == {HEARTBEAT: "6000"}
    with pytest.raises(InvalidConfigError, match="not a list"):
        altered(current, [(SESSION, "1", OP_APPEND)], True)
    with pytest.raises(InvalidRequestError, match="duplicate"):
        altered(current, [(SESSION, "1", OP_SET), (SESSION, "2", OP_SET)], True)
