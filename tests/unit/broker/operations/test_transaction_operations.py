"""The transaction APIs' operations (broker/operations/), each tested once, whichever door
serves it: called directly with a `Session`, on an in-process broker (tests/unit/broker/
harness.py) with the real transaction coordinator and, where a test says so, a real Authorizer.
The doors' codecs are tested apart (test_transaction_codecs.py); the ACL table's checks per
API through the native door in tests/unit/broker/test_acl_rules.py.
"""

from __future__ import annotations

import asyncio
import inspect
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from broker.operations import add_offsets_to_txn as aot
from broker.operations import add_partitions_to_txn as apt
from broker.operations import describe_producers as dp
from broker.operations import end_txn
from broker.operations import init_producer_id as ipi
from broker.operations import list_transactions as lt
from broker.operations import txn_offset_commit as toc
from broker.operations import write_txn_markers as wtm
from broker.security.authorizer import AclCache, Authorizer
from broker.session import Session
from coordinator.cluster.producer_ids import ProducerIdManager
from coordinator.group.records import OFFSETS_TOPIC
from coordinator.transaction.txn import TxnListing
from protocol.acl import AclOperation, ResourceType
from protocol.api.producer_ids import InitProducerIdRequest
from protocol.batch import build_batch_from_values
from protocol.clock import ManualClock
from protocol.errors import (
    ClusterAuthorizationFailedError,
    ConcurrentTransactionsError,
    CoordinatorLoadInProgressError,
    GroupAuthorizationFailedError,
    InvalidRegularExpressionError,
    NotCoordinatorError,
    OffsetMetadataTooLargeError,
    OperationNotAttemptedError,
    ProducerFencedError,
    TopicAuthorizationFailedError,
    TransactionalIdAuthorizationFailedError,
    UnknownTopicOrPartitionError,
)
from protocol.principal import KafkaPrincipal
from tests.unit.broker.harness import BrokerHarness, running_broker
from tests.unit.broker.helpers import TS_MS, produce
from tests.unit.broker.operations.test_group_operations import coordinate_groups
from tests.unit.broker.test_acl_rules import grant
from tests.unit.broker.test_txn_verification import coordinator_for as txn_coordinator_for

ALICE = KafkaPrincipal.user("alice")
SESSION = Session(principal=ALICE, peer_host="127.0.0.1", peer_port=5555)
NOT_COORDINATOR = NotCoordinatorError.code  # a broker not coordinating the id (yet)
UNKNOWN = UnknownTopicOrPartitionError.code
TOPICS = (("t", (0,)), ("u", (0,)))

# For test_table.py: a request model per API, and what its operation needs on the context.
SAMPLES: dict[str, Any] = {
    "InitProducerId": ipi.InitProducerId("tx", 60_000),
    "AddPartitionsToTxn": apt.AddPartitionsToTxn((apt.TxnPartitions("tx", 1, 0, TOPICS),)),
    "AddOffsetsToTxn": aot.AddOffsetsToTxn("tx", 1, 0, "g"),
    "EndTxn": end_txn.EndTxn("tx", 1, 0, True),
    "TxnOffsetCommit": toc.TxnOffsetCommit("tx", "g", 1, 0, (("t", (toc.OffsetToCommit(0, 5),)),)),
    "WriteTxnMarkers": wtm.WriteTxnMarkers((wtm.Marker(1, 0, True, 0, TOPICS),)),
    "ListTransactions": lt.ListTransactions(),
    "DescribeProducers": dp.DescribeProducers(TOPICS),
}
# ListTransactions asks only when there are ids to show; the others need nothing more.
LISTING = SimpleNamespace(list_transactions=lambda *_: ([TxnListing("tx", 1, "Ongoing")], []))
REPLICAS = SimpleNamespace(leader=lambda t, p: SimpleNamespace(log=SimpleNamespace(
    producer_states=lambda: [])))  # fmt: skip


async def _appended(*_: Any) -> int:
    return 0


