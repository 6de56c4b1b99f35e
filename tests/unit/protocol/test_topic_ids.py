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
