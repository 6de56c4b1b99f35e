"""Errors that say their cause (client/explain.py): the sentences, from plain metadata values.

The same sentences reach users through the producer's failed sends and `odradek topics
describe`; tests/integration/test_explained_errors.py checks them there, on a real cluster.
"""

from __future__ import annotations

import pytest

from client.cluster import ClusterMetadata
from client.explain import (
    client_principal,
    fetch_refusal,
    leaderless_reason,
    produce_refusal,
    waiting_reasons,
    why_no_leader,
)
from client.subscription import SubscriptionState
from client.types import TopicPartition, partitions_words
from protocol.api.metadata import (
    BrokerInfo,
    MetadataResponse,
    PartitionMetadata,
    TopicMetadata,
)
from protocol.errors import (
    LeaderNotAvailableError,
    NotEnoughReplicasAfterAppendError,
    NotEnoughReplicasError,
    NotLeaderForPartitionError,
    OffsetOutOfRangeError,
    TopicAuthorizationFailedError,
    UsageError,
)
from transport.security import SecurityConfig


def test_every_replica_down_names_them_and_the_unclean_setting() -> None:
    assert why_no_leader("chaos-0", [1, 2], [1], live={3}, unclean=False) == (
        "partition chaos-0 has no leader: its replicas 1,2 are down and unclean election is off"
    )
    assert why_no_leader("t-3", [2], [2], live={1}, unclean=True) == (
        "partition t-3 has no leader: its replica 2 is down and unclean election is on"
    )
    assert why_no_leader("t-3", [2, 1], [2], live=set()) == (
        "partition t-3 has no leader: its replicas 2,1 are down"  # unclean: not known
    )


def test_live_replicas_out_of_sync_wait_for_the_in_sync_one() -> None:
    off = why_no_leader("t-0", [1, 2, 3], [1], live={2, 3}, unclean=False)
    assert off == (
        "partition t-0 has no leader: its replica 1 is down and replicas 2,3 are up but out of "
        "sync (ISR [1]), and unclean election is off"
    )
    on = why_no_leader("t-0", [1, 2], [1], live={2}, unclean=True)
    assert "replica 2 is up but out of sync (ISR [1]); unclean election is on" in on


def test_an_in_sync_replica_up_means_an_election_is_under_way() -> None:
    assert why_no_leader("t-1", [1, 2], [1, 2], live={1, 2}) == (
        "partition t-1 has no leader: an election is under way: replicas 1,2 are up"
    )
    assert why_no_leader("t-1", [1, 2], [1, 2], live={2}, unclean=False) == (
        "partition t-1 has no leader: an election is under way: replica 2 is up (replica 1 is down)"
    )


def _meta(leader: int, live: list[int], replicas: list[int], isr: list[int]) -> ClusterMetadata:
    code = 0 if leader in live else LeaderNotAvailableError.code
    part = PartitionMetadata(code, 0, leader, 3, replicas, isr, [])
    brokers = [BrokerInfo(b, "127.0.0.1", 9000 + b) for b in live]
    return ClusterMetadata.from_response(
        MetadataResponse(brokers, "c", live[0], [TopicMetadata(0, "chaos", False, [part])])
    )


def test_leaderless_reason_reads_a_metadata_snapshot() -> None:
    led = _meta(leader=1, live=[1, 3], replicas=[1, 2], isr=[1])
    assert leaderless_reason(led, "chaos", 0) is None
    # the metadata still names a leader that is no longer among the live brokers
    stale = _meta(leader=2, live=[3], replicas=[1, 2], isr=[2])
    assert leaderless_reason(stale, "chaos", 0, unclean=False) == (
        "partition chaos-0 has no leader: its replicas 1,2 are down and unclean election is off"
    )
    assert leaderless_reason(led, "chaos", 5) == (
        "partition chaos-5 does not exist ('chaos' has 1)"
    )
    assert leaderless_reason(led, "other", 0) == "topic 'other' is not in the metadata"


