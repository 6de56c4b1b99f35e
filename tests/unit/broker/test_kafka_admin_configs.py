"""DescribeConfigs, AlterConfigs, IncrementalAlterConfigs and CreatePartitions through the Kafka
door, over a real socket: Kafka's shapes, codes and messages, and the same services the native
door reaches (the fake topic store plays ZooKeeper, the test plays the controller and the
config change listener). A small end-to-end set: the config APIs' behaviour is tested once on
their operations (tests/unit/broker/operations/test_config_operations.py)."""

from __future__ import annotations

import asyncio
import contextlib
import struct
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from broker.apis import KAFKA_SERVED as SERVED
from protocol.api.admin import SOURCE_DEFAULT_CONFIG as DEFAULT_CONFIG
from protocol.api.admin import SOURCE_STATIC_BROKER_CONFIG as STATIC_BROKER_CONFIG
from protocol.api.admin import SOURCE_TOPIC_CONFIG as TOPIC_CONFIG
from protocol.api.admin import TYPE_LONG
from protocol.errors import (
    InvalidConfigError,
    MessageTooLargeError,
)
from protocol.kafka import codec
from protocol.kafka.codec import encode_request, make, nested
from protocol.kafka.versions import (
    ALTER_CONFIGS,
    CREATE_PARTITIONS,
    CREATE_TOPICS,
    DESCRIBE_CONFIGS,
    INCREMENTAL_ALTER_CONFIGS,
)
from protocol.topic_config import IN_EFFECT, TOPIC_CONFIGS
from tests.unit.broker.harness import BROKER_ID, BrokerHarness, FakeTopicStore, running_broker
from tests.unit.broker.helpers import batch, produce

IO_TIMEOUT_S = 10.0
TOPIC, BROKER = 2, 4
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


class Kafka:
    """One Kafka connection: `call(key, version, **fields)` -> the decoded response."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.corr = 0

    @classmethod
    async def connect(cls, b: BrokerHarness) -> Kafka:
        return cls(*await asyncio.open_connection("127.0.0.1", b.kafka_port))

    async def call(self, key: int, version: int, **fields: Any) -> Any:
        self.corr += 1
        body = make(codec.request_class(key, version), **fields)
        self.writer.write(encode_request(key, version, self.corr, body))
        async with asyncio.timeout(IO_TIMEOUT_S):
            (size,) = struct.unpack(">i", await self.reader.readexactly(4))
            frame = await self.reader.readexactly(size)
        corr, resp = codec.decode_response(key, version, frame)
        assert corr == self.corr
        return resp

    async def close(self) -> None:
        self.writer.close()
        with contextlib.suppress(ConnectionError):
            await self.writer.wait_closed()


@contextlib.asynccontextmanager
async def kafka(b: BrokerHarness) -> AsyncIterator[Kafka]:
    c = await Kafka.connect(b)
    try:
        yield c
    finally:
        await c.close()


def req(key: int, version: int, entity: str, /, **fields: Any) -> Any:
    """A nested request entity (a resource, a config, a topic) of that API version."""
    return make(nested(codec.request_class(key, version), entity), **fields)


def describe_resource(version: int, kind: int, name: str, keys: Any = None) -> Any:
    return req(
        DESCRIBE_CONFIGS,
        version,
        "DescribeConfigsResource",
        resource_type=kind,
        resource_name=name,
        configuration_keys=keys,
    )


def alter_resource(version: int, name: str, configs: dict[str, str | None], kind: int = TOPIC):
    cfgs = tuple(
        req(ALTER_CONFIGS, version, "AlterableConfig", name=k, value=v) for k, v in configs.items()
    )
    return req(
        ALTER_CONFIGS,
        version,
        "AlterConfigsResource",
        resource_type=kind,
        resource_name=name,
        configs=cfgs,
    )


def incremental_resource(
    version: int, name: str, ops: list[tuple[str, int, str | None]], kind: int = TOPIC
) -> Any:
    cfgs = tuple(
        req(
            INCREMENTAL_ALTER_CONFIGS,
            version,
            "AlterableConfig",
            name=k,
            config_operation=op,
            value=v,
        )
        for k, op, v in ops
    )
    return req(
        INCREMENTAL_ALTER_CONFIGS,
        version,
        "AlterConfigsResource",
        resource_type=kind,
        resource_name=name,
        configs=cfgs,
    )


def partitions_topic(version: int, name: str, count: int, assignments: Any = None) -> Any:
    given = None
    if assignments is not None:
        given = tuple(
            req(CREATE_PARTITIONS, version, "CreatePartitionsAssignment", broker_ids=tuple(a))
            for a in assignments
        )
    return req(
        CREATE_PARTITIONS,
        version,
        "CreatePartitionsTopic",
        name=name,
        count=count,
        assignments=given,
    )


def codes(resp: Any) -> list[int]:
    return [r.error_code.value for r in resp.responses]


def acting_as_listener(b: BrokerHarness) -> None:
    """Every config write reaches this broker's logs, as the config change listener does."""
    b.topics.on_config = b.ctx.replicas.roles.apply_topic_config


# ----- DescribeConfigs -------------------------------------------------------------------------


def test_the_four_apis_are_served_at_kafka_4_versions() -> None:
    assert SERVED[DESCRIBE_CONFIGS] == (1, 4)
    assert SERVED[ALTER_CONFIGS] == (0, 2)
    assert SERVED[INCREMENTAL_ALTER_CONFIGS] == (0, 1)
    assert SERVED[CREATE_PARTITIONS] == (0, 3)


