"""The API table: one row per API, naming its operation (broker/operations/), its ACL rule
(broker/security/rules.py's `RULES` row, which the operation checks), and for each door that
serves it the versions served and the codec (broker/codecs/). The doors (broker/doors.py)
look every request up here: an API not in the table, or not for that door, is not served.

A door's handler for a row (`native_handler`, `kafka_handler`) is the server's usual
`handle(ctx, request, session)`: decode with the codec, run the operation, encode its result
(at once, or when the awaitable the operation returned completes).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from broker.codecs import Codec
from broker.codecs.kafka import acls as kafka_acls
from broker.codecs.kafka import configs as kafka_configs
from broker.codecs.kafka import groups as kafka_groups
from broker.codecs.kafka import metadata as kafka_metadata
from broker.codecs.kafka import partition_reads as kafka_reads
from broker.codecs.kafka import quotas as kafka_quotas
from broker.codecs.kafka import records as kafka_records
from broker.codecs.kafka import sasl as kafka_sasl
from broker.codecs.kafka import scram as kafka_scram
from broker.codecs.kafka import share as kafka_share
from broker.codecs.kafka import share_offsets as kafka_share_offsets
from broker.codecs.kafka import share_state as kafka_share_state
from broker.codecs.kafka import topics as kafka_topics
from broker.codecs.kafka import transactions as kafka_txn
from broker.codecs.native import acls as native_acls
from broker.codecs.native import configs as native_configs
from broker.codecs.native import controller as native_controller
from broker.codecs.native import groups as native_groups
from broker.codecs.native import metadata as native_metadata
from broker.codecs.native import partition_reads as native_reads
from broker.codecs.native import quotas as native_quotas
from broker.codecs.native import records as native_records
from broker.codecs.native import sasl as native_sasl
from broker.codecs.native import scram as native_scram
from broker.codecs.native import share as native_share
from broker.codecs.native import share_offsets as native_share_offsets
from broker.codecs.native import share_state as native_share_state
from broker.codecs.native import topics as native_topics
from broker.codecs.native import transactions as native_txn
from broker.context import BrokerContext
from broker.deferred import then
from broker.operations import (
    add_offsets_to_txn,
    add_partitions_to_txn,
    alter_client_quotas,
    alter_configs,
    alter_partition_reassignments,
    alter_replica_log_dirs,
    alter_share_group_offsets,
    alter_user_scram_credentials,
    api_versions,
    consumer_group_describe,
    consumer_group_heartbeat,
    controlled_shutdown,
    create_acls,
    create_partitions,
    create_topics,
    delete_acls,
    delete_groups,
    delete_records,
    delete_share_group_offsets,
    delete_share_group_state,
    delete_topics,
    describe_acls,
    describe_client_quotas,
    describe_cluster,
    describe_configs,
    describe_groups,
    describe_log_dirs,
    describe_producers,
    describe_share_group_offsets,
    describe_topic_partitions,
    describe_transactions,
    describe_user_scram_credentials,
    elect_leaders,
    end_txn,
    fetch,
    find_coordinator,
    heartbeat,
    init_producer_id,
    initialize_share_group_state,
    join_group,
    leader_and_isr,
    leave_group,
    list_config_resources,
    list_groups,
    list_offsets,
    list_partition_reassignments,
    list_transactions,
    metadata,
    offset_commit,
    offset_delete,
    offset_fetch,
    offset_for_leader_epoch,
    produce,
    read_share_group_state,
    read_share_group_state_summary,
    sasl_authenticate,
    sasl_handshake,
    share_acknowledge,
    share_fetch,
    share_group_describe,
    share_group_heartbeat,
    stop_replica,
    sync_group,
    txn_offset_commit,
    update_metadata,
    write_share_group_state,
    write_txn_markers,
)
from broker.security.rules import RULES, Rule
from broker.session import Session
from protocol.api import controller as controller_wire
from protocol.kafka import versions as kafka_versions
from protocol.registry import spec_for_key

Operation = Callable[[BrokerContext, Session, Any], Any]
Handler = Callable[[BrokerContext, Any, Session], Any]


@dataclass(frozen=True, slots=True)
class Served:
    """One door's service of an API: the versions it serves and its codec."""

    versions: tuple[int, int]
    codec: Codec


