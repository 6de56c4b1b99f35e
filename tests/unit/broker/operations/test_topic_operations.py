"""The topic APIs' operations (broker/operations/), each tested once, whichever door serves it:
called directly with a `Session` on an in-process broker (tests/unit/broker/harness.py), whose
fake topic store plays ZooKeeper and, where a test says so, the controller. The doors' codecs
are tested apart (test_topic_codecs.py); each door end to end in tests/unit/broker/
test_kafka_admin_configs.py and tests/integration.
"""

from __future__ import annotations

import dataclasses
import inspect
import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from broker.config import BrokerConfig
from broker.operations import (
    alter_partition_reassignments,
    create_partitions,
    create_topics,
    delete_records,
    delete_topics,
    elect_leaders,
    list_partition_reassignments,
)
from broker.security.authorizer import AclCache, Authorizer
from broker.session import Session
from coordinator.group.records import OFFSETS_TOPIC
from protocol.acl import AclOperation, ResourceType
from protocol.api.admin import SOURCE_DEFAULT_CONFIG, SOURCE_TOPIC_CONFIG
from protocol.api.controller import StopReplicaRequest, TopicPartitionRef, UpdateMetadataRequest
from protocol.api.metadata import BrokerInfo
from protocol.errors import (
    ClusterAuthorizationFailedError,
    ElectionNotNeededError,
    InvalidConfigError,
    InvalidPartitionsError,
    InvalidReplicaAssignmentError,
    InvalidReplicationFactorError,
    InvalidRequestError,
    InvalidTopicError,
    NotControllerError,
    OffsetOutOfRangeError,
    PreferredLeaderNotAvailableError,
    RequestTimedOutError,
    TopicAlreadyExistsError,
    TopicAuthorizationFailedError,
    UnknownTopicIdError,
    UnknownTopicOrPartitionError,
)
from protocol.principal import ANONYMOUS, KafkaPrincipal
from protocol.topic_ids import encode_topic_id, new_topic_id
from tests.unit.broker.harness import BROKER_ID, BrokerHarness, FakeTopicStore, running_broker
from tests.unit.broker.helpers import batch, produce
from tests.unit.broker.test_acl_rules import grant
from tests.unit.broker.test_kafka_admin_logs import produced

ALICE = KafkaPrincipal.user("alice")
SESSION = Session(principal=ALICE, peer_host="127.0.0.1", peer_port=5555)
LIVE = [BrokerInfo(BROKER_ID, "127.0.0.1", 1)]
ct, dt, cp, dr = create_topics, delete_topics, create_partitions, delete_records
el, apr, lpr = elect_leaders, alter_partition_reassignments, list_partition_reassignments

# For test_table.py: a request model per API, and what its operation needs on the context.
SAMPLES: dict[str, Any] = {
    "CreateTopics": ct.CreateTopics((ct.NewTopic("t", 1, 1), ct.NewTopic("u", 1, 1)), 10,
                                    validate_only=True, include_configs=True),
    "DeleteTopics": dt.DeleteTopics((dt.TopicRef("t"), dt.TopicRef(None, new_topic_id()),
                                     dt.TopicRef("u")), 10),
    "CreatePartitions": cp.CreatePartitions((cp.NewPartitions("t", 2),), 10),
    "DeleteRecords": dr.DeleteRecords((dr.RecordsTopic("t", ((0, 1),)),
                                       dr.RecordsTopic("u", ((0, 1),))), 10),
    "ElectLeaders": el.ElectLeaders((("t", 0),), 10),
    "AlterPartitionReassignments": apr.AlterPartitionReassignments(
        (apr.Target("t", 0, (1,)),), 10),
    "ListPartitionReassignments": lpr.ListPartitionReassignments(None),
}  # fmt: skip
_CONFIG = BrokerConfig(broker_id=BROKER_ID, log_dir=Path("/nonexistent"))


async def _gone(name: str) -> None:
    raise UnknownTopicOrPartitionError(f"topic {name} does not exist")


async def _no_partitions(*_: Any) -> dict[int, list[int]]:
    raise UnknownTopicOrPartitionError("no topic")


