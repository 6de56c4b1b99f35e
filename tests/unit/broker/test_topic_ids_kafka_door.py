"""The Kafka door with topic ids and KIP-951 leader hints, over a real socket: Fetch v13+ by id
(an unknown id is UNKNOWN_TOPIC_ID), and a broker that does not lead a partition answers Produce
v10+ and Fetch v12+ with the current leader, and (Produce v10+, Fetch v16+) its endpoint."""

from __future__ import annotations

import dataclasses
import uuid
from pathlib import Path
from typing import Any

from protocol.api.controller import LeaderAndIsrRequest, UpdateMetadataRequest
from protocol.api.metadata import BrokerInfo
from protocol.kafka import codec
from protocol.kafka.versions import FETCH, PRODUCE
from protocol.topic_ids import encode_topic_id, new_topic_id
from tests.unit.broker.harness import BROKER_ID, BrokerHarness, running_broker
from tests.unit.broker.helpers import batch
from tests.unit.broker.test_kafka_door import KafkaRaw

OTHER = 2
NOT_LEADER = 6
UNKNOWN_TOPIC_ID = 100


def _nested(key: int, version: int, entity: str, /, **fields: Any) -> Any:
    return codec.make(codec.nested(codec.request_class(key, version), entity), **fields)


async def _topics(b: BrokerHarness, led_here: str, led_there: str) -> dict[str, uuid.UUID]:
    """Play the controller: `led_here` led by this broker, `led_there` by broker 2 (epoch 5),
    both with ids; broker 2 has a Kafka listener at 127.0.0.2:9092."""
    ids = {led_here: new_topic_id(), led_there: new_topic_id()}
    here = dataclasses.replace(b.state(led_here, 0), topic_id=encode_topic_id(ids[led_here]))
    there = dataclasses.replace(b.state(led_there, 0, OTHER, [BROKER_ID, OTHER]), leader_epoch=5,
                                topic_id=encode_topic_id(ids[led_there]))  # fmt: skip
    live = [b.broker_info(), BrokerInfo(OTHER, "127.0.0.1", 1, None, "127.0.0.2", 9092)]
    conn = await b.connect()
    resp = await conn.send(LeaderAndIsrRequest(0, b.controller_epoch, [here, there], live))
    assert all(p.error_code == 0 for p in resp.partitions), resp
    await conn.send(UpdateMetadataRequest(0, b.controller_epoch, [here, there], live, []))
    return ids


def _fetch(c: KafkaRaw, version: int, topic_ids: list[uuid.UUID]) -> None:
    part = dict(partition=0, current_leader_epoch=-1, fetch_offset=0, last_fetched_epoch=-1,
                log_start_offset=-1, partition_max_bytes=1 << 20)  # fmt: skip
    topics = tuple(
        _nested(FETCH, version, "FetchTopic", topic_id=tid,
                partitions=(_nested(FETCH, version, "FetchPartition", **part),))
        for tid in topic_ids
    )  # fmt: skip
    c.send(FETCH, version, 1, max_wait=0, min_bytes=0, max_bytes=1 << 20, isolation_level=0,
           session_id=0, session_epoch=-1, topics=topics, forgotten_topics_data=(),
           rack_id="")  # fmt: skip


async def test_fetch_by_id_and_leader_hints(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as b:
        ids = await _topics(b, "here", "there")
        c = await KafkaRaw.connect(b.kafka_port)
        gone = new_topic_id()
        for version in (13, 16, 17):
            _fetch(c, version, [ids["here"], ids["there"], gone])
            _, resp = await c.read(FETCH, version)
            by_id = {t.topic_id: t.partitions[0] for t in resp.responses}
            assert by_id[ids["here"]].error_code.value == 0
            moved = by_id[ids["there"]]
            assert moved.error_code.value == NOT_LEADER
            assert (moved.current_leader.leader_id, moved.current_leader.leader_epoch) == (2, 5)
            assert by_id[gone].error_code.value == UNKNOWN_TOPIC_ID
            nodes = [(n.node_id, n.host, n.port) for n in getattr(resp, "node_endpoints", ())]
            assert nodes == ([(2, "127.0.0.2", 9092)] if version >= 16 else [])
        c.close()


async def test_produce_to_a_follower_names_the_leader(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as b:
        await _topics(b, "here", "there")
        c = await KafkaRaw.connect(b.kafka_port)
        for version in (9, 10, 12):
            data = tuple(
                _nested(PRODUCE, version, "TopicProduceData", name=name, partition_data=(
                    _nested(PRODUCE, version, "PartitionProduceData", index=0, records=batch(1)),))
                for name in ("here", "there")
            )  # fmt: skip
            c.send(PRODUCE, version, 1, transactional_id=None, acks=1, timeout=5000,
                   topic_data=data)  # fmt: skip
            _, resp = await c.read(PRODUCE, version)
            parts = {t.name: t.partition_responses[0] for t in resp.responses}
            assert parts["here"].error_code.value == 0
            assert parts["there"].error_code.value == NOT_LEADER
            if version >= 10:
                hint = parts["there"].current_leader
                assert (hint.leader_id, hint.leader_epoch) == (2, 5)
                assert parts["here"].current_leader.leader_id == -1
                nodes = [(n.node_id, n.host, n.port) for n in resp.node_endpoints]
                assert nodes == [(2, "127.0.0.2", 9092)]
        c.close()
