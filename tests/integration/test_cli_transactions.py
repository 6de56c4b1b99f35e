"""`odradek transactions` against three real brokers, with confluent-kafka's transactional
producer (through the Kafka listener) holding a transaction open.

- list and describe show it Ongoing with its partitions; describe-producers shows its start
  offset at the partition's leader; `abort --start-offset` (Kafka's form) ends it there, so a
  read_committed consumer's end offset (the last stable offset) moves on to the high watermark.
- find-hanging reports an open transaction once it is older than `--max-age` (a transaction
  that truly hangs cannot be made: KIP-890's verification refuses a transactional batch the
  coordinator does not know), not with Kafka's default threshold, and not once committed.
- AsyncAdmin's own calls on the caller's loop, and an abort given the producer's ids.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import pytest

from client import Admin
from client.types import NewTopic, TopicPartition
from deploy.cluster import LocalCluster
from tests.fixtures.cluster import run_odradek, wait_until

pytestmark = pytest.mark.integration

TIMEOUT_S = 30.0


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _topic(cluster: LocalCluster, partitions: int) -> str:
    topic = _name("txcli")
    with Admin(cluster.bootstrap) as admin:
        admin.create_topics([NewTopic(topic, partitions, 3)])

        def led() -> bool:
            [d] = admin.describe_topics([topic])
            return d.error_code == 0 and all(p.leader >= 0 for p in d.partitions)

        wait_until(led, f"{topic} led", TIMEOUT_S)
    return topic


def _producer(cluster: LocalCluster, tid: str) -> Any:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": cluster.kafka_bootstrap, "transactional.id": tid,
                  "transaction.timeout.ms": 120_000, "linger.ms": 5})  # fmt: skip
    p.init_transactions(TIMEOUT_S)
    return p


def _send(p: Any, topic: str, partition: int, count: int) -> None:
    for i in range(count):
        p.produce(topic, value=f"v{i}".encode(), partition=partition)
    assert p.flush(TIMEOUT_S) == 0


def _end_offset(cluster: LocalCluster, topic: str, isolation: str) -> int:
    from confluent_kafka import Consumer
    from confluent_kafka import TopicPartition as CTp

    c = Consumer({"bootstrap.servers": cluster.kafka_bootstrap, "group.id": _name("wm"),
                  "isolation.level": isolation})  # fmt: skip
    try:
        return int(c.get_watermark_offsets(CTp(topic, 0), TIMEOUT_S, cached=False)[1])
    finally:
        c.close()


def _odradek(cluster: LocalCluster, *args: str) -> str:
    done = run_odradek("transactions", *args, "--bootstrap", cluster.bootstrap)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _json(cluster: LocalCluster, *args: str) -> Any:
    return json.loads(_odradek(cluster, *args, "-o", "json"))


def test_list_describe_producers_and_abort_by_start_offset(cluster3: LocalCluster) -> None:
    topic, tid = _topic(cluster3, 2), _name("tx")
    p = _producer(cluster3, tid)
    p.begin_transaction()
    _send(p, topic, 0, 3)
    _send(p, topic, 1, 1)

    listed = _json(cluster3, "list", "--state", "Ongoing")["transactions"]
    [row] = [t for t in listed if t["transactional_id"] == tid]
    assert row["state"] == "Ongoing" and row["coordinator"] in (1, 2, 3)
    table = _odradek(cluster3, "list").splitlines()
    assert table[0].split() == ["TransactionalId", "Coordinator", "ProducerId", "TransactionState"]
    assert any(line.split()[0] == tid and line.split()[-1] == "Ongoing" for line in table[1:])

    desc = _json(cluster3, "describe", "--transactional-id", tid)
    assert (desc["state"], desc["producer_id"]) == ("Ongoing", row["producer_id"])
    assert desc["partitions"] == [{"topic": topic, "partition": 0},
                                  {"topic": topic, "partition": 1}]  # fmt: skip
    assert desc["duration_ms"] >= 0 and desc["coordinator_id"] == row["coordinator"]
    head, line = _odradek(cluster3, "describe", "--transactional-id", tid).splitlines()
    assert head.split()[-1] == "TopicPartitions" and line.split()[-1] == f"{topic}-0,{topic}-1"

    producers = _json(cluster3, "describe-producers", "--topic", topic, "--partition", "0")
    [mine] = [x for x in producers["producers"] if x["producer_id"] == row["producer_id"]]
    assert mine["current_txn_start_offset"] == 0 and mine["last_sequence"] == 2
    head, *_ = _odradek(cluster3, "describe-producers", "--topic", topic, "--partition", "0")\
        .splitlines()  # fmt: skip
    assert head.split()[-1] == "CurrentTransactionStartOffset"

    assert _end_offset(cluster3, topic, "read_committed") == 0  # held by the open transaction
    missing = run_odradek("transactions", "abort", "--topic", topic, "--partition", "0",
                          "--start-offset", "1", "--bootstrap", cluster3.bootstrap)  # fmt: skip
    assert missing.returncode == 1 and "open ones start at 0" in missing.stderr
    out = _odradek(cluster3, "abort", "--topic", topic, "--partition", "0", "--start-offset", "0")
    assert f"producer {row['producer_id']}" in out
    assert _end_offset(cluster3, topic, "read_committed") == 4  # past the three and the marker
    producers = _json(cluster3, "describe-producers", "--topic", topic, "--partition", "0")
    assert all(x["current_txn_start_offset"] is None for x in producers["producers"])


def test_find_hanging_reports_a_transaction_open_longer_than_max_age(
    cluster3: LocalCluster,
) -> None:
    topic, tid = _topic(cluster3, 1), _name("tx-hang")
    p = _producer(cluster3, tid)
    p.begin_transaction()
    _send(p, topic, 0, 2)
    time.sleep(2.5)
    args = ("find-hanging", "--topic", topic)
    assert _json(cluster3, *args)["hanging"] == []  # Kafka's threshold: 20 minutes
    [h] = _json(cluster3, *args, "--max-age", "2000")["hanging"]
    assert (h["topic"], h["partition"], h["start_offset"]) == (topic, 0, 0)
    assert h["transactional_id"] == tid and h["duration_ms"] >= 2000
    lines = _odradek(cluster3, *args, "--max-age", "2000").splitlines()
    assert lines[0].split()[:8] == ["Topic", "Partition", "ProducerId", "ProducerEpoch",
                                    "CoordinatorEpoch", "StartOffset", "LastTimestamp",
                                    "Duration(min)"]  # fmt: skip
    assert len(lines) == 2 and lines[1].split()[0] == topic
    with Admin(cluster3.bootstrap) as admin:  # the library call, for a broker's partitions
        leader = admin.describe_topics([topic])[0].partitions[0].leader
        found = admin.find_hanging_transactions(broker_id=leader, max_age_ms=2000)
        assert [(x.topic, x.transactional_id) for x in found if x.topic == topic] == [
            (topic, tid)]  # fmt: skip
        assert admin.describe_producers([TopicPartition(topic, 0)], broker_id=leader)
    p.commit_transaction(TIMEOUT_S)
    wait_until(lambda: _json(cluster3, *args, "--max-age", "0")["hanging"] == [],
               "no open transaction after the commit", TIMEOUT_S)  # fmt: skip


def test_async_admin_lists_describes_and_aborts(cluster3: LocalCluster) -> None:
    """The same calls on AsyncAdmin, on the caller's event loop: an explicit abort with the
    producer's ids (the admin form kafka-transactions.sh also takes)."""
    import asyncio

    from client import AsyncAdmin

    topic, tid = _topic(cluster3, 1), _name("tx-async")
    p = _producer(cluster3, tid)
    p.begin_transaction()
    _send(p, topic, 0, 2)
    tp = TopicPartition(topic, 0)

    async def go() -> None:
        async with AsyncAdmin(cluster3.bootstrap) as admin:
            [listed] = [t for t in await admin.list_transactions(["Ongoing"]) if
                        t.transactional_id == tid]  # fmt: skip
            desc = (await admin.describe_transactions([tid]))[tid]
            assert desc.producer_id == listed.producer_id and desc.partitions == [tp]
            [prod] = [x for x in (await admin.describe_producers([tp]))[tp]
                      if x.producer_id == desc.producer_id]  # fmt: skip
            assert prod.current_txn_start_offset == 0
            await admin.abort_transaction(topic, 0, prod.producer_id, prod.producer_epoch,
                                          prod.coordinator_epoch)  # fmt: skip
            after = (await admin.describe_producers([tp]))[tp]
            assert all(x.current_txn_start_offset < 0 for x in after)

    asyncio.run(go())
    assert _end_offset(cluster3, topic, "read_committed") == 3


