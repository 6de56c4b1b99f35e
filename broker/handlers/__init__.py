"""The native door's legacy handlers (the transition of issue 32: the APIs converted to one
operation per API are served through broker/apis.py's table instead, and are not here).
One module per API, each `handle(ctx, request, session)`: take the decoded request (and the
connection's session, broker/session.py: who asks), call a service, build the response. The
server looks handlers up here by api key.

A handler returns the response message, `None` (no response: produce with acks=0), or an
awaitable of either when it must wait (long-polling fetch, group commit, admin operations).
Returning a plain value when no waiting is needed lets the server answer without a task.
Responses of the APIs in `CHUNKED` may hold `FileSlice`s and are encoded as chunks.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from broker.context import BrokerContext
from broker.handlers import (
    add_offsets_to_txn,
    add_partitions_to_txn,
    alter_client_quotas,
    alter_configs,
    alter_partition_reassignments,
    alter_user_scram_credentials,
    controlled_shutdown,
    create_acls,
    create_partitions,
    create_topics,
    delete_acls,
    delete_records,
    delete_topics,
    describe_acls,
    describe_client_quotas,
    describe_configs,
    describe_producers,
    describe_user_scram_credentials,
    elect_leaders,
    end_txn,
    fetch,
    init_producer_id,
    leader_and_isr,
    list_offsets,
    list_partition_reassignments,
    list_transactions,
    metadata,
    offsets_for_leader_epoch,
    produce,
    sasl_authenticate,
    sasl_handshake,
    stop_replica,
    txn_offset_commit,
    update_metadata,
    write_txn_markers,
)
from broker.session import Session
from protocol.api.acls import CREATE_ACLS, DELETE_ACLS, DESCRIBE_ACLS
from protocol.api.admin import (
    ALTER_CONFIGS,
    CREATE_PARTITIONS,
    CREATE_TOPICS,
    DELETE_TOPICS,
    DESCRIBE_CONFIGS,
)
from protocol.api.controller import (
    ALTER_PARTITION_REASSIGNMENTS,
    CONTROLLED_SHUTDOWN,
    ELECT_LEADERS,
    LEADER_AND_ISR,
    LIST_PARTITION_REASSIGNMENTS,
    STOP_REPLICA,
    UPDATE_METADATA,
)
from protocol.api.delete_records import DELETE_RECORDS
from protocol.api.fetch import FETCH
from protocol.api.list_offsets import LIST_OFFSETS
from protocol.api.metadata import METADATA
from protocol.api.produce import PRODUCE
from protocol.api.producer_ids import INIT_PRODUCER_ID
from protocol.api.quotas import ALTER_CLIENT_QUOTAS, DESCRIBE_CLIENT_QUOTAS
from protocol.api.replication import OFFSETS_FOR_LEADER_EPOCH
from protocol.api.sasl import SASL_AUTHENTICATE, SASL_HANDSHAKE
from protocol.api.scram import ALTER_USER_SCRAM_CREDENTIALS, DESCRIBE_USER_SCRAM_CREDENTIALS
from protocol.api.txn import (
    ADD_OFFSETS_TO_TXN,
    ADD_PARTITIONS_TO_TXN,
    DESCRIBE_PRODUCERS,
    END_TXN,
    LIST_TRANSACTIONS,
    TXN_OFFSET_COMMIT,
)
from protocol.api.txn_markers import WRITE_TXN_MARKERS
from protocol.codec import Request

HandlerResult = Any | None | Awaitable[Any | None]
Handler = Callable[[BrokerContext, Request, Session], HandlerResult]

HANDLERS: dict[int, Handler] = {
    PRODUCE.key: produce.handle,
    FETCH.key: fetch.handle,
    LIST_OFFSETS.key: list_offsets.handle,
    METADATA.key: metadata.handle,
    LEADER_AND_ISR.key: leader_and_isr.handle,
    STOP_REPLICA.key: stop_replica.handle,
    UPDATE_METADATA.key: update_metadata.handle,
    CREATE_TOPICS.key: create_topics.handle,
    DELETE_TOPICS.key: delete_topics.handle,
    DELETE_RECORDS.key: delete_records.handle,
    DESCRIBE_CONFIGS.key: describe_configs.handle,
    ALTER_CONFIGS.key: alter_configs.handle,
    CREATE_PARTITIONS.key: create_partitions.handle,
    DESCRIBE_ACLS.key: describe_acls.handle,
    CREATE_ACLS.key: create_acls.handle,
    DELETE_ACLS.key: delete_acls.handle,
    DESCRIBE_CLIENT_QUOTAS.key: describe_client_quotas.handle,
    ALTER_CLIENT_QUOTAS.key: alter_client_quotas.handle,
    OFFSETS_FOR_LEADER_EPOCH.key: offsets_for_leader_epoch.handle,
    CONTROLLED_SHUTDOWN.key: controlled_shutdown.handle,
    ELECT_LEADERS.key: elect_leaders.handle,
    ALTER_PARTITION_REASSIGNMENTS.key: alter_partition_reassignments.handle,
    LIST_PARTITION_REASSIGNMENTS.key: list_partition_reassignments.handle,
    INIT_PRODUCER_ID.key: init_producer_id.handle,
    WRITE_TXN_MARKERS.key: write_txn_markers.handle,
    ADD_PARTITIONS_TO_TXN.key: add_partitions_to_txn.handle,
    ADD_OFFSETS_TO_TXN.key: add_offsets_to_txn.handle,
    END_TXN.key: end_txn.handle,
    TXN_OFFSET_COMMIT.key: txn_offset_commit.handle,
    LIST_TRANSACTIONS.key: list_transactions.handle,
    DESCRIBE_PRODUCERS.key: describe_producers.handle,
    DESCRIBE_USER_SCRAM_CREDENTIALS.key: describe_user_scram_credentials.handle,
    ALTER_USER_SCRAM_CREDENTIALS.key: alter_user_scram_credentials.handle,
    SASL_HANDSHAKE.key: sasl_handshake.handle,
    SASL_AUTHENTICATE.key: sasl_authenticate.handle,
}

CHUNKED: frozenset[int] = frozenset({FETCH.key})

__all__ = ["CHUNKED", "HANDLERS", "Handler", "HandlerResult"]
