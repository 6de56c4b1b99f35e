"""DeleteGroups (42), v0-v2: empty groups and their committed offsets are deleted (tombstones
in `__consumer_offsets`), through the same service as the native DeleteGroups; a group with
members gets NON_EMPTY_GROUP."""

from __future__ import annotations

from typing import Any

from broker.context import BrokerContext
from broker.security import rules
from broker.session import Session
from protocol.errors import CoordinatorNotAvailableError, GroupAuthorizationFailedError
from protocol.kafka.codec import KafkaRequest, make, nested, response_class
from protocol.kafka.versions import DELETE_GROUPS


async def handle(ctx: BrokerContext, request: KafkaRequest, session: Session) -> Any:
    names = list(request.body.groups_names)
    refused = rules.denied(ctx, session, rules.DELETE, rules.GROUP, names, api="DeleteGroups")
    allowed = [g for g in names if g not in refused]
    if ctx.groups is None:
        results = [(g, CoordinatorNotAvailableError.code) for g in allowed]
    else:
        results = [(d.group_id, d.error_code) for d in await ctx.groups.delete(allowed)]
    results += [(g, GroupAuthorizationFailedError.code) for g in names if g in refused]
    cls = response_class(DELETE_GROUPS, request.header.api_version)
    result_cls = nested(cls, "DeletableGroupResult")
    return make(cls, throttle_time=0, results=tuple(
        make(result_cls, group_id=g, error_code=c) for g, c in results))  # fmt: skip
