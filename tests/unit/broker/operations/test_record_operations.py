"""The record APIs' operations (broker/operations/{produce,fetch}.py), each behaviour tested once,
whichever door serves it: called directly with a `Session`, on an in-process broker
(tests/unit/broker/harness.py) with a real log and, where a test says so, a real Authorizer.
The doors' codecs are tested apart (test_record_codecs.py); what a bad batch gets, through the
native door, in tests/unit/broker/test_server.py; the ACL table's checks for every API in
tests/unit/broker/test_acl_rules.py.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from broker.fetch_session import FetchContext
from broker.operations import fetch, produce
from broker.replica_manager import AppendOutcome
from broker.security.authorizer import AclCache, Authorizer
from broker.session import Session
from coordinator.group.records import OFFSETS_TOPIC
from protocol.acl import AclOperation, ResourceType
from protocol.api.fetch import (
    CONSUMER_REPLICA_ID,
    INITIAL_EPOCH,
    FetchPartition,
    FetchRequest,
    FetchTopic,
)
from protocol.batch import TRANSACTIONAL_BIT
from protocol.errors import (
    InvalidRequiredAcksError,
    InvalidTopicError,
    NotLeaderForPartitionError,
    TopicAuthorizationFailedError,
    TransactionalIdAuthorizationFailedError,
)
from protocol.principal import KafkaPrincipal
from protocol.topic_ids import new_topic_id
from tests.unit.broker.harness import BrokerHarness, running_broker
from tests.unit.broker.helpers import batch, with_attributes
from tests.unit.broker.test_acl_rules import grant
from tests.unit.broker.test_topic_ids_kafka_door import _topics as led_here_and_there

ALICE = KafkaPrincipal.user("alice")
SESSION = Session(principal=ALICE, peer_host="127.0.0.1", peer_port=5555)


def request(*parts: tuple[str, int, bytes], acks: int = 1, tid: str | None = None
            ) -> produce.Produce:  # fmt: skip
    topics: dict[str, list[produce.PartitionData]] = {}
    for topic, index, data in parts:
        topics.setdefault(topic, []).append(produce.PartitionData(index, data))
    return produce.Produce(acks, 5000, tuple(
        produce.TopicData(t, tuple(ps)) for t, ps in topics.items()), tid)  # fmt: skip


# For test_table.py: a request model per API, and what its operation needs on the context.
def fetching(replica_id: int, *topics: str, max_wait_ms: int = 0, epoch: int = -1) -> FetchRequest:
    return FetchRequest(replica_id, max_wait_ms, 1, 1 << 20, [
        FetchTopic(t, [FetchPartition(0, 0, 1 << 20)]) for t in topics], 0, epoch)  # fmt: skip


SAMPLES: dict[str, Any] = {
    "Produce": request(("t", 0, batch(1))),
    "Fetch": fetch.Fetch(fetching(CONSUMER_REPLICA_ID, "t", "u")),
}
APPENDING = SimpleNamespace(append=lambda *a, **k: AppendOutcome(0, 0))
READING = SimpleNamespace(
    fetch_context=lambda req: FetchContext([(t.name, p) for t in req.topics for p in t.partitions]),
    read_all=lambda req, context: [], traffic=SimpleNamespace(fetched=lambda *a: None),
)  # fmt: skip
NO_QUOTAS = SimpleNamespace(produce=SimpleNamespace(enabled=False),
                            fetch=SimpleNamespace(enabled=False))  # fmt: skip
CONTEXTS: dict[str, Any] = {
    "Produce": {"quotas": NO_QUOTAS, "replicas": APPENDING, "txn_verifier": None,
                "metadata": None},
    "Fetch": {"quotas": NO_QUOTAS, "replicas": READING, "metadata": None},
}  # fmt: skip


async def run(b: BrokerHarness, req: produce.Produce) -> Any:
    result = produce.run(b.ctx, SESSION, req)
    return await result if inspect.isawaitable(result) else result


def codes(result: produce.ProduceResult) -> dict[tuple[str, int], int]:
    return {(t.name, p.partition): p.error_code for t in result.topics for p in t.partitions}


async def test_produce_answers_each_partition_in_the_order_asked(tmp_path: Path) -> None:
    """Appends where it may, refuses the internal topic (written only by the group
    coordinator), hints the current leader where it is not (KIP-951); acks=0 answers None,
    and an acks value not 0, 1 or -1 refuses every partition, writing nothing."""
    async with running_broker(tmp_path) as b:
        await b.lead("t", 2)
        await b.lead("other", leader=2)
        req = request(("t", 1, batch(3)), (OFFSETS_TOPIC, 0, batch(1)), ("other", 0, batch(1)),
                      ("t", 0, batch(2)))  # fmt: skip
        result = await run(b, req)
        assert [t.name for t in result.topics] == ["t", OFFSETS_TOPIC, "other"]
        assert codes(result) == {
            ("t", 1): 0, ("t", 0): 0, (OFFSETS_TOPIC, 0): InvalidTopicError.code,
            ("other", 0): NotLeaderForPartitionError.code}  # fmt: skip
        parts = {(t.name, p.partition): p for t in result.topics for p in t.partitions}
        assert parts[("other", 0)].current_leader == (2, 0)
        assert parts[("t", 0)].current_leader is None and parts[("t", 0)].base_offset == 0
        assert result.leader_endpoints == ()  # broker 2 has no Kafka listener
        assert await run(b, request(("t", 0, batch(4)), acks=0)) is None
        bad = await run(b, request(("t", 0, batch(5)), ("t", 1, batch(5)), acks=5))
        assert set(codes(bad).values()) == {InvalidRequiredAcksError.code}
        again = await run(b, request(("t", 0, batch(1))))
        assert again.topics[0].partitions[0].base_offset == 6  # 2 + 4, nothing of the acks=5


async def test_a_transactional_producers_errors_name_its_transactional_id(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as b:
        result = await run(b, request((OFFSETS_TOPIC, 0, batch(1)), tid="tx"))
        message = result.topics[0].partitions[0].error_message
        assert message == f"transactional id 'tx': {OFFSETS_TOPIC} is internal"


async def test_produce_refuses_a_transactional_id_whole_and_topics_one_by_one(
    tmp_path: Path,
) -> None:
    """Transactional batches need Write on the transactional id, else every partition is
    refused and nothing is written; each topic needs Write, else its partitions are refused
    beside the others' appends."""
    async with running_broker(tmp_path) as b:
        await b.lead("t")
        await b.lead("u")
        authz = Authorizer(AclCache())
        b.install_authorizer(authz)
        grant(authz, AclOperation.WRITE, ResourceType.TOPIC, "t")
        txn = with_attributes(batch(2), TRANSACTIONAL_BIT)
        whole = await run(b, request(("t", 0, txn), ("u", 0, batch(1)), tid="tx"))
        assert set(codes(whole).values()) == {TransactionalIdAuthorizationFailedError.code}
        mixed = await run(b, request(("t", 0, batch(2)), ("u", 0, batch(1))))
        assert codes(mixed) == {("t", 0): 0, ("u", 0): TopicAuthorizationFailedError.code}
        assert mixed.topics[0].partitions[0].base_offset == 0  # nothing of the refused one


