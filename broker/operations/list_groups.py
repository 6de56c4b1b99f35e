"""ListGroups: the groups this broker coordinates (a client asks every broker), those the
principal may see: all of them with Describe on the cluster, else those it may Describe (never
an error, as Kafka's ListGroups; these denials are not logged).

Filters, each None for no filter: `states` keeps the groups whose state, by either name (the
native one, e.g. "Ready", or Kafka's, e.g. "Stable"), is one of them, case-insensitively;
`types` keeps those of these group types ("classic", "consumer": KIP-848, "share": KIP-932),
case-insensitively.
No group coordinator on this broker is COORDINATOR_NOT_AVAILABLE (the client asks again).
"""

from __future__ import annotations

from dataclasses import dataclass

from broker.context import BrokerContext
from broker.security import rules
from broker.session import Session

API = "ListGroups"
SHARE = "share"


@dataclass(frozen=True, slots=True)
class ListGroups:
    states: frozenset[str] | None = None  # lower case
    types: frozenset[str] | None = None  # lower case


@dataclass(frozen=True, slots=True)
class Listed:
    group_id: str
    state: str  # the native name
    kafka_state: str  # Kafka's name (a consumer group's are the same)
    protocol_type: str | None  # None: a native classic group (or one with no members)
    group_type: str  # "classic", "consumer" or "share"


@dataclass(frozen=True, slots=True)
class ListGroupsResult:
    error_code: int
    groups: tuple[Listed, ...]  # by group id


def run(ctx: BrokerContext, session: Session, req: ListGroups) -> ListGroupsResult:
    rows = [
        Listed(g.group_id, g.state, g.kafka_state or g.state, g.protocol_type, g.group_type)
        for g in ctx.groups.list_groups(None)
        if _kept(req, g.state, g.kafka_state, g.group_type)
    ]
    rows += [  # share groups (KIP-932): their protocol type is their group type
        Listed(g.group_id, g.state.value, g.state.value, SHARE, SHARE)
        for g in ctx.groups.share.groups()
        if _kept(req, g.state.value, g.state.value, SHARE)
    ]
    return ListGroupsResult(0, tuple(sorted(_visible(ctx, session, rows), key=_id)))


def _kept(req: ListGroups, state: str, kafka_state: str, group_type: str) -> bool:
    if req.states is not None and not {state.lower(), kafka_state.lower()} & req.states:
        return False
    return req.types is None or group_type.lower() in req.types


def _visible(ctx: BrokerContext, session: Session, rows: list[Listed]) -> list[Listed]:
    if ctx.authorizer is None or rules.allows(
        ctx, session, rules.DESCRIBE, rules.CLUSTER, api=API, log_denied=False
    ):
        return rows
    hidden = rules.denied(ctx, session, rules.DESCRIBE, rules.GROUP,
                          (g.group_id for g in rows), api=API, log_denied=False)  # fmt: skip
    return [g for g in rows if g.group_id not in hidden]


def _id(g: Listed) -> str:
    return g.group_id
