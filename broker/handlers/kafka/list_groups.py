"""ListGroups (16), v0-v4: the groups this broker coordinates (Kafka tools ask every broker),
with their protocol type and, v4+, state, filtered by state names when asked."""

from __future__ import annotations

from typing import Any

from broker.context import BrokerContext
from broker.handlers.kafka.describe_groups import NATIVE_PROTOCOL_TYPE
from coordinator.group.states import kafka_name
from protocol.errors import CoordinatorNotAvailableError
from protocol.kafka.codec import KafkaRequest, make, nested, response_class
from protocol.kafka.versions import LIST_GROUPS


def handle(ctx: BrokerContext, request: KafkaRequest) -> Any:
    cls = response_class(LIST_GROUPS, request.header.api_version)
    if ctx.groups is None:
        return make(cls, throttle_time=0, error_code=CoordinatorNotAvailableError.code, groups=())
    wanted = set(getattr(request.body, "states_filter", ()) or ())
    listed_cls = nested(cls, "ListedGroup")
    groups = tuple(
        make(listed_cls, group_id=g.group_id,
             protocol_type=g.protocol_type or NATIVE_PROTOCOL_TYPE,
             group_state=kafka_name(g.state), group_type="classic")
        for g in sorted(ctx.groups.all_groups(), key=lambda g: g.group_id)
        if not wanted or kafka_name(g.state) in wanted
    )  # fmt: skip
    return make(cls, throttle_time=0, error_code=0, groups=groups)