async def test_produce_by_topic_id_names_answers_ids_and_unknown_ids(tmp_path: Path) -> None:
    """Kafka v13+: ids named through the metadata cache, each topic answered under its id; an
    id no topic has is UNKNOWN_TOPIC_ID on each of its partitions, and nothing is written."""
    async with running_broker(tmp_path) as b:
        ids = await led_here_and_there(b, "t", "other")
        gone = new_topic_id()
        parts = (produce.PartitionData(0, batch(2)),)
        req = produce.Produce(
            1,
            5000,
            (produce.TopicData("", parts), produce.TopicData("", parts)),
            topic_ids=(ids["t"], gone),
        )
        result = await run(b, req)
        assert codes(result) == {("t", 0): 0}
        assert result.topic_ids == {"t": ids["t"]}
        assert result.unknown_ids == ((gone, (0,)),)
        again = await run(b, request(("t", 0, batch(1))))
        assert again.topics[0].partitions[0].base_offset == 2  # the 2 by id, nothing else


def fetched(result: fetch.FetchResult) -> dict[tuple[str, int], int]:
    r = result.response
    return {(t.name, p.partition): p.error_code for t in r.topics for p in t.partitions}


async def test_fetch_by_topic_id_names_answers_ids_unknown_ids_and_leader_hints(
    tmp_path: Path,
) -> None:
    """Kafka v13+: ids named through the metadata cache, answered with each topic's id; an id
    no topic has is answered UNKNOWN_TOPIC_ID (and kept by the session the fetch opens, until
    it names a topic); a partition led elsewhere carries its leader (KIP-951)."""
    async with running_broker(tmp_path) as b:
        ids = await led_here_and_there(b, "t", "other")
        await run(b, request(("t", 0, batch(3))))
        t_id, other_id, gone = ids["t"], ids["other"], new_topic_id()
        parts = (FetchPartition(0, 0, 1 << 20),)
        ask = fetch.Fetch(
            fetching(CONSUMER_REPLICA_ID, epoch=INITIAL_EPOCH),
            ((t_id, parts), (other_id, parts), (gone, parts)),
            leader_hints=True,
        )
        result = fetch.run(b.ctx, SESSION, ask)
        assert isinstance(result, fetch.FetchResult)
        assert fetched(result) == {("t", 0): 0, ("other", 0): NotLeaderForPartitionError.code}
        assert result.topic_ids == {"t": t_id, "other": other_id}
        assert result.leaders == {("other", 0): (2, 5)}
        assert result.leader_endpoints == ((2, "127.0.0.2", 9092, None),)
        assert result.unknown_ids == ((gone, (0,)),)
        session = b.ctx.replicas.sessions.get(result.response.session_id)
        assert session is not None and set(session.unresolved) == {gone}
        assert result.response.topics[0].partitions[0].high_watermark == 3


async def test_fetch_refuses_topics_one_by_one_and_followers_without_cluster_action(
    tmp_path: Path,
) -> None:
    """A consumer needs Read on each topic (the others are still read and answered); a
    follower ClusterAction on the cluster, else every partition is refused."""
    async with running_broker(tmp_path) as b:
        await b.lead("t")
        await b.lead("u")
        await run(b, request(("t", 0, batch(3)), ("u", 0, batch(2))))
        authz = Authorizer(AclCache())
        b.install_authorizer(authz)
        grant(authz, AclOperation.READ, ResourceType.TOPIC, "t")
        consumer = fetch.run(b.ctx, SESSION, fetch.Fetch(fetching(CONSUMER_REPLICA_ID, "t", "u")))
        assert isinstance(consumer, fetch.FetchResult)
        assert fetched(consumer) == {("t", 0): 0, ("u", 0): TopicAuthorizationFailedError.code}
        assert consumer.topic_ids is None and consumer.leaders is None  # a native answer
        follower = fetch.run(b.ctx, SESSION, fetch.Fetch(fetching(2, "t", "u")))
        assert isinstance(follower, fetch.FetchResult)
        assert set(fetched(follower).values()) == {TopicAuthorizationFailedError.code}