def test_a_produce_refusal_keeps_the_brokers_words_and_says_what_was_refused() -> None:
    broker_says = "chaos-1: ISR [3] is below min.insync.replicas 2"
    assert produce_refusal(NotEnoughReplicasError.code, broker_says, "chaos-1") == (
        "acks=all refused: chaos-1: ISR [3] is below min.insync.replicas 2"
    )
    assert produce_refusal(NotEnoughReplicasError.code, None, "chaos-1").startswith(
        "acks=all refused: chaos-1: fewer in-sync replicas"
    )
    assert produce_refusal(NotEnoughReplicasAfterAppendError.code, None, "c-0").startswith(
        "acks=all not confirmed: c-0"
    )
    said = "broker 2 does not lead chaos-1"
    assert produce_refusal(NotLeaderForPartitionError.code, said, "chaos-1") == said
    assert produce_refusal(NotLeaderForPartitionError.code, None, "chaos-1") == "chaos-1"


def test_waiting_reasons_name_the_missing_leader_else_the_last_error() -> None:
    chaos0 = TopicPartition("chaos", 0)
    offline = _meta(leader=-1, live=[3], replicas=[1, 2], isr=[1])
    refused = "NOT_ENOUGH_REPLICAS: acks=all refused: chaos-0: ISR [1] is below ..."
    assert waiting_reasons(offline, [chaos0], {chaos0: refused}) == {
        chaos0: "partition chaos-0 has no leader: its replicas 1,2 are down"
    }  # the cause first: the error met is only its symptom
    led = _meta(leader=1, live=[1, 3], replicas=[1, 2], isr=[1])
    assert waiting_reasons(led, [chaos0], {chaos0: refused}) == {chaos0: refused}
    assert waiting_reasons(led, [chaos0], {}) == {}  # led, no error: nothing to wait for
    # a topic whose metadata has not come yet is being looked up, not waited on
    assert waiting_reasons(led, [TopicPartition("other", 0)], {}) == {}


def test_a_refused_fetch_says_who_may_not_read_which_partition() -> None:
    """A Fetch answer carries no message: the client says who was refused what, in words (it
    said "TopicPartition(topic='orders.created', partition=0): fetch at offset 0 failed")."""
    tp = TopicPartition("orders.created", 0)
    alice = SecurityConfig("SASL_PLAINTEXT", sasl_mechanism="PLAIN", sasl_plain_username="alice",
                           sasl_plain_password="x")  # fmt: skip
    who = client_principal(alice)
    assert str(TopicAuthorizationFailedError(fetch_refusal(
        TopicAuthorizationFailedError, who, tp, "fetch at offset 0"
    ))) == (
        "TOPIC_AUTHORIZATION_FAILED: user alice may not Read topic orders.created "
        "(partition 0, fetch at offset 0)"
    )  # fmt: skip
    assert client_principal(SecurityConfig()) == "user ANONYMOUS"
    assert fetch_refusal(OffsetOutOfRangeError, who, tp, "offset 9 is out of range") == (
        "topic orders.created partition 0: offset 9 is out of range"
    )


def test_client_errors_name_partitions_in_words_not_as_tuples() -> None:
    subs = SubscriptionState()
    subs.assign([TopicPartition("orders", 0)])
    with pytest.raises(UsageError) as negative:
        subs.seek(TopicPartition("orders", 0), -1)
    assert negative.value.message == "cannot seek topic orders partition 0 to negative offset -1"
    with pytest.raises(UsageError) as unassigned:
        subs.seek(TopicPartition("audit", 2), 1)
    assert unassigned.value.message == "topic audit partition 2 is not assigned to this consumer"
    many = [TopicPartition("orders", 1), TopicPartition("audit", 3), TopicPartition("orders", 0)]
    assert partitions_words(many) == "topic audit partition 3; topic orders partitions 0, 1"
