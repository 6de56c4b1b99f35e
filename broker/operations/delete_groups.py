"""DeleteGroups: each group without members is deleted, with its committed offsets (tombstones
in `__consumer_offsets`); answers come in the order asked. An Empty share group's durable
state is deleted first (DeleteShareGroupState of each share partition of its topics with
state, as Kafka's GroupCoordinatorService): its first error, if any, is the group's answer and
the group stays.

Per group: no Delete on it is GROUP_AUTHORIZATION_FAILED; no group coordinator on this broker
COORDINATOR_NOT_AVAILABLE; then the coordinator's answer: NOT_COORDINATOR (another broker's),
GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP (it has members), or NONE.
"""

from __future__ import annotations

from dataclasses import dataclass

from broker.context import BrokerContext
from broker.operations.delete_share_group_offsets import delete_topic_state
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
    for gid in list(allowed):
        code = await _delete_share_state(ctx, gid)
        if code:
            codes[gid] = code
            allowed.remove(gid)
    if allowed:
        codes.update((d.group_id, d.error_code) for d in await ctx.groups.delete(allowed))
    return DeleteGroupsResult(tuple(GroupDeleted(g, codes[g]) for g in req.group_ids))


async def _delete_share_state(ctx: BrokerContext, gid: str) -> int:
    """An Empty share group's share state, deleted topic by topic; the first error."""
    _, group = ctx.groups.share.find(gid)
    if group is None or group.members:
        return 0  # not a share group, or one that DeleteGroups refuses (NON_EMPTY_GROUP)
    for topic in sorted(group.state_topics):
        deleted = await delete_topic_state(ctx, gid, topic)
        if deleted.error_code not in (0, 3):  # an unknown (deleted) topic has no state left
            return deleted.error_code
        await ctx.groups.share.set_state_topic(gid, topic, False)  # written
    return 0
