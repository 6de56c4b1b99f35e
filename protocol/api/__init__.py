"""One module per API family; importing this package registers every API by its key."""

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
    txn,
    txn_markers,
)

__all__ = [
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
    "txn",
    "txn_markers",
]
