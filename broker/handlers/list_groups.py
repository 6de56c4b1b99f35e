"""ListGroups: the groups this broker coordinates (a client asks every broker)."""

from __future__ import annotations

from typing import Protocol, TypeVar

from broker.context import BrokerContext
from broker.security import rules
from broker.session import Session
from protocol.api.group import ListGroupsRequest, ListGroupsResponse
from protocol.codec import Request


def handle(ctx: BrokerContext, request: Request, session: Session) -> ListGroupsResponse:
    req: ListGroupsRequest = request.body
    if ctx.groups is None:
        return ListGroupsResponse(0, [])
    return ListGroupsResponse(0, describable(ctx, session, ctx.groups.list_groups(req.states)))


class _Named(Protocol):
    @property
    def group_id(self) -> str: ...


G = TypeVar("G", bound=_Named)


def describable(ctx: BrokerContext, session: Session, groups: list[G]) -> list[G]:
    """The groups the principal may see (both doors): all with Describe on the cluster, else
    those it may Describe; never an error (Kafka's ListGroups)."""
    if ctx.authorizer is None or rules.allows(
        ctx, session, rules.DESCRIBE, rules.CLUSTER, api="ListGroups", log_denied=False
    ):
        return groups
    hidden = rules.denied(
        ctx,
        session,
        rules.DESCRIBE,
        rules.GROUP,
        (g.group_id for g in groups),
        api="ListGroups",
        log_denied=False,
    )
    return [g for g in groups if g.group_id not in hidden]
