"""A compacted topic written in transactions by confluent-kafka, cleaned by a real broker.

One broker looks for cleaning work every 200 ms. A transactional producer writes every key in
a committed transaction, then every key again in an aborted one, round after round (so an
aborted value is always the latest by offset), then committed filler of other keys that rolls
the segments. Once the cleaner has passed over it: no aborted value is stored any more (a
read_uncommitted consumer sees none either), a read_committed consumer reads the last
committed value of every key; and, after more filler and delete.retention.ms, only the markers
of transactions with data left remain in the segment files.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from client import Admin, NewTopic
from deploy.cluster import LocalCluster
from protocol.batch import CONTROL_BIT, BatchHeader, iter_batches
from tests.fixtures.cluster import ClusterFactory, wait_until

pytestmark = pytest.mark.integration

TOPIC = "txn-changelog"
KEYS = 10
ROUNDS = 3
TIMEOUT_S = 30.0
NUDGE_S = 0.5  # a committed transaction of another key this often while markers are awaited
CONFIGS = {
    "cleanup.policy": "compact",
    "segment.bytes": "1024",
    "min.cleanable.dirty.ratio": "0.01",
    "delete.retention.ms": "1000",
}


def _producer(bootstrap: str) -> Any:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"tx-{uuid.uuid4().hex}",
                  "linger.ms": 0})  # fmt: skip
    p.init_transactions(TIMEOUT_S)
    return p


def _txn(p: Any, pairs: list[tuple[bytes, bytes]], commit: bool) -> None:
    p.begin_transaction()
    for key, value in pairs:
        p.produce(TOPIC, value=value, key=key, partition=0)
        p.poll(0)
    assert p.flush(TIMEOUT_S) == 0
    if commit:
        p.commit_transaction(TIMEOUT_S)
    else:
        p.abort_transaction(TIMEOUT_S)


def _filler(p: Any, tag: str) -> None:
    for i in range(4):  # several committed transactions: several segments
        _txn(p, [(b"fill-%s-%d-%d" % (tag.encode(), i, j), b"x" * 100) for j in range(4)], True)


def _read(bootstrap: str, isolation: str) -> dict[bytes, bytes]:
    """The latest value per key a consumer of `isolation` reads up to the end it can reach."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{uuid.uuid4().hex}",
                  "enable.auto.commit": False, "isolation.level": isolation})  # fmt: skip
    try:
        tp = TopicPartition(TOPIC, 0, OFFSET_BEGINNING)
        c.assign([tp])
        latest: dict[bytes, bytes] = {}
        deadline = time.monotonic() + TIMEOUT_S
        while time.monotonic() < deadline:
            msg = c.poll(0.2)
            if msg is None:
                if b"end" in latest:
                    break
                continue
            assert msg.error() is None, msg.error()
            latest[msg.key()] = msg.value()
        assert b"end" in latest, f"{isolation}: the last record never came"
        return latest
    finally:
        c.close()


def _stored(cluster: LocalCluster) -> list[tuple[BatchHeader, bytes]] | None:
    """The whole batches of the partition's segment files; None when a file went away under
    the read (a swap): read again."""
    directory = Path(cluster.broker(1).log_dir) / f"{TOPIC}-0"
    try:
        files = [path.read_bytes() for path in sorted(directory.glob("*.log"))]
    except FileNotFoundError:
        return None
    out = []
    for data in files:
        whole = 0
        while whole + 12 <= len(data):
            size = 12 + int.from_bytes(data[whole + 8 : whole + 12], "big")
            if whole + size > len(data):
                break  # an append in flight
            whole += size
        out += [(h, data[pos : pos + h.size]) for pos, h in iter_batches(data[:whole])]
    return out


def _markers_below(cluster: LocalCluster, end: int) -> list[int] | None:
    stored = _stored(cluster)
    if stored is None:
        return None
    return [h.base_offset for h, _ in stored if h.attributes & CONTROL_BIT and h.base_offset < end]


def test_aborted_values_go_and_read_committed_reads_the_last_committed_value(
    cluster_factory: ClusterFactory,
) -> None:
    cluster = cluster_factory(brokers=1, broker_settings={
        "log_cleaner_backoff_ms": 200, "transaction_state_log_num_partitions": 3,
    })  # fmt: skip
    with Admin(cluster.bootstrap) as admin:
        admin.create_topics([NewTopic(TOPIC, 1, 1, CONFIGS)])
    bootstrap = cluster.kafka_bootstrap
    p = _producer(bootstrap)
    expected: dict[bytes, bytes] = {}
    for r in range(ROUNDS):
        committed = [(b"key-%d" % i, b"committed-%d-%d" % (r, i)) for i in range(KEYS)]
        _txn(p, committed, True)
        expected.update(committed)
        _txn(p, [(b"key-%d" % i, b"aborted-%d-%d" % (r, i)) for i in range(KEYS)], False)
    _filler(p, "a")
    _txn(p, [(b"end", b"end")], True)

    def no_aborted_value() -> bool:
        stored = _stored(cluster)
        return stored is not None and not any(b"aborted-" in b for _, b in stored)

    wait_until(no_aborted_value, "the aborted values cleaned away", 60)
    for isolation in ("read_uncommitted", "read_committed"):
        got = _read(bootstrap, isolation)
        assert {k: v for k, v in got.items() if k.startswith(b"key-")} == expected, isolation
    stored = _stored(cluster)
    assert stored is not None
    end = max(h.last_offset for h, _ in stored) + 1
    # one producer: each transaction's records take consecutive offsets and its marker the
    # next; the markers that must stay are those of transactions left with data: the last
    # committed round's and the filler's. Every aborted round's, every earlier committed
    # round's and the first "end" transaction's go, once a pass found them empty and
    # delete.retention.ms passed after it
    last_round = (ROUNDS - 1) * 2 * (KEYS + 1) + KEYS
    filler = [last_round + 2 * (KEYS + 1) - KEYS + 5 * (i + 1) - 1 for i in range(4)]
    _txn(p, [(b"end", b"end")], True)
    _filler(p, "b")  # past the active segment: a pass finds the first "end" emptied

    last_nudge, nudges = time.monotonic(), 0

    def markers_left() -> bool:
        nonlocal last_nudge, nudges
        if _markers_below(cluster, end) == [last_round, *filler]:
            return True
        # a marker goes in a pass after the one that emptied its transaction (the emptying
        # pass still met the transaction's batch: Kafka's CleanedTransactionMetadata), and
        # then in a pass after its delete horizon; a pass needs dirty data, so keep some
        # coming (when one pass took all the filler, nothing else would ever come)
        if time.monotonic() - last_nudge >= NUDGE_S:
            nudges += 1
            _txn(p, [(b"nudge-%d" % nudges, b"x" * 100)], True)
            last_nudge = time.monotonic()
        return False

    wait_until(markers_left, f"only the markers {[last_round, *filler]} left", 60)
    got = _read(bootstrap, "read_committed")
    assert {k: v for k, v in got.items() if k.startswith(b"key-")} == expected