@dataclass(frozen=True, slots=True)
class Api:
    name: str  # Kafka's name, the key of rules.RULES
    key: int  # the API key, the same on both doors
    operation: Operation
    acl: tuple[Rule, ...]
    native: Served | None
    kafka: Served | None


# The SASL exchange runs before authentication and checks no ACL, as in Kafka (the door's SASL
# gate, broker/security/sasl.py, decides which requests may come before it completes).
UNAUTHENTICATED = frozenset({"SaslHandshake", "SaslAuthenticate"})


def _api(name: str, key: int, operation: Operation, native: Served | None,
         kafka: Served | None) -> Api:  # fmt: skip
    acl = () if name in UNAUTHENTICATED else RULES[name]
    return Api(name, key, operation, acl, native, kafka)


# The Kafka door's whole list (ApiVersions answers it), filled in below from the table.
KAFKA_SERVED: dict[int, tuple[int, int]] = {}

# fmt: off
APIS: tuple[Api, ...] = (
    _api("Heartbeat", kafka_versions.HEARTBEAT, heartbeat.run,
         Served((0, 0), native_groups.HEARTBEAT), Served((0, 4), kafka_groups.HEARTBEAT)),
    _api("SyncGroup", kafka_versions.SYNC_GROUP, sync_group.run,
         None, Served((0, 5), kafka_groups.SYNC_GROUP)),
    _api("LeaveGroup", kafka_versions.LEAVE_GROUP, leave_group.run,
         Served((0, 0), native_groups.LEAVE_GROUP), Served((0, 5), kafka_groups.LEAVE_GROUP)),
    _api("ListGroups", kafka_versions.LIST_GROUPS, list_groups.run,
         Served((0, 0), native_groups.LIST_GROUPS), Served((0, 5), kafka_groups.LIST_GROUPS)),
    _api("DescribeGroups", kafka_versions.DESCRIBE_GROUPS, describe_groups.run,
         Served((0, 0), native_groups.DESCRIBE_GROUPS),
         Served((0, 6), kafka_groups.DESCRIBE_GROUPS)),
    _api("DeleteGroups", kafka_versions.DELETE_GROUPS, delete_groups.run,
         Served((0, 0), native_groups.DELETE_GROUPS),
         Served((0, 2), kafka_groups.DELETE_GROUPS)),
    _api("DescribeTransactions", kafka_versions.DESCRIBE_TRANSACTIONS, describe_transactions.run,
         Served((0, 0), native_txn.DESCRIBE_TRANSACTIONS),
         Served((0, 0), kafka_txn.DESCRIBE_TRANSACTIONS)),
    _api("ConsumerGroupHeartbeat", kafka_versions.CONSUMER_GROUP_HEARTBEAT,
         consumer_group_heartbeat.run,
         Served((0, 0), native_groups.CONSUMER_GROUP_HEARTBEAT),
         Served((0, 1), kafka_groups.CONSUMER_GROUP_HEARTBEAT)),
    _api("InitProducerId", kafka_versions.INIT_PRODUCER_ID, init_producer_id.run,
         Served((0, 0), native_txn.INIT_PRODUCER_ID), Served((0, 6), kafka_txn.INIT_PRODUCER_ID)),
    _api("AddPartitionsToTxn", kafka_versions.ADD_PARTITIONS_TO_TXN, add_partitions_to_txn.run,
         Served((0, 0), native_txn.ADD_PARTITIONS_TO_TXN),
         Served((0, 5), kafka_txn.ADD_PARTITIONS_TO_TXN)),
    _api("AddOffsetsToTxn", kafka_versions.ADD_OFFSETS_TO_TXN, add_offsets_to_txn.run,
         Served((0, 0), native_txn.ADD_OFFSETS_TO_TXN),
         Served((0, 4), kafka_txn.ADD_OFFSETS_TO_TXN)),
    _api("EndTxn", kafka_versions.END_TXN, end_txn.run,
         Served((0, 0), native_txn.END_TXN), Served((0, 5), kafka_txn.END_TXN)),
    _api("TxnOffsetCommit", kafka_versions.TXN_OFFSET_COMMIT, txn_offset_commit.run,
         Served((0, 0), native_txn.TXN_OFFSET_COMMIT),
         Served((0, 5), kafka_txn.TXN_OFFSET_COMMIT)),
    _api("WriteTxnMarkers", kafka_versions.WRITE_TXN_MARKERS, write_txn_markers.run,
         Served((0, 0), native_txn.WRITE_TXN_MARKERS),
         Served((1, 2), kafka_txn.WRITE_TXN_MARKERS)),
    _api("ListTransactions", kafka_versions.LIST_TRANSACTIONS, list_transactions.run,
         Served((0, 0), native_txn.LIST_TRANSACTIONS),
         Served((0, 2), kafka_txn.LIST_TRANSACTIONS)),
    _api("DescribeProducers", kafka_versions.DESCRIBE_PRODUCERS, describe_producers.run,
         Served((0, 0), native_txn.DESCRIBE_PRODUCERS),
         Served((0, 0), kafka_txn.DESCRIBE_PRODUCERS)),
    _api("DescribeAcls", kafka_versions.DESCRIBE_ACLS, describe_acls.run,
         Served((0, 0), native_acls.DESCRIBE_ACLS), Served((1, 3), kafka_acls.DESCRIBE_ACLS)),
    _api("CreateAcls", kafka_versions.CREATE_ACLS, create_acls.run,
         Served((0, 0), native_acls.CREATE_ACLS), Served((1, 3), kafka_acls.CREATE_ACLS)),
    _api("DeleteAcls", kafka_versions.DELETE_ACLS, delete_acls.run,
         Served((0, 0), native_acls.DELETE_ACLS), Served((1, 3), kafka_acls.DELETE_ACLS)),
    _api("DescribeClientQuotas", kafka_versions.DESCRIBE_CLIENT_QUOTAS, describe_client_quotas.run,
         Served((0, 0), native_quotas.DESCRIBE_CLIENT_QUOTAS),
         Served((0, 1), kafka_quotas.DESCRIBE_CLIENT_QUOTAS)),
    _api("AlterClientQuotas", kafka_versions.ALTER_CLIENT_QUOTAS, alter_client_quotas.run,
         Served((0, 0), native_quotas.ALTER_CLIENT_QUOTAS),
         Served((0, 1), kafka_quotas.ALTER_CLIENT_QUOTAS)),
    _api("DescribeUserScramCredentials", kafka_versions.DESCRIBE_USER_SCRAM_CREDENTIALS,
         describe_user_scram_credentials.run,
         Served((0, 0), native_scram.DESCRIBE_USER_SCRAM_CREDENTIALS),
         Served((0, 0), kafka_scram.DESCRIBE_USER_SCRAM_CREDENTIALS)),
    _api("AlterUserScramCredentials", kafka_versions.ALTER_USER_SCRAM_CREDENTIALS,
         alter_user_scram_credentials.run,
         Served((0, 0), native_scram.ALTER_USER_SCRAM_CREDENTIALS),
         Served((0, 0), kafka_scram.ALTER_USER_SCRAM_CREDENTIALS)),
    _api("SaslHandshake", kafka_versions.SASL_HANDSHAKE, sasl_handshake.run,
         Served((0, 0), native_sasl.SASL_HANDSHAKE), Served((0, 1), kafka_sasl.SASL_HANDSHAKE)),
    _api("SaslAuthenticate", kafka_versions.SASL_AUTHENTICATE, sasl_authenticate.run,
         Served((0, 0), native_sasl.SASL_AUTHENTICATE),
         Served((0, 2), kafka_sasl.SASL_AUTHENTICATE)),
    _api("Metadata", kafka_versions.METADATA, metadata.run,
         Served((0, 0), native_metadata.METADATA), Served((0, 13), kafka_metadata.METADATA)),
    _api("ApiVersions", kafka_versions.API_VERSIONS, api_versions.answering(KAFKA_SERVED),
         None, Served((0, 4), kafka_metadata.API_VERSIONS)),
    _api("DescribeCluster", kafka_versions.DESCRIBE_CLUSTER, describe_cluster.run,
         None, Served((0, 2), kafka_metadata.DESCRIBE_CLUSTER)),
    _api("ListConfigResources", kafka_versions.LIST_CONFIG_RESOURCES, list_config_resources.run,
         None, Served((0, 1), kafka_configs.LIST_CONFIG_RESOURCES)),
    _api("DescribeTopicPartitions", kafka_versions.DESCRIBE_TOPIC_PARTITIONS,
         describe_topic_partitions.run,
         None, Served((0, 0), kafka_metadata.DESCRIBE_TOPIC_PARTITIONS)),
    _api("DescribeLogDirs", kafka_versions.DESCRIBE_LOG_DIRS, describe_log_dirs.run,
         None, Served((1, 4), kafka_metadata.DESCRIBE_LOG_DIRS)),
    _api("AlterReplicaLogDirs", kafka_versions.ALTER_REPLICA_LOG_DIRS, alter_replica_log_dirs.run,
         None, Served((1, 2), kafka_metadata.ALTER_REPLICA_LOG_DIRS)),
    _api("ListOffsets", kafka_versions.LIST_OFFSETS, list_offsets.run,
         Served((0, 0), native_reads.LIST_OFFSETS), Served((1, 11), kafka_reads.LIST_OFFSETS)),
    _api("OffsetForLeaderEpoch", kafka_versions.OFFSET_FOR_LEADER_EPOCH,
         offset_for_leader_epoch.run,
         Served((0, 0), native_reads.OFFSET_FOR_LEADER_EPOCH),
         Served((2, 4), kafka_reads.OFFSET_FOR_LEADER_EPOCH)),
    _api("CreateTopics", kafka_versions.CREATE_TOPICS, create_topics.run,
         Served((0, 0), native_topics.CREATE_TOPICS), Served((2, 7), kafka_topics.CREATE_TOPICS)),
    _api("DeleteTopics", kafka_versions.DELETE_TOPICS, delete_topics.run,
         Served((0, 0), native_topics.DELETE_TOPICS), Served((1, 6), kafka_topics.DELETE_TOPICS)),
    _api("CreatePartitions", kafka_versions.CREATE_PARTITIONS, create_partitions.run,
         Served((0, 0), native_topics.CREATE_PARTITIONS),
         Served((0, 3), kafka_topics.CREATE_PARTITIONS)),
    _api("DeleteRecords", kafka_versions.DELETE_RECORDS, delete_records.run,
         Served((0, 0), native_topics.DELETE_RECORDS),
         Served((0, 2), kafka_topics.DELETE_RECORDS)),
    _api("ElectLeaders", kafka_versions.ELECT_LEADERS, elect_leaders.run,
         Served((0, 0), native_topics.ELECT_LEADERS), Served((0, 2), kafka_topics.ELECT_LEADERS)),
    _api("AlterPartitionReassignments", kafka_versions.ALTER_PARTITION_REASSIGNMENTS,
         alter_partition_reassignments.run,
         Served((0, 0), native_topics.ALTER_PARTITION_REASSIGNMENTS),
         Served((0, 1), kafka_topics.ALTER_PARTITION_REASSIGNMENTS)),
    _api("ListPartitionReassignments", kafka_versions.LIST_PARTITION_REASSIGNMENTS,
         list_partition_reassignments.run,
         Served((0, 0), native_topics.LIST_PARTITION_REASSIGNMENTS),
         Served((0, 0), kafka_topics.LIST_PARTITION_REASSIGNMENTS)),
    _api("Produce", kafka_versions.PRODUCE, produce.run,
         Served((0, 0), native_records.PRODUCE), Served((0, 13), kafka_records.PRODUCE)),
    _api("Fetch", kafka_versions.FETCH, fetch.run,
         Served((0, 0), native_records.FETCH), Served((4, 18), kafka_records.FETCH)),
    _api("FindCoordinator", kafka_versions.FIND_COORDINATOR, find_coordinator.run,
         Served((0, 0), native_groups.FIND_COORDINATOR),
         Served((0, 6), kafka_groups.FIND_COORDINATOR)),
    _api("OffsetCommit", kafka_versions.OFFSET_COMMIT, offset_commit.run,
         Served((0, 0), native_groups.OFFSET_COMMIT), Served((2, 10), kafka_groups.OFFSET_COMMIT)),
    _api("OffsetFetch", kafka_versions.OFFSET_FETCH, offset_fetch.run,
         Served((0, 0), native_groups.OFFSET_FETCH), Served((1, 10), kafka_groups.OFFSET_FETCH)),
    _api("OffsetDelete", kafka_versions.OFFSET_DELETE, offset_delete.run,
         None, Served((0, 0), kafka_groups.OFFSET_DELETE)),
    _api("JoinGroup", kafka_versions.JOIN_GROUP, join_group.run,
         Served((0, 0), native_groups.JOIN_GROUP), Served((0, 9), kafka_groups.JOIN_GROUP)),
    _api("ConsumerGroupDescribe", kafka_versions.CONSUMER_GROUP_DESCRIBE,
         consumer_group_describe.run, None,
         Served((0, 1), kafka_groups.CONSUMER_GROUP_DESCRIBE)),
    # share groups (KIP-932), Kafka 4.2's versions
    _api("ShareGroupHeartbeat", kafka_versions.SHARE_GROUP_HEARTBEAT, share_group_heartbeat.run,
         Served((0, 0), native_share.SHARE_GROUP_HEARTBEAT),
         Served((1, 1), kafka_share.SHARE_GROUP_HEARTBEAT)),
    _api("ShareGroupDescribe", kafka_versions.SHARE_GROUP_DESCRIBE, share_group_describe.run,
         Served((0, 0), native_share.SHARE_GROUP_DESCRIBE),
         Served((1, 1), kafka_share.SHARE_GROUP_DESCRIBE)),
    _api("ShareFetch", kafka_versions.SHARE_FETCH, share_fetch.run,
         Served((0, 0), native_share.SHARE_FETCH), Served((1, 2), kafka_share.SHARE_FETCH)),
    _api("ShareAcknowledge", kafka_versions.SHARE_ACKNOWLEDGE, share_acknowledge.run,
         Served((0, 0), native_share.SHARE_ACKNOWLEDGE),
         Served((1, 2), kafka_share.SHARE_ACKNOWLEDGE)),
    # share groups' offsets (KIP-932), through the share coordinator's persister
    _api("DescribeShareGroupOffsets", kafka_versions.DESCRIBE_SHARE_GROUP_OFFSETS,
         describe_share_group_offsets.run,
         Served((0, 0), native_share_offsets.DESCRIBE_SHARE_GROUP_OFFSETS),
         Served((0, 1), kafka_share_offsets.DESCRIBE_SHARE_GROUP_OFFSETS)),
    _api("AlterShareGroupOffsets", kafka_versions.ALTER_SHARE_GROUP_OFFSETS,
         alter_share_group_offsets.run,
         Served((0, 0), native_share_offsets.ALTER_SHARE_GROUP_OFFSETS),
         Served((0, 0), kafka_share_offsets.ALTER_SHARE_GROUP_OFFSETS)),
    _api("DeleteShareGroupOffsets", kafka_versions.DELETE_SHARE_GROUP_OFFSETS,
         delete_share_group_offsets.run,
         Served((0, 0), native_share_offsets.DELETE_SHARE_GROUP_OFFSETS),
         Served((0, 0), kafka_share_offsets.DELETE_SHARE_GROUP_OFFSETS)),
    # the share coordinator's state (KIP-932), broker to broker: a leader's persister asks
    # the native door (broker/share/persister.py); Kafka 4.2's versions on the Kafka door
    _api("InitializeShareGroupState", kafka_versions.INITIALIZE_SHARE_GROUP_STATE,
         initialize_share_group_state.run,
         Served((0, 0), native_share_state.INITIALIZE_SHARE_GROUP_STATE),
         Served((0, 0), kafka_share_state.INITIALIZE_SHARE_GROUP_STATE)),
    _api("ReadShareGroupState", kafka_versions.READ_SHARE_GROUP_STATE, read_share_group_state.run,
         Served((0, 0), native_share_state.READ_SHARE_GROUP_STATE),
         Served((0, 0), kafka_share_state.READ_SHARE_GROUP_STATE)),
    _api("WriteShareGroupState", kafka_versions.WRITE_SHARE_GROUP_STATE,
         write_share_group_state.run,
         Served((0, 0), native_share_state.WRITE_SHARE_GROUP_STATE),
         Served((0, 1), kafka_share_state.WRITE_SHARE_GROUP_STATE)),
    _api("DeleteShareGroupState", kafka_versions.DELETE_SHARE_GROUP_STATE,
         delete_share_group_state.run,
         Served((0, 0), native_share_state.DELETE_SHARE_GROUP_STATE),
         Served((0, 0), kafka_share_state.DELETE_SHARE_GROUP_STATE)),
    _api("ReadShareGroupStateSummary", kafka_versions.READ_SHARE_GROUP_STATE_SUMMARY,
         read_share_group_state_summary.run,
         Served((0, 0), native_share_state.READ_SHARE_GROUP_STATE_SUMMARY),
         Served((0, 1), kafka_share_state.READ_SHARE_GROUP_STATE_SUMMARY)),
    # inter-broker, native only
    _api("LeaderAndIsr", controller_wire.LEADER_AND_ISR.key, leader_and_isr.run,
         Served((0, 0), native_controller.LEADER_AND_ISR), None),
    _api("StopReplica", controller_wire.STOP_REPLICA.key, stop_replica.run,
         Served((0, 0), native_controller.STOP_REPLICA), None),
    _api("UpdateMetadata", controller_wire.UPDATE_METADATA.key, update_metadata.run,
         Served((0, 0), native_controller.UPDATE_METADATA), None),
    _api("ControlledShutdown", controller_wire.CONTROLLED_SHUTDOWN.key, controlled_shutdown.run,
         Served((0, 0), native_controller.CONTROLLED_SHUTDOWN), None),
    _api("DescribeConfigs", kafka_versions.DESCRIBE_CONFIGS, describe_configs.run,
         Served((0, 0), native_configs.DESCRIBE_CONFIGS),
         Served((1, 4), kafka_configs.DESCRIBE_CONFIGS)),
    # one operation for both alter APIs; the native AlterConfigs carries either (`incremental`)
    _api("AlterConfigs", kafka_versions.ALTER_CONFIGS, alter_configs.run,
         Served((0, 0), native_configs.ALTER_CONFIGS), Served((0, 2), kafka_configs.ALTER_CONFIGS)),
    _api("IncrementalAlterConfigs", kafka_versions.INCREMENTAL_ALTER_CONFIGS, alter_configs.run,
         None, Served((0, 1), kafka_configs.INCREMENTAL_ALTER_CONFIGS)),
)
# fmt: on
BY_KEY: dict[int, Api] = {api.key: api for api in APIS}