def _not_led(topic: str, partition: int) -> Any:
    raise UnknownTopicOrPartitionError(f"{topic}-{partition} is not led here")


_METADATA = SimpleNamespace(
    live_broker_ids=lambda: [BROKER_ID], topic_id=lambda name: None,
    topic_by_id=lambda tid: "v", has_topic=lambda name: True,
)  # fmt: skip
CONTEXTS: dict[str, Any] = {
    "CreateTopics": {"config": _CONFIG, "metadata": _METADATA,
                     "replicas": SimpleNamespace(default_log_config=_CONFIG.default_log_config())},
    "DeleteTopics": {"metadata": _METADATA, "topics": SimpleNamespace(delete_topic=_gone)},
    "CreatePartitions": {"metadata": _METADATA,
                         "topics": SimpleNamespace(add_partitions=_no_partitions)},
    "DeleteRecords": {"metadata": _METADATA, "replicas": SimpleNamespace(leader=_not_led)},
    # ElectLeaders and the reassignments: the harness's broker is not the controller,
    # NOT_CONTROLLER once authorized
}  # fmt: skip


async def run(operation: Any, b: BrokerHarness, request: Any, session: Session = SESSION) -> Any:
    result = operation(b.ctx, session, request)
    return await result if inspect.isawaitable(result) else result


def authorizing(b: BrokerHarness) -> Authorizer:
    """A real Authorizer on the broker, letting the harness (anonymous) play the controller."""
    authz = Authorizer(AclCache())
    b.install_authorizer(authz)
    grant(authz, AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, principal=ANONYMOUS)
    return authz


def acting_controller(b: BrokerHarness) -> None:
    """Make the fake ZooKeeper call back into the broker as the controller would."""

    async def on_create(name: str, partitions: int) -> None:
        await b.lead(name, partitions)

    async def on_delete(name: str) -> None:
        conn = await b.connect()
        refs = [TopicPartitionRef(name, p) for p in sorted(b.ctx.metadata.topics.get(name, {}))]
        await conn.send(StopReplicaRequest(0, b.controller_epoch, True, refs))
        await conn.send(UpdateMetadataRequest(0, b.controller_epoch, [], LIVE, [name]))

    async def on_add_partitions(topic: str, added: dict[int, list[int]]) -> None:
        await b.lead(topic, partitions=max(added) + 1)

    b.topics.on_create = on_create
    b.topics.on_delete = on_delete
    b.topics.on_add_partitions = on_add_partitions


async def give_id(b: BrokerHarness, name: str) -> uuid.UUID:
    """Tell the metadata cache that topic `name` (one partition, led here) has a fresh id."""
    topic_id = new_topic_id()
    state = dataclasses.replace(b.state(name, 0), topic_id=encode_topic_id(topic_id))
    conn = await b.connect()
    um = await conn.send(UpdateMetadataRequest(0, b.controller_epoch, [state], LIVE, []))
    assert um.error_code == 0
    return topic_id


def codes(results: Any) -> dict[str | None, int]:
    return {r.name: r.error_code for r in results}


# ----- CreateTopics and DeleteTopics -----------------------------------------------------------