async def test_describe_v4_answers_kafka_sources_types_synonyms_and_docs(tmp_path: Path) -> None:
    """The Kafka door end to end; what each entry holds is tested on the operation
    (tests/unit/broker/operations/test_config_operations.py)."""
    store = FakeTopicStore(configs={"t": {"retention.ms": "1234"}})
    async with running_broker(tmp_path, topics=store) as b:
        await b.lead("t")
        async with kafka(b) as c:
            resp = await c.call(
                DESCRIBE_CONFIGS,
                4,
                resources=(describe_resource(4, TOPIC, "t", ("retention.ms",)),),
                include_synonyms=True,
                include_documentation=True,
            )
    (result,) = resp.results
    assert result.error_code.value == 0 and result.resource_name == "t"
    (retention,) = result.configs
    assert (retention.value, retention.config_source, retention.config_type) == (
        "1234", TOPIC_CONFIG, TYPE_LONG,
    )  # fmt: skip
    assert [(s.name, s.value, s.source) for s in retention.synonyms] == [
        ("retention.ms", "1234", TOPIC_CONFIG),
        ("log.retention.ms", "604800000", DEFAULT_CONFIG),
    ]
    assert retention.documentation == TOPIC_CONFIGS["retention.ms"].doc


# ----- AlterConfigs (the whole set) ------------------------------------------------------------


async def test_alter_configs_replaces_the_override_set(tmp_path: Path) -> None:
    store = FakeTopicStore(configs={"t": {"retention.ms": "1234", "flush.ms": "10"}})
    async with running_broker(tmp_path, topics=store) as b:
        await b.lead("t")
        async with kafka(b) as c:
            resources = (alter_resource(2, "t", {"retention.bytes": "5000", "segment.ms": None}),)
            resp = await c.call(ALTER_CONFIGS, 2, resources=resources, validate_only=False)
        assert codes(resp) == [0]
        assert store.configs["t"] == {"retention.bytes": "5000"}  # the others are gone


# ----- IncrementalAlterConfigs -----------------------------------------------------------------


async def test_lowered_max_message_bytes_refuses_a_bigger_batch(tmp_path: Path) -> None:
    store = FakeTopicStore(configs={"t": {}})
    async with running_broker(tmp_path, topics=store) as b:
        acting_as_listener(b)
        await b.lead("t")
        conn = await b.connect()
        big = batch(count=4, size=500)
        assert (await conn.send(produce("t", 0, big))).topics[0].partitions[0].error_code == 0
        async with kafka(b) as c:
            ops = [("max.message.bytes", SET, str(len(big) - 1))]
            resp = await c.call(
                INCREMENTAL_ALTER_CONFIGS,
                1,
                resources=(incremental_resource(1, "t", ops),),
                validate_only=False,
            )
            assert codes(resp) == [0]
            answer = (await conn.send(produce("t", 0, big))).topics[0].partitions[0]
            assert answer.error_code == MessageTooLargeError.code


# ----- CreateTopics ----------------------------------------------------------------------------


async def test_create_topics_v7_answers_the_new_topics_configs_and_their_sources(
    tmp_path: Path,
) -> None:
    async with running_broker(tmp_path, topic_defaults={"segment.bytes": "65536"}) as b:
        await b.lead("other")  # broker 1 is live in the cache

        async def lead(name: str, partitions: int) -> None:
            await b.lead(name, partitions)

        b.topics.on_create = lead
        config = req(CREATE_TOPICS, 7, "CreatableTopicConfig", name="cleanup.policy",
                     value="delete,compact")  # fmt: skip

        def topic(name: str, configs: tuple[Any, ...]) -> Any:
            return req(CREATE_TOPICS, 7, "CreatableTopic", name=name, num_partitions=1,
                       replication_factor=1, assignments=(), configs=configs)  # fmt: skip

        bad = req(CREATE_TOPICS, 7, "CreatableTopicConfig", name="local.retention.ms", value="1")
        async with kafka(b) as c:
            both = (topic("c", (config,)), topic("x", (bad,)))
            resp = await c.call(CREATE_TOPICS, 7, topics=both, timeout=5000, validate_only=False)
        made, refused = resp.topics
        assert made.error_code.value == 0
        entries = {e.name: e for e in made.configs}
        assert set(entries) == set(IN_EFFECT)
        assert (entries["cleanup.policy"].value, entries["cleanup.policy"].config_source) == (
            "delete,compact", TOPIC_CONFIG,
        )  # fmt: skip
        assert entries["segment.bytes"].config_source == STATIC_BROKER_CONFIG
        assert entries["retention.ms"].config_source == DEFAULT_CONFIG
        assert refused.error_code.value == InvalidConfigError.code and refused.configs is None
        assert (
            refused.error_message == "local.retention.ms is refused: odradek has no tiered storage"
        )


# ----- CreatePartitions ------------------------------------------------------------------------


def playing_controller(b: BrokerHarness) -> None:
    """New partitions get led at once, as the controller would do on seeing the znode."""

    async def lead(topic: str, added: dict[int, list[int]]) -> None:
        await b.lead(topic, partitions=max(added) + 1)

    b.topics.on_add_partitions = lead


async def test_create_partitions_adds_and_waits_for_leaders(tmp_path: Path) -> None:
    store = FakeTopicStore(assignments={"t": {0: [BROKER_ID]}})
    async with running_broker(tmp_path, topics=store) as b:
        playing_controller(b)
        await b.lead("t")
        async with kafka(b) as c:
            resp = await c.call(
                CREATE_PARTITIONS,
                3,
                topics=(partitions_topic(3, "t", 3),),
                timeout=5000,
                validate_only=False,
            )
            assert [(r.name, r.error_code.value) for r in resp.results] == [("t", 0)]
            assert store.assignments["t"] == {0: [1], 1: [1], 2: [1]}
            assert sorted(b.ctx.metadata.topics["t"]) == [0, 1, 2]