def _handler(api: Api, codec: Codec) -> Handler:
    operation, decode, encode = api.operation, codec.decode, codec.encode

    def handle(ctx: BrokerContext, request: Any, session: Session) -> Any:
        result = operation(ctx, session, decode(request))
        return then(result, lambda r: encode(request, r))

    handle.__qualname__ = f"{api.name}.handle"
    return handle


NATIVE: dict[int, Handler] = {
    a.key: _handler(a, a.native.codec) for a in APIS if a.native is not None
}
KAFKA: dict[int, Handler] = {a.key: _handler(a, a.kafka.codec) for a in APIS if a.kafka is not None}


def native_handler(api_key: int) -> Handler | None:
    """The native door's handler of an API, None for one it does not serve."""
    return NATIVE.get(api_key)


def kafka_handler(api_key: int) -> Handler | None:
    """The Kafka door's handler of an API, None for one it does not serve."""
    return KAFKA.get(api_key)


KAFKA_SERVED.update(sorted((a.key, a.kafka.versions) for a in APIS if a.kafka is not None))


def _check_native_versions() -> None:
    """The native codec (protocol/codec.py) refuses versions its registry does not support:
    the table must say the same."""
    for a in APIS:
        spec = spec_for_key(a.key)
        if a.native is not None:
            assert spec is not None and spec.name == a.name, a.name
            assert a.native.versions == (spec.min_version, spec.max_version), a.name


_check_native_versions()
