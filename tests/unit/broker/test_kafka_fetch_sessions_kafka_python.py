"""Our fetch sessions (broker/fetch_session.py) against kafka-python's own session handler.

kafka-python (the version pinned for the Kafka door's tests) keeps its side of a KIP-227
session in kafka.consumer.fetcher.FetchSessionHandler: it names a partition when it joins the
session or its fetch position changes, and forgets one while it holds fetched records not yet
handed to the application (the fetcher's `_fetchable_partitions`), naming it anew afterwards.
The two sides must agree on each partition's fetch offset, or a partition can be left waiting
at an offset the broker no longer reads (no records, no error: silence).

These tests drive the real client handler and our FetchSessionCache with no network: a model
consumer (positions, buffered fetches) and model logs (a high watermark per partition).
- test_kafka_consumer's shape: a session opened on empty partitions, then records arrive;
- a seeded random walk of appends, buffered fetches drained late, seeks, pauses and lost
  answers: once appends stop, every position reaches its high watermark.
"""

from __future__ import annotations

import collections
import random
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import pytest

from broker.fetch_session import FetchSessionCache
from protocol.api.fetch import FetchPartition, FetchRequest, FetchTopic, ForgottenTopic
from protocol.errors import FetchSessionIdNotFoundError, InvalidFetchSessionEpochError

fetcher = pytest.importorskip("kafka.consumer.fetcher")
structs = pytest.importorskip("kafka.structs")

TOPIC = "t"
PARTITIONS = (0, 1, 2, 3)  # test_kafka_consumer's topic: 4 partitions, records on 0 and 1
CONSUMER = -1


@dataclass
class Read:
    """The part of a PartitionRead a session looks at; `upto`: the offset after the records."""

    topic: str
    partition: int
    error_code: int = 0
    high_watermark: int = 0
    log_start_offset: int = 0
    size_bytes: int = 0
    upto: int = 0


class Model:
    """One consumer fetching from one broker through kafka-python's session handler."""

    def __init__(self, seed: int = 0) -> None:
        self.cache = FetchSessionCache(rng=random.Random(seed))
        self.client = fetcher.FetchSessionHandler(1)
        self.hw = dict.fromkeys(PARTITIONS, 0)
        self.position = dict.fromkeys(PARTITIONS, 0)
        self.buffered: list[tuple[int, int, int]] = []  # (partition, fetch offset, upto)
        self.paused: set[int] = set()
        self.now = 0

    def fetch(self, lose_answer: bool = False) -> dict[int, int]:
        """One fetch round; the partitions answered with records, and their byte counts."""
        self.now += 1
        busy = {b[0] for b in self.buffered}
        wanted: dict[Any, Any] = collections.OrderedDict()
        for p in PARTITIONS:
            if p not in self.paused and p not in busy:  # kafka-python's fetchable partitions
                wanted[structs.TopicPartition(TOPIC, p)] = fetcher._FetchPartition(
                    partition=p, current_leader_epoch=0, fetch_offset=self.position[p],
                    last_fetched_epoch=-1, partition_max_bytes=1 << 20,
                )  # fmt: skip
        if not wanted:
            return {}
        data = self.client.build_next(wanted)
        named: dict[str, list[FetchPartition]] = collections.defaultdict(list)
        for tp, f in data._to_send.items():
            named[tp.topic].append(FetchPartition(tp.partition, f.fetch_offset, 1 << 20, 0))
        gone: dict[str, list[int]] = collections.defaultdict(list)
        for tp in data._to_forget:
            gone[tp.topic].append(tp.partition)
        request = FetchRequest(
            CONSUMER, 500, 1, 1 << 20, [FetchTopic(n, fps) for n, fps in named.items()],
            data.id, data.epoch, [ForgottenTopic(n, ps) for n, ps in gone.items()],
        )  # fmt: skip
        try:
            context = self.cache.context(request, self.now)
        except (FetchSessionIdNotFoundError, InvalidFetchSessionEpochError) as exc:
            self.client.handle_response(SimpleNamespace(error_code=exc.code, session_id=0,
                                                        responses=[]))  # fmt: skip
            return {}
        reads = []
        for topic, fp in context.parts:  # a consumer reads below the high watermark
            hw = self.hw[fp.partition]
            size = max(0, hw - fp.fetch_offset)
            reads.append(Read(topic, fp.partition, 0, hw, 0, size, hw))
        if lose_answer:  # the connection drops after the broker took the request
            self.client.handle_error(ConnectionError("lost"))
            return {}
        answered = context.answer(reads)
        parts = [SimpleNamespace(partition_index=r.partition) for r in answered]
        topics = [SimpleNamespace(topic=TOPIC, partitions=parts)]
        response = SimpleNamespace(error_code=0, session_id=context.session_id, responses=topics)
        if not self.client.handle_response(response):
            return {}
        out = {}
        for r in answered:
            if r.size_bytes > 0:
                offset = wanted[structs.TopicPartition(TOPIC, r.partition)].fetch_offset
                self.buffered.append((r.partition, offset, r.upto))
                out[r.partition] = r.size_bytes
        return out

    def drain(self) -> None:
        """The application takes the oldest buffered fetch (kept only if still current)."""
        p, offset, upto = self.buffered.pop(0)
        if p not in self.paused and self.position[p] == offset:
            self.position[p] = upto


def test_partitions_empty_when_the_session_opened_get_their_records_when_they_come() -> None:
    m = Model()
    assert m.fetch() == {}  # opens the session: 4 empty partitions
    assert m.client.next_metadata.epoch == 1
    assert m.fetch() == {}  # incremental, nothing new
    m.hw[0] = m.hw[1] = 100
    assert m.fetch() == {0: 100, 1: 100}  # named by nobody, answered for their records
    m.drain()  # partition 0's records are taken; partition 1's wait in the buffer
    m.hw[0] = 150
    assert m.fetch() == {0: 50}  # partition 0 at its new offset; 1 left the session
    m.drain()
    m.drain()
    assert m.fetch() == {}  # 1 rejoins at 100, both at their high watermark
    assert m.position == {0: 150, 1: 100, 2: 0, 3: 0}


@pytest.mark.parametrize("seed", range(40))
def test_every_position_reaches_the_high_watermark_once_appends_stop(seed: int) -> None:
    rng = random.Random(seed)
    m = Model(seed)
    for _ in range(250):
        roll = rng.random()
        if roll < 0.2:
            m.hw[rng.choice((0, 1))] += rng.randint(1, 30)
        elif roll < 0.25:
            m.paused ^= {rng.choice(PARTITIONS)}  # pause or resume (a rebalance, a validation)
        elif roll < 0.28:
            p = rng.choice(PARTITIONS)
            m.position[p] = rng.randint(0, m.hw[p])  # seek (a reset, a rebalance)
        elif m.buffered and roll < 0.6:
            m.drain()
        else:
            m.fetch(lose_answer=rng.random() < 0.05)
    m.paused.clear()
    for _ in range(40):  # no more appends: each round either drains or fetches
        if m.buffered:
            m.drain()
        else:
            m.fetch()
    while m.buffered:
        m.drain()
    assert m.position == m.hw, f"seed {seed}"
