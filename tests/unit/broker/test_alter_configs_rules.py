"""The new override set of an AlterConfigs (broker/operations/alter_configs.py, pure), a broker
applying a topic's config to its logs (PartitionRoles.apply_topic_config), and the native door
reaching the same services as the Kafka door (tests/unit/broker/test_kafka_admin_configs.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.operations.alter_configs import ConfigChange, altered_config
from protocol.api.admin import (
    OP_APPEND,
    OP_DELETE,
    OP_SET,
    OP_SUBTRACT,
    RESOURCE_TOPIC,
    AlterableConfig,
    AlterConfigsRequest,
    AlterConfigsResource,
    CreatePartitionsRequest,
    CreatePartitionsResult,
    CreatePartitionsTopic,
)
from protocol.errors import InvalidConfigError, InvalidRequestError
from tests.unit.broker.harness import BROKER_ID, FakeTopicStore, running_broker

CURRENT = {"retention.ms": "1000", "flush.ms": "10"}


def test_a_whole_set_replace_keeps_only_what_is_listed() -> None:
    changes = [ConfigChange("segment.ms", "5"), ConfigChange("flush.ms", None)]
    assert altered_config(CURRENT, changes, incremental=False) == {"segment.ms": "5"}
    assert altered_config(CURRENT, [], incremental=False) == {}


def test_incremental_set_and_delete_keep_the_rest() -> None:
    changes = [
        ConfigChange("retention.ms", "2000", OP_SET),
        ConfigChange("flush.ms", None, OP_DELETE),
        ConfigChange("segment.ms", None, OP_DELETE),  # not set: deleting it is no error
    ]
    assert altered_config(CURRENT, changes, incremental=True) == {"retention.ms": "2000"}
    assert CURRENT == {"retention.ms": "1000", "flush.ms": "10"}  # not modified in place


@pytest.mark.parametrize(
    ("change", "error", "message"),
    [
        (ConfigChange("retention.ms", "1", OP_APPEND), InvalidRequestError, "append is not"),
        (ConfigChange("flush.ms", "1", OP_SUBTRACT), InvalidRequestError, "subtract is not"),
        (ConfigChange("nope", "1", OP_APPEND), InvalidConfigError, "unknown topic config"),
        (ConfigChange("retention.ms", None, OP_SET), InvalidRequestError, "needs a value"),
        (ConfigChange("retention.ms", "1", 9), InvalidRequestError, "operation 9"),
    ],
)
def test_incremental_refusals(change: ConfigChange, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        altered_config(CURRENT, [change], incremental=True)


def test_append_and_subtract_work_on_the_list_config_cleanup_policy() -> None:
    defaults = {"cleanup.policy": "delete"}
    append = [ConfigChange("cleanup.policy", "compact", OP_APPEND)]
    assert altered_config({}, append, True, defaults) == {"cleanup.policy": "delete,compact"}
    again = [ConfigChange("cleanup.policy", "compact,delete", OP_APPEND)]
    got = altered_config({"cleanup.policy": "compact"}, again, True, defaults)
    assert got == {"cleanup.policy": "compact,delete"}  # no item twice
    subtract = [ConfigChange("cleanup.policy", "delete", OP_SUBTRACT)]
    got = altered_config({"cleanup.policy": "delete,compact"}, subtract, True, defaults)
    assert got == {"cleanup.policy": "compact"}
    with pytest.raises(InvalidConfigError, match="no tiered storage"):
        altered_config({}, [ConfigChange("remote.storage.enable", "x", OP_APPEND)], True)


@pytest.mark.parametrize("incremental", [True, False])
def test_a_key_named_twice_is_refused(incremental: bool) -> None:
    changes = [ConfigChange("retention.ms", "1"), ConfigChange("retention.ms", "2")]
    with pytest.raises(InvalidRequestError, match="duplicate config keys"):
        altered_config(CURRENT, changes, incremental)


async def test_apply_topic_config_reaches_every_log_of_the_topic(tmp_path: Path) -> None:
    async with running_broker(tmp_path, topic_defaults={"segment.ms": "60000"}) as b:
        await b.lead("t", partitions=2)
        await b.lead("u")
        replicas = b.ctx.replicas
        assert replicas.roles.apply_topic_config("t", {"retention.ms": "5"}) == 2
        for p in (0, 1):
            config = b.log_manager.get("t", p).config
            assert (config.retention_ms, config.segment_ms) == (5, 60000)  # on the defaults
        assert b.log_manager.get("u", 0).config.retention_ms != 5
        assert replicas.roles.apply_topic_config("t", {"retention.ms": "5"}) == 0  # no change
        assert replicas.roles.apply_topic_config("t", {"retention.ms": "soon"}) == 0  # refused
        assert b.log_manager.get("t", 0).config.retention_ms == 5
        assert replicas.roles.apply_topic_config("t", {}) == 2  # back to the defaults


async def test_the_native_door_alters_configs_and_adds_partitions(tmp_path: Path) -> None:
    store = FakeTopicStore(configs={"t": {"flush.ms": "10"}}, assignments={"t": {0: [BROKER_ID]}})
    async with running_broker(tmp_path, topics=store) as b:
        store.on_config = b.ctx.replicas.roles.apply_topic_config

        async def lead(topic: str, added: dict[int, list[int]]) -> None:
            await b.lead(topic, partitions=max(added) + 1)

        store.on_add_partitions = lead
        await b.lead("t")
        conn = await b.connect()
        changes = [
            AlterableConfig("retention.ms", "77"),
            AlterableConfig("flush.ms", None, OP_DELETE),
        ]
        request = AlterConfigsRequest([AlterConfigsResource(RESOURCE_TOPIC, "t", changes)])
        (result,) = (await conn.send(request)).results
        assert (result.error_code, result.resource_name) == (0, "t")
        assert store.configs["t"] == {"retention.ms": "77"}
        assert b.log_manager.get("t", 0).config.retention_ms == 77
        grow = CreatePartitionsRequest([CreatePartitionsTopic("t", 2, None)], 5000)
        assert (await conn.send(grow)).results == [CreatePartitionsResult("t", 0, None)]
        assert sorted(b.ctx.metadata.topics["t"]) == [0, 1]