# Long enough for an `odradek` process to start and describe the open transaction before the
# coordinator aborts it: a CLI start took 2.5 s on a loaded 2-core machine, past the 1 s this was.
TXN_TIMEOUT_MS = 10_000


def test_describe_after_a_timeout_abort_shows_the_last_transactions_start(
    cluster3: LocalCluster,
) -> None:
    """As kafka-transactions.sh describe: no start time (and no duration) in Empty, before any
    transaction began; once the coordinator aborted a transaction past its timeout, the state
    is CompleteAbort and the start time is still that transaction's (Kafka's coordinator keeps
    it until the next one begins), the duration counted from it."""
    from confluent_kafka import Producer

    topic, tid = _topic(cluster3, 1), _name("tx-timeout")
    p = Producer({"bootstrap.servers": cluster3.kafka_bootstrap, "transactional.id": tid,
                  "transaction.timeout.ms": TXN_TIMEOUT_MS, "linger.ms": 5})  # fmt: skip
    p.init_transactions(TIMEOUT_S)
    empty = _json(cluster3, "describe", "--transactional-id", tid)
    assert empty["state"] == "Empty", empty
    assert empty["start_time_ms"] is None and empty["duration_ms"] is None, empty
    head, line = _odradek(cluster3, "describe", "--transactional-id", tid).splitlines()
    assert line.split()[6:8] == ["-", "-"], (head, line)  # CurrentTransactionStartTimeMs, ...
    p.begin_transaction()
    _send(p, topic, 0, 1)
    ongoing = _json(cluster3, "describe", "--transactional-id", tid)
    assert ongoing["state"] == "Ongoing" and ongoing["start_time_ms"] is not None, ongoing

    def aborted() -> bool:
        return bool(_json(cluster3, "describe", "--transactional-id", tid)["state"] ==
                    "CompleteAbort")  # fmt: skip

    wait_until(aborted, "the coordinator aborts the timed-out transaction", 60.0)
    done = _json(cluster3, "describe", "--transactional-id", tid)
    assert done["start_time_ms"] == ongoing["start_time_ms"], (ongoing, done)
    assert done["duration_ms"] >= TXN_TIMEOUT_MS and done["partitions"] == [], done
    assert _end_offset(cluster3, topic, "read_committed") == 2  # the record and the marker


