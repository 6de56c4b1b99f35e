"""The topic-config registry (protocol/topic_config.py) and LogConfig reading it."""

from __future__ import annotations

import re

import pytest

from broker.log.config import LONG_MAX, LogConfig
from protocol.api.admin import (
    TYPE_BOOLEAN,
    TYPE_DOUBLE,
    TYPE_INT,
    TYPE_LIST,
    TYPE_LONG,
    TYPE_STRING,
)
from protocol.errors import InvalidConfigError
from protocol.topic_config import (
    LIST_CONFIGS,
    READERS,
    REFUSED,
    TOPIC_CONFIGS,
    lookup,
)

# Kafka 4.x's topic configs (TopicConfig.java, and LogConfig's throttled-replica lists).
KAFKA_4_TOPIC_CONFIGS = {
    "cleanup.policy", "compression.type", "compression.gzip.level", "compression.lz4.level",
    "compression.zstd.level", "delete.retention.ms", "file.delete.delay.ms", "flush.messages",
    "flush.ms", "follower.replication.throttled.replicas", "index.interval.bytes",
    "leader.replication.throttled.replicas", "local.retention.bytes", "local.retention.ms",
    "max.compaction.lag.ms", "max.message.bytes", "message.downconversion.enable",
    "message.timestamp.after.max.ms", "message.timestamp.before.max.ms",
    "message.timestamp.type", "min.cleanable.dirty.ratio", "min.compaction.lag.ms",
    "min.insync.replicas", "preallocate", "remote.log.copy.disable",
    "remote.log.delete.on.disable", "remote.storage.enable", "retention.bytes", "retention.ms",
    "segment.bytes", "segment.index.bytes", "segment.jitter.ms", "segment.ms",
    "unclean.leader.election.enable",
}  # fmt: skip
TIERED = {"remote.storage.enable", "local.retention.ms", "local.retention.bytes",
          "remote.log.copy.disable", "remote.log.delete.on.disable"}  # fmt: skip


def test_every_kafka_4_topic_config_is_in_effect_or_refused_with_a_reason() -> None:
    assert set(TOPIC_CONFIGS) >= KAFKA_4_TOPIC_CONFIGS
    for name, row in TOPIC_CONFIGS.items():
        assert row.reader in READERS and row.doc and "\n" not in row.doc, name
        assert (row.reader == REFUSED) == (row.refused is not None), name
        if row.refused is None:
            row.parse(row.default)  # the default is valid
        else:
            with pytest.raises(InvalidConfigError, match=re.escape(row.refused)):
                lookup(name)


def test_tiered_storage_is_refused_saying_why() -> None:
    for name in TIERED:
        with pytest.raises(InvalidConfigError) as info:
            LogConfig.from_properties({name: TOPIC_CONFIGS[name].default})
        assert str(info.value).endswith("odradek has no tiered storage")


def test_types_and_broker_synonyms_are_kafkas() -> None:
    expect = {
        "cleanup.policy": (TYPE_LIST, "log.cleanup.policy"),
        "delete.retention.ms": (TYPE_LONG, "log.cleaner.delete.retention.ms"),
        "min.cleanable.dirty.ratio": (TYPE_DOUBLE, "log.cleaner.min.cleanable.ratio"),
        "min.compaction.lag.ms": (TYPE_LONG, "log.cleaner.min.compaction.lag.ms"),
        "max.compaction.lag.ms": (TYPE_LONG, "log.cleaner.max.compaction.lag.ms"),
        "segment.jitter.ms": (TYPE_LONG, "log.roll.jitter.ms"),
        "compression.type": (TYPE_STRING, "compression.type"),
        "message.timestamp.type": (TYPE_STRING, "log.message.timestamp.type"),
        "message.timestamp.before.max.ms": (TYPE_LONG, "log.message.timestamp.before.max.ms"),
        "message.timestamp.after.max.ms": (TYPE_LONG, "log.message.timestamp.after.max.ms"),
        "preallocate": (TYPE_BOOLEAN, "log.preallocate"),
        "message.downconversion.enable": (TYPE_BOOLEAN, "log.message.downconversion.enable"),
        "retention.ms": (TYPE_LONG, "log.retention.ms"),
        "max.message.bytes": (TYPE_INT, "message.max.bytes"),
    }
    for name, (code, broker) in expect.items():
        assert (TOPIC_CONFIGS[name].type_code, TOPIC_CONFIGS[name].broker_name) == (code, broker)
    assert {"cleanup.policy"} == LIST_CONFIGS


