"""DescribeUserScramCredentials (KIP-554): needs Cluster Describe; each user's mechanisms and
iterations (never a key or salt), read from ZooKeeper (ctx.credentials) so that a write made
through another broker shows at once. The results are broker/credentials.py's
`describe_results` (Kafka's rules: unknown user RESOURCE_NOT_FOUND, a user named twice
DUPLICATE_RESOURCE, no users named: every user with a credential)."""

from __future__ import annotations

import logging

from broker.context import BrokerContext
from broker.credentials import Credentials, describe_results
from broker.security import rules
from broker.session import Session
from protocol.api.scram import DescribeUserScramCredentialsRequest as DescribeRequest
from protocol.api.scram import DescribeUserScramCredentialsResponse as DescribeResponse
from protocol.codec import Request
from protocol.errors import ClusterAuthorizationFailedError, OdradekError, UnknownServerError

log = logging.getLogger("odradek.broker.admin")


async def handle(ctx: BrokerContext, request: Request, session: Session) -> DescribeResponse:
    req: DescribeRequest = request.body
    if not rules.allows(
        ctx, session, rules.DESCRIBE, rules.CLUSTER, api="DescribeUserScramCredentials"
    ):
        error = ClusterAuthorizationFailedError
        return DescribeResponse(error.code, error.default_message, [])
    store = ctx.credentials
    assert store is not None, "the daemon wires ctx.credentials"
    try:
        if req.users:
            named = [u for u in dict.fromkeys(req.users) if u]
            found: dict[str, Credentials] = {u: await store.read_user(u) for u in named}
        else:
            found = await store.read_all_users()
    except OdradekError as exc:
        return DescribeResponse(exc.code, exc.message, [])
    except Exception as exc:  # ZooKeeper trouble
        log.warning("describing SCRAM credentials failed: %s", exc)
        return DescribeResponse(UnknownServerError.code, f"not read: {exc}", [])
    return DescribeResponse(0, None, describe_results(req.users, found))
