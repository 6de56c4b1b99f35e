"""The API table: one row per API, naming its operation (broker/operations/), its ACL rule
(broker/security/rules.py's `RULES` row, which the operation checks), and for each door that
serves it the versions served and the codec (broker/codecs/). The doors (broker/doors.py)
look an API up here first.

Transition (issue 32): the APIs converted so far are the rows of `APIS`. Every other API is
still served by its legacy handlers, `HANDLERS` (broker/handlers/__init__.py, the native door)
and `KAFKA_HANDLERS` (broker/handlers/kafka/, with the versions of
protocol/kafka/versions.py's `SERVED`), which the doors fall back to; docs/design.md ("One
operation per API") lists what remains to convert. An API is in the table or in the legacy
registries, never both (checked below).

A door's handler for a row (`native_handler`, `kafka_handler`) is the server's usual
`handle(ctx, request, session)`: decode with the codec, run the operation, encode its result
(at once, or when the awaitable the operation returned completes).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from broker.codecs import Codec
from broker.codecs.kafka import groups as kafka_groups
from broker.codecs.kafka import transactions as kafka_txn
from broker.codecs.native import groups as native_groups
from broker.codecs.native import transactions as native_txn
from broker.context import BrokerContext
from broker.deferred import then
from broker.operations import (
    consumer_group_describe,
    consumer_group_heartbeat,
    delete_groups,
    describe_groups,
    describe_transactions,
    find_coordinator,
    heartbeat,
    join_group,
    leave_group,
    list_groups,
    offset_commit,
    offset_delete,
    offset_fetch,
    sync_group,
)
from broker.security.rules import RULES, Rule
from broker.session import Session
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


def _api(name: str, key: int, operation: Operation, native: Served | None,
         kafka: Served | None) -> Api:  # fmt: skip
    return Api(name, key, operation, RULES[name], native, kafka)


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
         Served((0, 5), kafka_groups.DESCRIBE_GROUPS)),
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
    _api("FindCoordinator", kafka_versions.FIND_COORDINATOR, find_coordinator.run,
         Served((0, 0), native_groups.FIND_COORDINATOR),
         Served((0, 4), kafka_groups.FIND_COORDINATOR)),
    _api("OffsetCommit", kafka_versions.OFFSET_COMMIT, offset_commit.run,
         Served((0, 0), native_groups.OFFSET_COMMIT), Served((2, 9), kafka_groups.OFFSET_COMMIT)),
    _api("OffsetFetch", kafka_versions.OFFSET_FETCH, offset_fetch.run,
         Served((0, 0), native_groups.OFFSET_FETCH), Served((1, 9), kafka_groups.OFFSET_FETCH)),
    _api("OffsetDelete", kafka_versions.OFFSET_DELETE, offset_delete.run,
         None, Served((0, 0), kafka_groups.OFFSET_DELETE)),
    _api("JoinGroup", kafka_versions.JOIN_GROUP, join_group.run,
         Served((0, 0), native_groups.JOIN_GROUP), Served((0, 9), kafka_groups.JOIN_GROUP)),
    _api("ConsumerGroupDescribe", kafka_versions.CONSUMER_GROUP_DESCRIBE,
         consumer_group_describe.run, None,
         Served((0, 1), kafka_groups.CONSUMER_GROUP_DESCRIBE)),
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
    """The native door's handler of a converted API, None for one still in HANDLERS."""
    return NATIVE.get(api_key)


def kafka_handler(api_key: int) -> Handler | None:
    """The Kafka door's handler of a converted API, None for one still in KAFKA_HANDLERS."""
    return KAFKA.get(api_key)


def kafka_served(legacy: Mapping[int, tuple[int, int]]) -> dict[int, tuple[int, int]]:
    """Every Kafka API and version range the Kafka door serves: the table's and `legacy`'s
    (the APIs not converted yet)."""
    served = dict(legacy)
    for a in APIS:
        if a.kafka is not None:
            assert a.key not in served, f"{a.name} is in the table and in SERVED"
            served[a.key] = a.kafka.versions
    return dict(sorted(served.items()))


KAFKA_SERVED: dict[int, tuple[int, int]] = kafka_served(kafka_versions.SERVED)


def _check_native_versions() -> None:
    """The native codec (protocol/codec.py) refuses versions its registry does not support:
    the table must say the same."""
    for a in APIS:
        spec = spec_for_key(a.key)
        if a.native is not None:
            assert spec is not None and spec.name == a.name, a.name
            assert a.native.versions == (spec.min_version, spec.max_version), a.name


_check_native_versions()