@pytest.mark.parametrize(
    "text, policy, compact, delete",
    [
        ("delete", "delete", False, True),
        ("compact", "compact", True, False),
        ("compact,delete", "compact,delete", True, True),
        ("delete,compact", "compact,delete", True, True),
        (" delete , compact ", "compact,delete", True, True),
    ],
)
def test_cleanup_policy_is_normalized(text: str, policy: str, compact: bool, delete: bool) -> None:
    cfg = LogConfig.from_properties({"cleanup.policy": text})
    assert (cfg.cleanup_policy, cfg.compact, cfg.delete_enabled) == (policy, compact, delete)
    assert LogConfig(cleanup_policy=text).cleanup_policy == policy


@pytest.mark.parametrize(
    "name, text",
    [
        ("cleanup.policy", "purge"),
        ("cleanup.policy", ""),
        ("cleanup.policy", "compact,purge"),
        ("min.cleanable.dirty.ratio", "1.01"),
        ("min.cleanable.dirty.ratio", "-0.1"),
        ("min.cleanable.dirty.ratio", "half"),
        ("max.compaction.lag.ms", "0"),
        ("min.compaction.lag.ms", "-1"),
        ("delete.retention.ms", "-1"),
        ("segment.jitter.ms", "-1"),
        ("compression.type", "brotli"),
        ("compression.type", "ZSTD"),
        ("compression.gzip.level", "10"),
        ("compression.lz4.level", "0"),
        ("compression.zstd.level", "23"),
        ("message.timestamp.type", "createtime"),
        ("message.timestamp.before.max.ms", "-1"),
        ("preallocate", "yes"),
        ("unclean.leader.election.enable", "1"),
        ("segment.bytes", str(1 << 31)),
        ("retention.ms", str(1 << 63)),
    ],
)
def test_invalid_values_are_refused_in_one_line_naming_the_config(name: str, text: str) -> None:
    with pytest.raises(InvalidConfigError) as info:
        LogConfig.from_properties({name: text})
    assert name in str(info.value) and "\n" not in str(info.value)


def test_new_fields_parse_and_round_trip() -> None:
    props = {
        "cleanup.policy": "compact", "delete.retention.ms": "1000",
        "min.cleanable.dirty.ratio": "0.25", "min.compaction.lag.ms": "5",
        "max.compaction.lag.ms": "60000", "segment.jitter.ms": "7",
        "compression.type": "zstd", "compression.gzip.level": "9",
        "compression.lz4.level": "1", "compression.zstd.level": "-5",
        "message.timestamp.type": "LogAppendTime",
        "message.timestamp.before.max.ms": "10", "message.timestamp.after.max.ms": "20",
        "preallocate": "true", "message.downconversion.enable": "false",
    }  # fmt: skip
    cfg = LogConfig.from_properties(props)
    assert (cfg.min_cleanable_dirty_ratio, cfg.max_compaction_lag_ms) == (0.25, 60000)
    assert (cfg.compression_type, cfg.compression_zstd_level) == ("zstd", -5)
    assert cfg.log_append_time and cfg.preallocate and not cfg.message_downconversion_enable
    assert {k: v for k, v in cfg.to_properties().items() if k in props} == props
    assert LogConfig.from_properties(cfg.to_properties()) == cfg


def test_defaults_are_kafkas() -> None:
    cfg = LogConfig()
    assert (cfg.cleanup_policy, cfg.delete_retention_ms) == ("delete", 86_400_000)
    assert (cfg.min_cleanable_dirty_ratio, cfg.min_compaction_lag_ms) == (0.5, 0)
    assert cfg.max_compaction_lag_ms == cfg.message_timestamp_after_max_ms == LONG_MAX
    assert (cfg.compression_type, cfg.message_timestamp_type) == ("producer", "CreateTime")
    assert cfg.delete_enabled and not cfg.compact and cfg.segment_jitter_ms == 0


def test_unknown_configs_are_named() -> None:
    with pytest.raises(InvalidConfigError, match=re.escape("unknown topic config 'no.such'")):
        lookup("no.such")