async def test_create_and_delete_topics(tmp_path: Path) -> None:
    store = FakeTopicStore()
    async with running_broker(tmp_path, topics=store) as b:
        await b.lead("existing")
        acting_controller(b)
        store.configs["existing"] = {}
        topics = (
            ct.NewTopic("new", 2, 1, configs=(("retention.ms", "1000"),)),
            ct.NewTopic("existing", 1, 1),
            ct.NewTopic("bad-config", 1, 1, configs=(("retention.ms", "soon"),)),
            ct.NewTopic("too-many-replicas", 1, 3),
            ct.NewTopic("bad/name", 1, 1),
            ct.NewTopic("manual", 1, 1, assignments=((0, (BROKER_ID,)),)),
            ct.NewTopic("none", 0, 1),
        )
        result = await run(ct.run, b, ct.CreateTopics(topics, 5000))
        assert [t.name for t in result.topics] == [t.name for t in topics]  # the order asked
        assert codes(result.topics) == {
            "new": 0,
            "existing": TopicAlreadyExistsError.code,
            "bad-config": InvalidConfigError.code,
            "too-many-replicas": InvalidReplicationFactorError.code,
            "bad/name": InvalidTopicError.code,
            "manual": InvalidRequestError.code,  # counts given with an assignment
            "none": InvalidPartitionsError.code,
        }
        new = result.topics[0]
        assert (new.num_partitions, new.replication_factor) == (2, 1)
        assert new.topic_id == b.ctx.metadata.topic_id("new")  # none here: the fake has none
        assert new.configs is None  # not asked
        assert {(t.num_partitions, t.replication_factor) for t in result.topics[1:]} == {(-1, -1)}
        assert [c[0] for c in store.created] == ["new"]
        assert (tmp_path / "new-0").is_dir() and (tmp_path / "new-1").is_dir()
        checked = ct.CreateTopics((ct.NewTopic("checked", -1, -1),), 5000, validate_only=True)
        only = (await run(ct.run, b, checked)).topics[0]
        assert (only.error_code, only.num_partitions, only.topic_id) == (0, 1, None)
        assert "checked" not in store.configs
        assigned = (ct.NewTopic("by-hand", -1, -1, ((1, (BROKER_ID,)), (0, (BROKER_ID,)))),
                    ct.NewTopic("stranger", -1, -1, ((0, (7,)),)))  # fmt: skip
        got = (await run(ct.run, b, ct.CreateTopics(assigned, 5000, validate_only=True))).topics
        assert [(t.error_code, t.num_partitions, t.replication_factor) for t in got] == [
            (0, 2, 1),
            (InvalidReplicaAssignmentError.code, -1, -1),
        ]
        assert "by-hand" not in store.configs
        # a created topic takes produce at once, with its own config
        conn = await b.connect()
        assert (await conn.send(produce("new", 1, batch(2)))).topics[0].partitions[
            0
        ].error_code == 0
        assert b.log_manager.get("new", 0).config.retention_ms == 1000

        new_id = await give_id(b, "new")
        unknown_id = new_topic_id()
        asked = (dt.TopicRef("new"), dt.TopicRef("never"), dt.TopicRef(None, unknown_id))
        gone = await run(dt.run, b, dt.DeleteTopics(asked, 5000))
        assert [(r.name, r.topic_id, r.error_code) for r in gone.responses] == [
            ("new", new_id, 0),
            ("never", None, UnknownTopicOrPartitionError.code),
            (None, unknown_id, UnknownTopicIdError.code),
        ]
        assert not (tmp_path / "new-0").exists()
        after = await conn.send(produce("new", 1, batch(2)))
        assert after.topics[0].partitions[0].error_code == UnknownTopicOrPartitionError.code