CONTEXTS: dict[str, Any] = {
    "WriteTxnMarkers": {"replicas": SimpleNamespace(append_marker=_appended)},
    "ListTransactions": {"transactions": LISTING},
    "DescribeProducers": {"replicas": REPLICAS},
}


async def run(operation: Any, b: BrokerHarness, request: Any) -> Any:
    result = operation(b.ctx, SESSION, request)
    return await result if inspect.isawaitable(result) else result


async def init_once_markers_are_written(
    b: BrokerHarness, req: ipi.InitProducerId
) -> ipi.InitProducerIdResult:
    """InitProducerId, asked again while the last transaction's markers are being written
    (CONCURRENT_TRANSACTIONS, retriable), within a generous deadline."""
    deadline = asyncio.get_running_loop().time() + 30
    while (answer := await run(ipi.run, b, req)).error_code == ConcurrentTransactionsError.code:
        assert asyncio.get_running_loop().time() < deadline, "the markers were never written"
        await asyncio.sleep(0.01)
    return answer


async def test_a_transaction_from_init_to_commit_and_the_fenced_producer(tmp_path: Path) -> None:
    """InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn and EndTxn at the coordinator; a
    second InitProducerId bumps the epoch and fences the first producer (PRODUCER_FENCED,
    which the Kafka codec writes as INVALID_PRODUCER_EPOCH to old versions)."""
    clock = ManualClock()
    async with running_broker(tmp_path, clock=clock) as b:
        await b.lead("t")
        await b.lead(OFFSETS_TOPIC, 1)
        none = await run(ipi.run, b, ipi.InitProducerId("tx", 60_000))
        assert (none.error_code, none.producer_id) == (NOT_COORDINATOR, -1)
        await txn_coordinator_for(b)
        first = await run(ipi.run, b, ipi.InitProducerId("tx", 60_000))
        assert first.error_code == 0 and first.producer_id >= 0
        pid, epoch = first.producer_id, first.producer_epoch
        add = apt.AddPartitionsToTxn((apt.TxnPartitions("tx", pid, epoch, (("t", (0,)),)),))
        added = await run(apt.run, b, add)
        assert added == apt.AddPartitionsToTxnResult(
            0, (apt.TxnPartitionsAdded("tx", (("t", ((0, 0),)),)),))  # fmt: skip
        offsets = await run(aot.run, b, aot.AddOffsetsToTxn("tx", pid, epoch, "g"))
        assert offsets == aot.AddOffsetsToTxnResult(0)
        assert await run(end_txn.run, b, end_txn.EndTxn("tx", pid, epoch, True)) == (
            end_txn.EndTxnResult(0))  # fmt: skip
        second = await init_once_markers_are_written(b, ipi.InitProducerId("tx", 60_000))
        assert second.error_code == 0 and second.producer_id == pid
        assert second.producer_epoch == epoch + 1
        fenced = await run(end_txn.run, b, end_txn.EndTxn("tx", pid, epoch, False))
        assert fenced.error_code == ProducerFencedError.code


async def test_an_idempotent_producer_whose_broker_claims_no_id_block_may_retry() -> None:
    """ZooKeeper out of reach: the claim's error (retriable) with its message, on both doors
    (the Kafka door once said UNKNOWN_SERVER_ERROR)."""

    class Unreachable:
        async def claim_block(self, broker_id: int) -> Any:
            raise CoordinatorLoadInProgressError("no producer id block: ZooKeeper is away")

    ctx = SimpleNamespace(authorizer=None, producer_ids=ProducerIdManager(1, Unreachable()))
    none = await ipi.run(ctx, SESSION, ipi.InitProducerId(None, 60_000))  # type: ignore[arg-type]
    assert (none.error_code, none.producer_id) == (CoordinatorLoadInProgressError.code, -1)
    assert none.error_message == "no producer id block: ZooKeeper is away"


