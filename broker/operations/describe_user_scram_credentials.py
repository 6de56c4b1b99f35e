"""DescribeUserScramCredentials (KIP-554): each user's SCRAM mechanisms and iterations (never a
key or salt), read from ZooKeeper (`ctx.credentials`) so that a write made through another
broker shows at once. The results are broker/credentials.py's `describe_results` (Kafka's
rules: no users named, every user with a credential, by name; else one result per distinct
user named, in order: an unknown user RESOURCE_NOT_FOUND, a user named twice
DUPLICATE_RESOURCE).

Refusals, the whole answer's: no Describe on the Cluster is CLUSTER_AUTHORIZATION_FAILED; a
ZooKeeper failure UNKNOWN_SERVER_ERROR (and a WARNING line with why).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from broker.context import BrokerContext
from broker.credentials import Credentials, describe_results
from broker.security import rules
from broker.session import Session
from protocol.api.scram import DescribeUserScramCredentialsResult as UserDescribed
from protocol.errors import ClusterAuthorizationFailedError, OdradekError, UnknownServerError

API = "DescribeUserScramCredentials"
log = logging.getLogger("odradek.broker.admin")


@dataclass(frozen=True, slots=True)
class DescribeUserScramCredentials:
    users: tuple[str, ...] | None  # None or empty: every user that has a credential


@dataclass(frozen=True, slots=True)
class DescribeUserScramCredentialsResult:
    error_code: int
    error_message: str | None
    results: tuple[UserDescribed, ...] = ()


async def run(
    ctx: BrokerContext, session: Session, req: DescribeUserScramCredentials
) -> DescribeUserScramCredentialsResult:
    if not rules.allows(ctx, session, rules.DESCRIBE, rules.CLUSTER, api=API):
        error = ClusterAuthorizationFailedError
        return DescribeUserScramCredentialsResult(error.code, error.default_message)
    store = ctx.credentials
    try:
        if req.users:
            named = [u for u in dict.fromkeys(req.users) if u]
            found: dict[str, Credentials] = {u: await store.read_user(u) for u in named}
        else:
            found = await store.read_all_users()
    except OdradekError as exc:
        return DescribeUserScramCredentialsResult(exc.code, exc.message)
    except Exception as exc:  # ZooKeeper trouble
        log.warning("describing SCRAM credentials failed: %s", exc)
        return DescribeUserScramCredentialsResult(UnknownServerError.code, f"not read: {exc}")
    return DescribeUserScramCredentialsResult(0, None, tuple(describe_results(req.users, found)))
