"""AlterUserScramCredentials (KIP-554): needs Cluster Alter; the checks are broker/credentials.py's
`plan_alteration` (Kafka's), then each valid user's changes are written to ZooKeeper
(ctx.credentials) and every broker's cache follows its change notification. Results: the users
in error first, then the users written, one result per user, as Kafka."""

from __future__ import annotations

import logging

from broker.context import BrokerContext
from broker.credentials import plan_alteration
from broker.security import rules
from broker.session import Session
from protocol.api.scram import (
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsResponse,
    AlterUserScramCredentialsResult,
)
from protocol.codec import Request
from protocol.errors import ClusterAuthorizationFailedError, OdradekError, UnknownServerError

log = logging.getLogger("odradek.broker.admin")


async def handle(
    ctx: BrokerContext, request: Request, session: Session
) -> AlterUserScramCredentialsResponse:
    req: AlterUserScramCredentialsRequest = request.body
    names = [u.name for u in req.upsertions] + [d.name for d in req.deletions]
    named = list(dict.fromkeys(names))
    if not rules.allows(ctx, session, rules.ALTER, rules.CLUSTER, api="AlterUserScramCredentials"):
        code = ClusterAuthorizationFailedError.code
        message = ClusterAuthorizationFailedError.default_message
        return AlterUserScramCredentialsResponse(
            [AlterUserScramCredentialsResult(u, code, message) for u in named]
        )
    store = ctx.credentials
    assert store is not None, "the daemon wires ctx.credentials"
    existing = {u: await store.read_user(u) for u in named if u}
    plan = plan_alteration(req.upsertions, req.deletions, existing)
    results = [AlterUserScramCredentialsResult(u, c, m) for u, (c, m) in plan.errors.items()]
    for user, changes in plan.changes.items():
        try:
            await store.alter(user, changes)
        except OdradekError as exc:
            results.append(AlterUserScramCredentialsResult(user, exc.code, exc.message))
            continue
        except Exception as exc:  # ZooKeeper trouble: the user is told, the log keeps why
            log.warning("altering the SCRAM credentials of %s failed: %s", user, exc)
            error = UnknownServerError.code
            results.append(AlterUserScramCredentialsResult(user, error, f"not written: {exc}"))
            continue
        log.info("user %s SCRAM credentials altered by %s", user, session.principal)
        results.append(AlterUserScramCredentialsResult(user, 0, None))
    return AlterUserScramCredentialsResponse(results)
