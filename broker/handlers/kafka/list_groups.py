"""ListGroups (16), v0-v5: the groups this broker coordinates (Kafka tools ask every broker),
with their protocol type and, v4+, state, filtered by state names when asked; v5 gives each
group's type ("classic" or "consumer", KIP-848) and filters by types (case-insensitively, as
Kafka). A KIP-848 consumer group lists with protocol type "consumer" and its own states."""

from __future__ import annotations

from typing import Any

from broker.context import BrokerContext
from broker.handlers.kafka.describe_groups import NATIVE_PROTOCOL_TYPE
from broker.handlers.list_groups import describable
from broker.session import Session
from coordinator.group.consumer_service import consumer_of
from coordinator.group.group import Group
from coordinator.group.states import kafka_name
from protocol.errors import CoordinatorNotAvailableError
from protocol.kafka.codec import KafkaRequest, make, nested, response_class
from protocol.kafka.versions import LIST_GROUPS


def listing(group: Group) -> tuple[str, str, str]:
    """(protocol type, state, group type) as Kafka lists the group."""
    consumer = consumer_of(group)
    if consumer is not None:
        return "consumer", consumer.state.value, "consumer"
    return group.protocol_type or NATIVE_PROTOCOL_TYPE, kafka_name(group.state), "classic"


def _describable(ctx: BrokerContext, session: Session) -> list[Group]:
    assert ctx.groups is not None
    return describable(ctx, session, list(ctx.groups.all_groups()))


def handle(ctx: BrokerContext, request: KafkaRequest, session: Session) -> Any:
    cls = response_class(LIST_GROUPS, request.header.api_version)
    if ctx.groups is None:
        return make(cls, throttle_time=0, error_code=CoordinatorNotAvailableError.code, groups=())
    states = {s.lower() for s in getattr(request.body, "states_filter", ()) or ()}
    types = {t.lower() for t in getattr(request.body, "types_filter", ()) or ()}
    listed_cls = nested(cls, "ListedGroup")
    groups = []
    for g in sorted(_describable(ctx, session), key=lambda g: g.group_id):
        protocol_type, state, group_type = listing(g)
        if (states and state.lower() not in states) or (types and group_type not in types):
            continue
        groups.append(
            make(
                listed_cls,
                group_id=g.group_id,
                protocol_type=protocol_type,
                group_state=state,
                group_type=group_type,
            )
        )
    return make(cls, throttle_time=0, error_code=0, groups=tuple(groups))
