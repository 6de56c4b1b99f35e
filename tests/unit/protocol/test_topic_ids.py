"""Topic ids (KIP-516): the string form Kafka writes, the znode, partition.metadata, the cache."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path

import pytest

from broker.log import partition_metadata as pm
from broker.metadata_cache import MetadataCache
from coordinator.cluster.zk_paths import TopicAssignment, ZkDataError
from protocol.api.controller import PartitionState, UpdateMetadataRequest
from protocol.topic_ids import (
    METADATA_TOPIC_ID,
    ZERO,
    InvalidTopicIdError,
    decode_topic_id,
    encode_topic_id,
    new_topic_id,
)

# an id and its string form (16 bytes, most significant first, in url-safe base64)
KAFKA_STRING = "MKUXtpXCQ3SYIw9SCp6gzg"
KAFKA_HEX = "30a517b6-95c2-4374-9823-0f520a9ea0ce"


def test_encoding_is_kafkas_url_safe_base64_without_padding() -> None:
    u = uuid.UUID(KAFKA_HEX)
    assert encode_topic_id(u) == KAFKA_STRING
    assert decode_topic_id(KAFKA_STRING) == u
    odd = uuid.UUID(bytes=b"\xfb\xff" + bytes(14))  # '+' and '/' in plain base64
    assert encode_topic_id(odd).startswith("-_")


@pytest.mark.parametrize(
    "text", ["", "MKUXtpXCQ3SYIw9SCp6gz", "MKUXtpXCQ3SYIw9SCp6gzg=", "MKUXtpXCQ3SYIw9SCp6g+g",
             "MKUXtpXCQ3SYIw9SCp6gzh"]  # the last: 2 stray bits set past the 16 bytes
)  # fmt: skip
def test_decoding_refuses_what_is_not_an_id(text: str) -> None:
    with pytest.raises(InvalidTopicIdError):
        decode_topic_id(text)


def test_new_ids_skip_zero_the_metadata_id_and_a_leading_dash() -> None:
    dash = uuid.UUID(bytes=b"\xf8" + bytes(15))
    assert encode_topic_id(dash).startswith("-")
    good = uuid.UUID(KAFKA_HEX)
    draws = iter([ZERO, METADATA_TOPIC_ID, dash, good])
    assert new_topic_id(lambda: next(draws)) == good
    assert len({new_topic_id() for _ in range(100)}) == 100


def test_znode_version_3_carries_the_id_and_version_1_has_none() -> None:
    u = uuid.UUID(KAFKA_HEX)
    data = TopicAssignment({0: [1, 2], 1: [2, 1]}, u).encode()
    obj = json.loads(data)
    assert obj["version"] == 3 and obj["topic_id"] == KAFKA_STRING
    assert obj["partitions"] == {"0": [1, 2], "1": [2, 1]}
    assert TopicAssignment.decode(data) == TopicAssignment({0: [1, 2], 1: [2, 1]}, u)
    old = b'{"version":1,"partitions":{"0":[1]}}'
    assert TopicAssignment.decode(old) == TopicAssignment({0: [1]}, None)
    assert json.loads(TopicAssignment({0: [1]}).encode())["version"] == 1
    # Kafka 2.8's own form (adding/removing replicas beside the id) reads the same
    kafka = b'{"version":3,"topic_id":"MKUXtpXCQ3SYIw9SCp6gzg","partitions":{"0":[1]},' \
            b'"adding_replicas":{},"removing_replicas":{}}'  # fmt: skip
    assert TopicAssignment.decode(kafka).topic_id == u
    with pytest.raises(ZkDataError):
        TopicAssignment.decode(b'{"version":3,"topic_id":"nope","partitions":{"0":[1]}}')


def test_partition_metadata_is_kafkas_two_lines(tmp_path: Path) -> None:
    u = uuid.UUID(KAFKA_HEX)
    assert pm.read(tmp_path) is None
    pm.write(tmp_path, u)
    assert (tmp_path / "partition.metadata").read_text() == (
        f"version: 0\ntopic_id: {KAFKA_STRING}\n"
    )
    assert pm.read(tmp_path) == u
    assert not list(tmp_path.glob("*.tmp"))


@pytest.mark.parametrize(
    "content",
    [b"", b"version: 1\ntopic_id: MKUXtpXCQ3SYIw9SCp6gzg\n", b"version: 0\n",
     b"version: 0\ntopic_id: nope\n", b"version: 0\ntopicid: MKUXtpXCQ3SYIw9SCp6gzg\n",
     b"\xff\xfe", b"x" * 1000],
)  # fmt: skip
def test_partition_metadata_refuses_a_bad_file(tmp_path: Path, content: bytes) -> None:
    (tmp_path / "partition.metadata").write_bytes(content)
    with pytest.raises(pm.CorruptPartitionMetadataError):
        pm.read(tmp_path)


def test_partition_metadata_decisions() -> None:
    a, b = new_topic_id(), new_topic_id()
    assert pm.decide(None, a) is pm.Verdict.WRITE
    assert pm.decide(a, a) is pm.Verdict.KEEP
    assert pm.decide(a, None) is pm.Verdict.KEEP  # the controller sent no id: nothing to check
    assert pm.decide(None, None) is pm.Verdict.KEEP
    assert pm.decide(a, b) is pm.Verdict.MISMATCH


def _state(topic: str, p: int, topic_id: uuid.UUID | None) -> PartitionState:
    tid = None if topic_id is None else encode_topic_id(topic_id)
    return PartitionState(topic, p, 1, 1, 0, [1], 0, [1], [], topic_id=tid)


def test_metadata_cache_maps_ids_both_ways_and_forgets_deleted_topics() -> None:
    async def run() -> None:
        cache = MetadataCache()
        first, second = new_topic_id(), new_topic_id()
        cache.apply(UpdateMetadataRequest(1, 1, [_state("t", 0, first), _state("old", 0, None)],
                                          [], []))  # fmt: skip
        assert cache.topic_id("t") == first and cache.topic_by_id(first) == "t"
        assert cache.topic_id("old") is None and cache.topic_id("nope") is None
        # re-created under the same name between two updates: the old id is gone
        cache.apply(UpdateMetadataRequest(1, 1, [_state("t", 0, second)], [], []))
        assert cache.topic_id("t") == second
        assert cache.topic_by_id(first) is None and cache.topic_by_id(second) == "t"
        cache.apply(UpdateMetadataRequest(1, 1, [], [], ["t"]))
        assert cache.topic_id("t") is None and cache.topic_by_id(second) is None

    asyncio.run(run())


# ----- Fetch v13+ (topic ids) and leader hints, read back through kio ------------------------


@pytest.mark.parametrize("version", [12, 13, 15, 16, 17])
def test_fetch_response_ids_and_leader_hints_read_back_through_kio(version: int) -> None:
    from protocol.kafka import codec
    from protocol.kafka.fetch_response import FetchedPartition, NodeEndpoint, encode_fetch_response

    tid = uuid.UUID(KAFKA_HEX)
    topic = tid if version >= 13 else "t"
    moved = FetchedPartition(0, 6, -1, -1, b"", current_leader=(3, 7))
    fine = FetchedPartition(1, 0, 5, 0, b"abc")
    nodes = [NodeEndpoint(3, "127.0.0.3", 9093, None), NodeEndpoint(4, "h4", 9094, "r1")]
    header = b"\x00\x00\x00\x4d\x00"
    chunks = encode_fetch_response(version, header, [(topic, [moved, fine])], node_endpoints=nodes)
    data = b"".join(c for c in chunks if isinstance(c, bytes))
    _, body = codec.decode_response(1, version, data[4:])
    (t,) = body.responses
    if version >= 13:
        assert t.topic_id == tid
    else:
        assert t.topic == "t"
    p0, p1 = t.partitions
    assert (p0.current_leader.leader_id, p0.current_leader.leader_epoch) == (3, 7)
    assert p1.current_leader.leader_id == -1  # no hint: the default
    assert bytes(p1.records) == b"abc"
    if version >= 16:
        assert [(n.node_id, n.host, n.port, n.rack) for n in body.node_endpoints] == [
            (3, "127.0.0.3", 9093, None), (4, "h4", 9094, "r1")
        ]  # fmt: skip


# ----- ListOffsets MAX_TIMESTAMP (-3): the record with the largest timestamp -----------------


def test_offset_of_max_timestamp_finds_the_record_inside_its_batch(tmp_path: Path) -> None:
    from broker.log.config import LogConfig
    from broker.log.log import Log
    from protocol.batch import build_batch
    from protocol.clock import ManualClock

    def _batch(stamps: list[int]) -> bytes:
        return build_batch([(None, b"v", None, ts) for ts in stamps])

    log = Log.open(tmp_path / "t-0", LogConfig(), ManualClock(1_000))
    assert log.times.offset_of_max_timestamp() is None
    log.append_as_leader(_batch([100, 300, 200]), 0)
    log.append_as_leader(_batch([250, 50]), 0)
    assert log.times.offset_of_max_timestamp() == (1, 300)  # offset 1 of batch 0-2, not its base
    log.append_as_leader(_batch([10, 900, 900]), 0)
    assert log.times.offset_of_max_timestamp() == (6, 900)  # the first record holding the maximum
    log.close()