async def test_init_producer_id_refusals(tmp_path: Path) -> None:
    authz = Authorizer(AclCache())
    async with running_broker(tmp_path, authorizer=authz) as b:
        idempotent, txn = ipi.InitProducerId(None, 60_000), ipi.InitProducerId("tx", 60_000)
        assert (await run(ipi.run, b, idempotent)).error_code == (
            ClusterAuthorizationFailedError.code)  # fmt: skip
        assert (await run(ipi.run, b, txn)).error_code == (
            TransactionalIdAuthorizationFailedError.code)  # fmt: skip
        grant(authz, AclOperation.WRITE, ResourceType.TOPIC, "t")  # KIP-679: enough
        assert (await run(ipi.run, b, idempotent)).error_code == 0


async def test_add_partitions_refusals_per_partition_and_for_a_brokers_batch(
    tmp_path: Path,
) -> None:
    """A producer's: refused topics TOPIC_AUTHORIZATION_FAILED, the others
    OPERATION_NOT_ATTEMPTED; a native verification without ClusterAction, each partition; a
    broker's batch (Kafka v4) without it, the whole request (as Kafka; the Kafka door answered
    each partition)."""
    clock = ManualClock()
    async with running_broker(tmp_path, clock=clock) as b:
        await b.lead("t")
        await b.lead("u")
        authz = Authorizer(AclCache())
        b.install_authorizer(authz)
        grant(authz, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, "tx")
        grant(authz, AclOperation.WRITE, ResourceType.TOPIC, "t")
        one = apt.TxnPartitions("tx", 1, 0, TOPICS)
        result = await run(apt.run, b, apt.AddPartitionsToTxn((one,)))
        assert result.transactions[0].topics == (
            ("t", ((0, OperationNotAttemptedError.code),)),
            ("u", ((0, TopicAuthorizationFailedError.code),)))  # fmt: skip
        verify = apt.TxnPartitions("tx", 1, 0, TOPICS, verify_only=True)
        result = await run(apt.run, b, apt.AddPartitionsToTxn((verify,)))
        cluster = ClusterAuthorizationFailedError.code
        assert result.transactions[0].topics == (("t", ((0, cluster),)), ("u", ((0, cluster),)))
        batch = await run(apt.run, b, apt.AddPartitionsToTxn((verify, verify), from_broker=True))
        assert batch == apt.AddPartitionsToTxnResult(cluster, ())
        grant(authz, AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, "kafka-cluster")
        batch = await run(apt.run, b, apt.AddPartitionsToTxn((verify,), from_broker=True))
        assert batch.error_code == 0
        assert batch.transactions[0].topics == (
            ("t", ((0, NOT_COORDINATOR),)), ("u", ((0, NOT_COORDINATOR),)))  # fmt: skip


async def test_add_offsets_and_end_txn_refusals(tmp_path: Path) -> None:
    authz = Authorizer(AclCache())
    async with running_broker(tmp_path, authorizer=authz) as b:
        offsets, end = aot.AddOffsetsToTxn("tx", 1, 0, "g"), end_txn.EndTxn("tx", 1, 0, True)
        txn_denied = TransactionalIdAuthorizationFailedError.code
        assert (await run(aot.run, b, offsets)).error_code == txn_denied
        assert (await run(end_txn.run, b, end)).error_code == txn_denied
        grant(authz, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, "tx")
        assert (await run(aot.run, b, offsets)).error_code == GroupAuthorizationFailedError.code
        assert (await run(end_txn.run, b, end)).error_code == NOT_COORDINATOR
        grant(authz, AclOperation.READ, ResourceType.GROUP, "g")
        assert (await run(aot.run, b, offsets)).error_code == NOT_COORDINATOR


