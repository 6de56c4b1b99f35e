"""DeleteGroups: each group without members is deleted, with its committed offsets (tombstones
in `__consumer_offsets`); answers come in the order asked.

Per group: no Delete on it is GROUP_AUTHORIZATION_FAILED; no group coordinator on this broker
COORDINATOR_NOT_AVAILABLE; then the coordinator's answer: NOT_COORDINATOR (another broker's),
GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP (it has members), or NONE.
"""

from __future__ import annotations

from dataclasses import dataclass

from broker.context import BrokerContext
from broker.security import rules
from broker.session import Session
from protocol.errors import GroupAuthorizationFailedError

API = "DeleteGroups"


@dataclass(frozen=True, slots=True)
class DeleteGroups:
    group_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class GroupDeleted:
    group_id: str
    error_code: int


@dataclass(frozen=True, slots=True)
class DeleteGroupsResult:
    results: tuple[GroupDeleted, ...]


async def run(ctx: BrokerContext, session: Session, req: DeleteGroups) -> DeleteGroupsResult:
    refused = rules.denied(ctx, session, rules.DELETE, rules.GROUP, req.group_ids, api=API)
    allowed = [g for g in req.group_ids if g not in refused]
    codes: dict[str, int] = {g: GroupAuthorizationFailedError.code for g in refused}
    if allowed:
        codes.update((d.group_id, d.error_code) for d in await ctx.groups.delete(allowed))
    return DeleteGroupsResult(tuple(GroupDeleted(g, codes[g]) for g in req.group_ids))
