"""The Kafka door's legacy handlers (the transition of issue 32: the APIs converted to one
operation per API are served through broker/apis.py's table instead, and are not here): one
small adapter per Kafka API, each `handle(ctx, request, session)`
with a `KafkaRequest` (protocol/kafka/codec.py), returning a kio response entity, chunks (Fetch),
None (acks=0) or an awaitable of one. Adapters translate to the native request of the same
meaning and call the native handler, so both doors reach the same services.
"""

from __future__ import annotations

from typing import Any

from broker.handlers.kafka import (
    add_offsets_to_txn,
    add_partitions_to_txn,
    alter_client_quotas,
    alter_configs,
    alter_partition_reassignments,
    alter_user_scram_credentials,
    api_versions,
    create_acls,
    create_partitions,
    create_topics,
    delete_acls,
    delete_records,
    delete_topics,
    describe_acls,
    describe_client_quotas,
    describe_cluster,
    describe_configs,
    describe_log_dirs,
    describe_producers,
    describe_topic_partitions,
    describe_user_scram_credentials,
    elect_leaders,
    end_txn,
    fetch,
    incremental_alter_configs,
    init_producer_id,
    list_offsets,
    list_partition_reassignments,
    list_transactions,
    metadata,
    offset_for_leader_epoch,
    produce,
    sasl_authenticate,
    sasl_handshake,
    txn_offset_commit,
    write_txn_markers,
)
from protocol.kafka import versions as v
from protocol.kafka.versions import SERVED

KAFKA_HANDLERS: dict[int, Any] = {
    v.PRODUCE: produce.handle,
    v.FETCH: fetch.handle,
    v.LIST_OFFSETS: list_offsets.handle,
    v.METADATA: metadata.handle,
    v.API_VERSIONS: api_versions.handle,
    v.CREATE_TOPICS: create_topics.handle,
    v.DELETE_TOPICS: delete_topics.handle,
    v.INIT_PRODUCER_ID: init_producer_id.handle,
    v.OFFSET_FOR_LEADER_EPOCH: offset_for_leader_epoch.handle,
    v.DELETE_RECORDS: delete_records.handle,
    v.DESCRIBE_LOG_DIRS: describe_log_dirs.handle,
    v.ELECT_LEADERS: elect_leaders.handle,
    v.ALTER_PARTITION_REASSIGNMENTS: alter_partition_reassignments.handle,
    v.LIST_PARTITION_REASSIGNMENTS: list_partition_reassignments.handle,
    v.DESCRIBE_CLUSTER: describe_cluster.handle,
    v.DESCRIBE_TOPIC_PARTITIONS: describe_topic_partitions.handle,
    v.DESCRIBE_CONFIGS: describe_configs.handle,
    v.ALTER_CONFIGS: alter_configs.handle,
    v.INCREMENTAL_ALTER_CONFIGS: incremental_alter_configs.handle,
    v.CREATE_PARTITIONS: create_partitions.handle,
    v.DESCRIBE_ACLS: describe_acls.handle,
    v.CREATE_ACLS: create_acls.handle,
    v.DELETE_ACLS: delete_acls.handle,
    v.DESCRIBE_CLIENT_QUOTAS: describe_client_quotas.handle,
    v.ALTER_CLIENT_QUOTAS: alter_client_quotas.handle,
    v.ADD_PARTITIONS_TO_TXN: add_partitions_to_txn.handle,
    v.ADD_OFFSETS_TO_TXN: add_offsets_to_txn.handle,
    v.END_TXN: end_txn.handle,
    v.TXN_OFFSET_COMMIT: txn_offset_commit.handle,
    v.DESCRIBE_PRODUCERS: describe_producers.handle,
    v.LIST_TRANSACTIONS: list_transactions.handle,
    v.WRITE_TXN_MARKERS: write_txn_markers.handle,
    v.DESCRIBE_USER_SCRAM_CREDENTIALS: describe_user_scram_credentials.handle,
    v.ALTER_USER_SCRAM_CREDENTIALS: alter_user_scram_credentials.handle,
    v.SASL_HANDSHAKE: sasl_handshake.handle,
    v.SASL_AUTHENTICATE: sasl_authenticate.handle,
}
assert set(KAFKA_HANDLERS) == set(SERVED), "every API SERVED lists has a handler, and no other"

__all__ = ["KAFKA_HANDLERS", "SERVED"]