async def test_create_times_out_without_a_controller(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as b:
        await b.lead("x")  # tells the cache broker 1 is live
        slow = ct.CreateTopics((ct.NewTopic("slow", 1, 1),), 50)
        result = await run(ct.run, b, slow)
        assert result.topics[0].error_code == RequestTimedOutError.code
        assert b.topics.created == [("slow", 1, 1)]


async def test_create_topics_acls_and_the_new_topics_configs(tmp_path: Path) -> None:
    async with running_broker(tmp_path, topic_defaults={"segment.bytes": "65536"}) as b:
        await b.lead("x")
        acting_controller(b)
        authz = authorizing(b)
        grant(authz, AclOperation.CREATE, ResourceType.TOPIC, "a")
        grant(authz, AclOperation.CREATE, ResourceType.TOPIC, "b")
        grant(authz, AclOperation.DESCRIBE_CONFIGS, ResourceType.TOPIC, "a")
        asked = tuple(ct.NewTopic(n, 1, 1, configs=(("retention.ms", "5"),)) for n in "abc")
        result = await run(ct.run, b, ct.CreateTopics(asked, 5000, include_configs=True))
        a, b_, c = result.topics
        assert codes(result.topics) == {"a": 0, "b": 0, "c": TopicAuthorizationFailedError.code}
        assert a.config_error_code == 0 and a.configs is not None
        sources = {e.name: (e.value, e.source) for e in a.configs}
        assert sources["retention.ms"] == ("5", SOURCE_TOPIC_CONFIG)
        assert sources["cleanup.policy"] == ("delete", SOURCE_DEFAULT_CONFIG)
        # created, but its configs are not the principal's to see
        assert (b_.configs, b_.config_error_code) == (None, TopicAuthorizationFailedError.code)
        assert (c.configs, c.num_partitions) == (None, -1)
        # Create on the cluster allows every topic
        grant(authz, AclOperation.CREATE, ResourceType.CLUSTER)
        d = await run(ct.run, b, ct.CreateTopics((ct.NewTopic("d", 1, 1),), 5000))
        assert d.topics[0].error_code == 0


async def test_delete_topics_acls_by_name_and_by_id(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as b:
        await b.lead("x")
        for name in ("mine", "theirs", "hidden"):
            await b.topics.create_topic(name, 1, 1, {}, [BROKER_ID])
            await b.lead(name)
        ids = {name: await give_id(b, name) for name in ("theirs", "hidden")}
        acting_controller(b)
        authz = authorizing(b)
        grant(authz, AclOperation.DELETE, ResourceType.TOPIC, "mine")
        grant(authz, AclOperation.DESCRIBE, ResourceType.TOPIC, "theirs")
        theirs_id, hidden_id = ids["theirs"], ids["hidden"]
        asked = (dt.TopicRef(None, hidden_id), dt.TopicRef("mine"), dt.TopicRef(None, theirs_id))
        result = await run(dt.run, b, dt.DeleteTopics(asked, 5000))
        assert [(r.name, r.error_code) for r in result.responses] == [
            (None, TopicAuthorizationFailedError.code),  # named by id, not describable: no name
            ("mine", 0),
            ("theirs", TopicAuthorizationFailedError.code),
        ]
        assert result.responses[2].topic_id == theirs_id
        assert b.topics.deleted == ["mine"]


# ----- CreatePartitions -----------------------------------------------------------------------


async def test_create_partitions_refusals(tmp_path: Path) -> None:
    store = FakeTopicStore(assignments={"t": {0: [BROKER_ID], 1: [BROKER_ID]}})
    async with running_broker(tmp_path, topics=store) as b:
        await b.lead("t", partitions=2)
        cases = [
            (cp.NewPartitions("t", 2), InvalidPartitionsError.code,
             "topic already has 2 partitions"),
            (cp.NewPartitions("t", 1), InvalidPartitionsError.code, None),
            (cp.NewPartitions("t", 4, ((1,),)), InvalidReplicaAssignmentError.code, None),
            (cp.NewPartitions("t", 3, ((1, 1),)), InvalidReplicaAssignmentError.code, None),
            (cp.NewPartitions("t", 3, ((7,),)), InvalidReplicaAssignmentError.code,
             "unknown broker(s) in replica assignment: 7"),
            (cp.NewPartitions("nope", 3), UnknownTopicOrPartitionError.code, None),
        ]  # fmt: skip
        for topic, code, message in cases:
            result = await run(cp.run, b, cp.CreatePartitions((topic,), 1000))
            assert result.results[0].error_code == code, topic
            if message is not None:
                assert result.results[0].error_message == message
        twice = (cp.NewPartitions("t", 3), cp.NewPartitions("t", 4))
        result = await run(cp.run, b, cp.CreatePartitions(twice, 1000))
        assert [r.error_code for r in result.results] == [InvalidRequestError.code] * 2
        authorizing(b)
        denied = await run(cp.run, b, cp.CreatePartitions((cp.NewPartitions("t", 3),), 1000))
        assert denied.results[0].error_code == TopicAuthorizationFailedError.code
        assert store.assignments["t"] == {0: [1], 1: [1]}  # nothing changed


async def test_create_partitions_validate_only_timeout_and_leaders(tmp_path: Path) -> None:
    store = FakeTopicStore(assignments={"t": {0: [BROKER_ID]}})
    async with running_broker(tmp_path, topics=store) as b:
        await b.lead("t")
        checked = cp.CreatePartitions((cp.NewPartitions("t", 2, ((1,),)),), 1000, True)
        assert (await run(cp.run, b, checked)).results[0].error_code == 0
        assert store.assignments["t"] == {0: [1]}
        # no controller leads the new partition: the znode is written, the wait times out
        slow = cp.CreatePartitions((cp.NewPartitions("t", 2),), 50)
        assert (await run(cp.run, b, slow)).results[0].error_code == RequestTimedOutError.code
        assert store.assignments["t"] == {0: [1], 1: [1]}
        acting_controller(b)
        led = await run(cp.run, b, cp.CreatePartitions((cp.NewPartitions("t", 3),), 5000))
        assert led.results == (cp.PartitionsCreated("t", 0),)
        assert sorted(b.ctx.metadata.topics["t"]) == [0, 1, 2]


# ----- DeleteRecords ----------------------------------------------------------------------------


async def test_delete_records_answers_each_partition_in_the_order_asked(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as b:
        await b.lead("t", partitions=2)
        await produced(b, "t", 3)  # offsets 0..29 in partition 0
        await produced(b, "t", 1, partition=1)
        asked = (
            dr.RecordsTopic("t", ((1, -1), (0, 13))),  # -1: the high watermark
            dr.RecordsTopic("nope", ((0, 0),)),
            dr.RecordsTopic(OFFSETS_TOPIC, ((0, 0),)),
        )
        result = await run(dr.run, b, dr.DeleteRecords(asked, 5000))
        assert [(t.name, [(p.partition, p.error_code, p.low_watermark) for p in t.partitions])
                for t in result.topics] == [
            ("t", [(1, 0, 10), (0, 0, 13)]),
            ("nope", [(0, UnknownTopicOrPartitionError.code, -1)]),
            (OFFSETS_TOPIC, [(0, InvalidTopicError.code, -1)]),
        ]  # fmt: skip
        assert b.ctx.replicas.partitions[("t", 0)].log.log_start_offset == 13
        above = await run(dr.run, b, dr.DeleteRecords((dr.RecordsTopic("t", ((0, 31),)),), 1000))
        assert above.topics[0].partitions[0].error_code == OffsetOutOfRangeError.code
        # at or below the log start: a success that changes nothing
        again = await run(dr.run, b, dr.DeleteRecords((dr.RecordsTopic("t", ((0, 5),)),), 0))
        assert again.topics[0].partitions[0] == dr.PartitionDeleted(0, 13, 0)
        authorizing(b)
        denied = await run(dr.run, b, dr.DeleteRecords((dr.RecordsTopic("t", ((0, 20),)),), 0))
        assert denied.topics[0].partitions[0].error_code == TopicAuthorizationFailedError.code
        assert b.ctx.replicas.partitions[("t", 0)].log.log_start_offset == 13


# ----- ElectLeaders and the reassignments (the controller answers) ------------------------------


def as_controller(monkeypatch: pytest.MonkeyPatch, module: Any, **answers: Any) -> None:
    """This broker is the controller, and the controller's work (`answers`: a function of
    coordinator/controller/admin.py by name -> what it returns) answers as given."""
    monkeypatch.setattr(module, "active_controller", lambda ctx: object())
    for name, answer in answers.items():
        monkeypatch.setattr(module, name, answer)


async def test_controller_apis_refuse_without_their_acl_and_off_the_controller(
    tmp_path: Path,
) -> None:
    async with running_broker(tmp_path) as b:
        requests = [(el.run, SAMPLES["ElectLeaders"]),
                    (apr.run, SAMPLES["AlterPartitionReassignments"]),
                    (lpr.run, SAMPLES["ListPartitionReassignments"])]  # fmt: skip
        for op, request in requests:
            assert (await run(op, b, request)).error_code == NotControllerError.code
        authorizing(b)
        for op, request in requests:
            assert (await run(op, b, request)).error_code == ClusterAuthorizationFailedError.code
        elected = await run(el.run, b, SAMPLES["ElectLeaders"])  # every named partition too
        assert elected.results == (el.Elected("t", 0, ClusterAuthorizationFailedError.code),)


async def test_elect_leaders_leaves_out_what_needed_no_election_only_when_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[Any] = []
    outcomes = {("u", 0): (PreferredLeaderNotAvailableError.code, "replica 3 is down"),
                ("t", 1): (ElectionNotNeededError.code, None), ("t", 0): (0, None)}  # fmt: skip

    async def call(controller: Any, work: Any, timeout_ms: int) -> Any:
        asked.append(timeout_ms)
        return outcomes

    as_controller(monkeypatch, el, call=call)
    async with running_broker(tmp_path) as b:
        named = await run(el.run, b, el.ElectLeaders((("t", 0), ("t", 1), ("u", 0)), 1500))
        assert named.error_code == 0 and asked == [1500]
        assert [(r.topic, r.partition, r.error_code) for r in named.results] == [
            ("t", 0, 0), ("t", 1, ElectionNotNeededError.code),
            ("u", 0, PreferredLeaderNotAvailableError.code),
        ]  # fmt: skip
        every = await run(el.run, b, el.ElectLeaders(None, 1500))
        assert len(every.results) == 3  # the native door lists them all
        kafkas = await run(el.run, b, el.ElectLeaders(None, 1500, leave_out_not_needed=True))
        assert [(r.topic, r.partition) for r in kafkas.results] == [("t", 0), ("u", 0)]


async def test_unclean_election_needs_no_election_where_a_leader_lives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    as_controller(monkeypatch, el)
    async with running_broker(tmp_path) as b:
        await b.lead("t")
        await b.lead("gone", leader=-1)
        asked = (("t", 0), ("t", 5), ("gone", 0))
        result = await run(el.run, b, el.ElectLeaders(asked, 1000, el.UNCLEAN))
        assert {(r.topic, r.partition): r.error_code for r in result.results} == {
            ("t", 0): ElectionNotNeededError.code,
            ("t", 5): UnknownTopicOrPartitionError.code,
            ("gone", 0): InvalidRequestError.code,
        }
        assert "unclean" in (result.results[0].error_message or "")


async def test_reassignments_are_submitted_listed_and_a_cancel_refused_clearly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    submitted: list[Any] = []
    ongoing = [(("t", 1), [1, 2, 3], [3], [1])]

    async def call(controller: Any, work: Any, timeout_ms: int) -> Any:
        return await work()

    async def submit(controller: Any, targets: dict[Any, list[int]]) -> Any:
        submitted.append(targets)
        return {tp: (0, None) for tp in targets}

    def listed(controller: Any, tps: Any) -> Any:
        return [o for o in ongoing if tps is None or o[0] in tps]

    as_controller(monkeypatch, apr, call=call, submit_reassignments=submit,
                  list_reassignments=listed)  # fmt: skip
    as_controller(monkeypatch, lpr, list_reassignments=listed)
    async with running_broker(tmp_path) as b:
        await b.lead("t", partitions=3)
        targets = (apr.Target("t", 2, None), apr.Target("t", 0, (1, 2)),
                   apr.Target("t", 1, None), apr.Target("t", 9, None))  # fmt: skip
        result = await run(apr.run, b, apr.AlterPartitionReassignments(targets, 2000))
        assert result.error_code == 0
        got = [(r.partition, r.error_code) for r in result.results]  # in the order asked
        assert got == [(2, apr.NoReassignmentInProgressError.code), (0, 0),
                       (1, InvalidRequestError.code),
                       (9, UnknownTopicOrPartitionError.code)]  # fmt: skip
        assert "cancelling" in (result.results[2].error_message or "")
        assert submitted == [{("t", 0): [1, 2]}]
        listing = await run(lpr.run, b, lpr.ListPartitionReassignments(None))
        assert listing.reassignments == (lpr.Ongoing("t", 1, (1, 2, 3), (3,), (1,)),)
        none = await run(lpr.run, b, lpr.ListPartitionReassignments((("t", 0),)))
        assert none.reassignments == ()