async def test_txn_offset_commit_answers_in_the_order_asked_refused_topics_included(
    tmp_path: Path,
) -> None:
    """Write on the id, Read on the group, then Read on each topic: the allowed topics are
    committed, each topic answered where it was asked (the native door put refused ones
    last). "secret" does not exist: UNKNOWN_TOPIC_OR_PARTITION, before the coordinator is
    asked, but TOPIC_AUTHORIZATION_FAILED once Read on it is refused (checked first)."""
    clock = ManualClock()
    async with running_broker(tmp_path, clock=clock) as b:
        await b.lead("t")
        one = (toc.OffsetToCommit(0, 5, "m"),)
        ask = toc.TxnOffsetCommit("tx", "g", 1, 0, (("secret", one), ("t", one)))
        no = await run(toc.run, b, ask)
        assert no.topics == (("secret", ((0, UNKNOWN),)), ("t", ((0, NOT_COORDINATOR),)))
        await coordinate_groups(b, clock)
        authz = Authorizer(AclCache())
        b.install_authorizer(authz)
        denied = await run(toc.run, b, ask)
        txn_denied = TransactionalIdAuthorizationFailedError.code
        assert denied.topics == (("secret", ((0, txn_denied),)), ("t", ((0, txn_denied),)))
        grant(authz, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, "tx")
        group_denied = GroupAuthorizationFailedError.code
        assert (await run(toc.run, b, ask)).topics[1] == ("t", ((0, group_denied),))
        grant(authz, AclOperation.READ, ResourceType.GROUP, "g")
        grant(authz, AclOperation.READ, ResourceType.TOPIC, "t")
        result = await run(toc.run, b, ask)
        assert result.topics == (
            ("secret", ((0, TopicAuthorizationFailedError.code),)), ("t", ((0, 0),)))  # fmt: skip


async def test_txn_offset_commit_refuses_partitions_this_broker_does_not_know(
    tmp_path: Path,
) -> None:
    """A topic not in the metadata cache, or an index past the topic's partition count:
    UNKNOWN_TOPIC_OR_PARTITION for that partition, as Kafka answers (odradek committed it);
    the known partitions are committed."""
    clock = ManualClock()
    async with running_broker(tmp_path, clock=clock) as b:
        await b.lead("t", 2)
        await coordinate_groups(b, clock)
        o = toc.OffsetToCommit
        ask = toc.TxnOffsetCommit("tx", "g", 1, 0, (
            ("missing", (o(0, 123),)), ("t", (o(0, 5), o(2, 7), o(1, 6)))))  # fmt: skip
        result = await run(toc.run, b, ask)
        assert result.topics == (("missing", ((0, UNKNOWN),)),
                                 ("t", ((0, 0), (2, UNKNOWN), (1, 0))))  # fmt: skip
        group = b.ctx.groups.group_view("g")[1]
        assert group is not None and sorted(group.pending_txn[1]) == [("t", 0), ("t", 1)]
        only_unknown = toc.TxnOffsetCommit("tx", "g", 1, 0, (("missing", (o(0, 1), o(1, 2))),))
        assert (await run(toc.run, b, only_unknown)).topics == (
            ("missing", ((0, UNKNOWN), (1, UNKNOWN))),)  # fmt: skip


async def test_txn_offset_commit_refuses_a_metadata_over_kafkas_limit(tmp_path: Path) -> None:
    """A metadata over 4096 characters (Kafka's offset.metadata.max.bytes) is
    OFFSET_METADATA_TOO_LARGE for its partition, as Kafka answers, and is not written (it
    would not fit OffsetCommitValue's int16-length string); the others are committed."""
    clock = ManualClock()
    async with running_broker(tmp_path, clock=clock) as b:
        await b.lead("t", 2)
        await coordinate_groups(b, clock)
        o = toc.OffsetToCommit
        ask = toc.TxnOffsetCommit("tx", "g", 1, 0, (
            ("t", (o(0, 5, "x" * 4096), o(1, 6, "y" * 40_000))),))  # fmt: skip
        result = await run(toc.run, b, ask)
        assert result.topics == (("t", ((0, 0), (1, OffsetMetadataTooLargeError.code))),)
        group = b.ctx.groups.group_view("g")[1]
        assert group is not None and sorted(group.pending_txn[1]) == [("t", 0)]


