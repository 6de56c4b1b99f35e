"""One module per API family; importing this package registers every API by its key."""

from protocol.api import (
    admin,
    controller,
    fetch,
    group,
    list_offsets,
    metadata,
    produce,
    replication,
)

__all__ = [
    "admin",
    "controller",
    "fetch",
    "group",
    "list_offsets",
    "metadata",
    "produce",
    "replication",
]