def test_consume_isolation_level_read_committed_hides_aborted_and_open_transactions(
    cluster3: LocalCluster,
) -> None:
    """`odradek consume --isolation-level read_committed` (kafka-console-consumer's flag): a
    committed transaction's record is shown; an aborted one's is not, nor anything from an open
    transaction's first record on (the last stable offset). Without it (read_uncommitted, the
    default) every record is shown. A bad value is one usage line."""
    topic = _topic(cluster3, 1)
    for value, end in (("committed", "commit"), ("aborted", "abort")):
        p = _producer(cluster3, _name("tx-iso"))
        p.begin_transaction()
        p.produce(topic, value=value.encode(), partition=0)
        assert p.flush(TIMEOUT_S) == 0
        getattr(p, f"{end}_transaction")(TIMEOUT_S)
    held = _producer(cluster3, _name("tx-iso-open"))
    held.begin_transaction()
    held.produce(topic, value=b"open", partition=0)
    assert held.flush(TIMEOUT_S) == 0
    plain = run_odradek("produce", topic, "--acks", "all", "--bootstrap", cluster3.bootstrap,
                        input="plain\n")  # fmt: skip
    assert plain.returncode == 0, plain.stderr

    def consume(*extra: str) -> Any:
        return run_odradek("consume", topic, "--from-beginning", "--timeout-ms", "3000",
                           "--bootstrap", cluster3.bootstrap, *extra)  # fmt: skip

    try:
        every = consume()
        assert every.returncode == 0, every.stderr
        assert every.stdout.splitlines() == ["committed", "aborted", "open", "plain"]
        for group in ([], ["--group", _name("iso-g")]):
            committed = consume("--isolation-level", "read_committed", *group)
            assert committed.returncode == 0, committed.stderr
            assert committed.stdout.splitlines() == ["committed"], (group, committed.stdout)
        bad = consume("--isolation-level", "serializable")
        assert bad.returncode == 2 and bad.stdout == ""
        assert len(bad.stderr.splitlines()) == 1 and "invalid choice: 'serializable'" in bad.stderr
    finally:
        held.abort_transaction(TIMEOUT_S)
