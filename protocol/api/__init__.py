"""One module per API family, each declaring its APIs as `ApiSpec` constants (protocol/api/spec.py).

`APIS` is the table of every API, one row per API key, built here from those declarations: the
modules are imported by name and register nothing themselves. Adding an API is one declaration
in its family's module and one row below. `BY_KEY` and `BY_REQUEST` index it
(protocol/registry.py's lookups); a key or a request class declared twice fails at import.
"""

from __future__ import annotations

from protocol.api import (
    acls,
    admin,
    controller,
    delete_records,
    fetch,
    group,
    list_offsets,
    metadata,
    produce,
    producer_ids,
    quotas,
    replication,
    sasl,
    scram,
    share,
    share_offsets,
    share_state,
    txn,
    txn_markers,
)
from protocol.api.spec import ApiSpec

APIS: tuple[ApiSpec, ...] = (
    produce.PRODUCE,  # 0
    fetch.FETCH,  # 1
    list_offsets.LIST_OFFSETS,  # 2
    metadata.METADATA,  # 3
    controller.LEADER_AND_ISR,  # 4
    controller.STOP_REPLICA,  # 5
    controller.UPDATE_METADATA,  # 6
    controller.CONTROLLED_SHUTDOWN,  # 7
    group.OFFSET_COMMIT,  # 8
    group.OFFSET_FETCH,  # 9
    group.FIND_COORDINATOR,  # 10
    group.JOIN_GROUP,  # 11
    group.HEARTBEAT,  # 12
    group.LEAVE_GROUP,  # 13
    group.DESCRIBE_GROUPS,  # 15
    group.LIST_GROUPS,  # 16
    sasl.SASL_HANDSHAKE,  # 17
    admin.CREATE_TOPICS,  # 19
    admin.DELETE_TOPICS,  # 20
    delete_records.DELETE_RECORDS,  # 21
    producer_ids.INIT_PRODUCER_ID,  # 22
    replication.OFFSETS_FOR_LEADER_EPOCH,  # 23
    txn.ADD_PARTITIONS_TO_TXN,  # 24
    txn.ADD_OFFSETS_TO_TXN,  # 25
    txn.END_TXN,  # 26
    txn_markers.WRITE_TXN_MARKERS,  # 27
    txn.TXN_OFFSET_COMMIT,  # 28
    acls.DESCRIBE_ACLS,  # 29
    acls.CREATE_ACLS,  # 30
    acls.DELETE_ACLS,  # 31
    admin.DESCRIBE_CONFIGS,  # 32
    admin.ALTER_CONFIGS,  # 33
    sasl.SASL_AUTHENTICATE,  # 36
    admin.CREATE_PARTITIONS,  # 37
    group.DELETE_GROUPS,  # 42
    controller.ELECT_LEADERS,  # 43
    controller.ALTER_PARTITION_REASSIGNMENTS,  # 45
    controller.LIST_PARTITION_REASSIGNMENTS,  # 46
    quotas.DESCRIBE_CLIENT_QUOTAS,  # 48
    quotas.ALTER_CLIENT_QUOTAS,  # 49
    scram.DESCRIBE_USER_SCRAM_CREDENTIALS,  # 50
    scram.ALTER_USER_SCRAM_CREDENTIALS,  # 51
    txn.DESCRIBE_PRODUCERS,  # 61
    txn.DESCRIBE_TRANSACTIONS,  # 65
    txn.LIST_TRANSACTIONS,  # 66
    group.CONSUMER_GROUP_HEARTBEAT,  # 68
    share.SHARE_GROUP_HEARTBEAT,  # 76
    share.SHARE_GROUP_DESCRIBE,  # 77
    share.SHARE_FETCH,  # 78
    share.SHARE_ACKNOWLEDGE,  # 79
    share_state.INITIALIZE_SHARE_GROUP_STATE,  # 83
    share_state.READ_SHARE_GROUP_STATE,  # 84
    share_state.WRITE_SHARE_GROUP_STATE,  # 85
    share_state.DELETE_SHARE_GROUP_STATE,  # 86
    share_state.READ_SHARE_GROUP_STATE_SUMMARY,  # 87
    share_offsets.DESCRIBE_SHARE_GROUP_OFFSETS,  # 90
    share_offsets.ALTER_SHARE_GROUP_OFFSETS,  # 91
    share_offsets.DELETE_SHARE_GROUP_OFFSETS,  # 92
)


def _index(specs: tuple[ApiSpec, ...]) -> tuple[dict[int, ApiSpec], dict[type, ApiSpec]]:
    by_key: dict[int, ApiSpec] = {}
    by_request: dict[type, ApiSpec] = {}
    for spec in specs:
        if spec.key in by_key:
            raise ValueError(f"api key {spec.key} declared twice")
        if spec.request in by_request:
            raise ValueError(f"{spec.request.__name__} is already the request of another api")
        by_key[spec.key] = spec
        by_request[spec.request] = spec
    return by_key, by_request


BY_KEY, BY_REQUEST = _index(APIS)

__all__ = [
    "APIS",
    "BY_KEY",
    "BY_REQUEST",
    "acls",
    "admin",
    "controller",
    "delete_records",
    "fetch",
    "group",
    "list_offsets",
    "metadata",
    "produce",
    "producer_ids",
    "quotas",
    "replication",
    "sasl",
    "scram",
    "share",
    "share_offsets",
    "share_state",
    "txn",
    "txn_markers",
]