async def test_write_txn_markers_needs_alter_or_cluster_action_and_answers_each_partition(
    tmp_path: Path,
) -> None:
    async with running_broker(tmp_path) as b:
        await b.lead("t", 2)
        marker = wtm.Marker(7, 0, False, 0, (("t", (0, 1)), ("gone", (0,))))
        authz = Authorizer(AclCache())
        b.install_authorizer(authz)
        refused = await run(wtm.run, b, wtm.WriteTxnMarkers((marker,)))
        cluster = ClusterAuthorizationFailedError.code
        assert refused.markers == (wtm.MarkerWritten(7, (
            ("t", ((0, cluster), (1, cluster))), ("gone", ((0, cluster),)))),)  # fmt: skip
        grant(authz, AclOperation.ALTER, ResourceType.CLUSTER, "kafka-cluster")  # an admin
        (written,) = (await run(wtm.run, b, wtm.WriteTxnMarkers((marker,)))).markers
        assert written.producer_id == 7
        assert written.topics[0] == ("t", ((0, 0), (1, 0)))
        assert written.topics[1][0] == "gone" and written.topics[1][1][0][1] != 0


async def test_list_transactions_shows_only_describable_ids(tmp_path: Path) -> None:
    clock = ManualClock()
    async with running_broker(tmp_path, clock=clock) as b:
        # a broker coordinating no transactional id lists none
        assert await run(lt.run, b, lt.ListTransactions()) == lt.ListTransactionsResult(0)
        await txn_coordinator_for(b)
        for tid in ("tx", "secret"):
            assert (await run(ipi.run, b, ipi.InitProducerId(tid, 60_000))).error_code == 0
        authz = Authorizer(AclCache())
        b.install_authorizer(authz)
        grant(authz, AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, "tx")
        result = await run(lt.run, b, lt.ListTransactions(("Empty", "Bogus")))
        assert result.error_code == 0 and result.unknown_states == ("Bogus",)
        assert [(t.transactional_id, t.state) for t in result.transactions] == [("tx", "Empty")]
        # KIP-1152: the pattern must match the whole id; one that does not compile is refused
        for pattern, listed in (("t.", ["tx"]), ("t", []), ("", ["tx"]), (".*x", ["tx"])):
            result = await run(lt.run, b, lt.ListTransactions(id_pattern=pattern))
            assert [t.transactional_id for t in result.transactions] == listed, pattern
        # Kafka's RE2/J refuses what a backtracking engine takes: a backreference, look-around
        for pattern in ("tx(", r"(t)\1", "t(?=x)"):
            bad = await run(lt.run, b, lt.ListTransactions(id_pattern=pattern))
            assert bad == lt.ListTransactionsResult(InvalidRegularExpressionError.code), pattern


async def test_describe_producers_reads_any_replica_and_refuses_per_topic(
    tmp_path: Path,
) -> None:
    """A follower's replica is described too, as Kafka does (the native door said
    NOT_LEADER_OR_FOLLOWER); a topic without Read answers TOPIC_AUTHORIZATION_FAILED."""
    async with running_broker(tmp_path) as b:
        await b.lead("t")
        conn = await b.connect()
        pid = (await conn.send(InitProducerIdRequest(None, 60_000))).producer_id
        batch = build_batch_from_values([b"v"], TS_MS, producer_id=pid, producer_epoch=0,
                                        base_sequence=0)  # fmt: skip
        assert (await conn.send(produce("t", 0, batch))).topics[0].partitions[0].error_code == 0
        b.leader_epochs[("t", 0)] = 1
        await b.lead("t", leader=2)  # this broker follows now
        ask = dp.DescribeProducers((("t", (0, 9)),))
        ((_, (followed, missing)),) = (await run(dp.run, b, ask)).topics
        assert followed.error_code == 0
        assert [(r.producer_id, r.producer_epoch, r.last_sequence)
                for r in followed.producers] == [(pid, 0, 0)]  # fmt: skip
        assert missing.error_code != 0 and missing.error_message
        b.install_authorizer(Authorizer(AclCache()))
        ((_, (refused, _)),) = (await run(dp.run, b, ask)).topics
        assert refused.error_code == TopicAuthorizationFailedError.code and refused.error_message
