"""AlterUserScramCredentials (KIP-554): set (upsert) or delete users' SCRAM credentials. The
client salts and iterates each password; the broker derives the stored and server keys.

The checks are broker/credentials.py's `plan_alteration` (Kafka's ZkAdminManager, in Kafka's
order: an invalid entry fails its whole user, then a (user, mechanism) named twice, then
deleting a credential the user does not have); each valid user's changes are then written to
ZooKeeper (`ctx.credentials`) and every broker's cache follows the change notification.
Results: the users in error first, then the users written, one result per user, as Kafka. A
ZooKeeper failure is that user's UNKNOWN_SERVER_ERROR (and a WARNING line with why).

Refusals: no Alter on the Cluster is CLUSTER_AUTHORIZATION_FAILED for every user named.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from broker.context import BrokerContext
from broker.credentials import Changes, CredentialStore, plan_alteration
from broker.security import rules
from broker.session import Session
from protocol.api.scram import ScramCredentialDeletion, ScramCredentialUpsertion
from protocol.errors import ClusterAuthorizationFailedError, OdradekError, UnknownServerError

API = "AlterUserScramCredentials"
log = logging.getLogger("odradek.broker.admin")


@dataclass(frozen=True, slots=True)
class AlterUserScramCredentials:
    deletions: tuple[ScramCredentialDeletion, ...]
    upsertions: tuple[ScramCredentialUpsertion, ...]  # salted passwords: kept out of reprs


@dataclass(frozen=True, slots=True)
class Altered:
    user: str
    error_code: int
    error_message: str | None = None


@dataclass(frozen=True, slots=True)
class AlterUserScramCredentialsResult:
    results: tuple[Altered, ...]  # the users in error first, then those written


async def run(
    ctx: BrokerContext, session: Session, req: AlterUserScramCredentials
) -> AlterUserScramCredentialsResult:
    named = list(dict.fromkeys([u.name for u in req.upsertions] + [d.name for d in req.deletions]))
    if not rules.allows(ctx, session, rules.ALTER, rules.CLUSTER, api=API):
        error = ClusterAuthorizationFailedError
        return AlterUserScramCredentialsResult(
            tuple(Altered(u, error.code, error.default_message) for u in named)
        )
    store = ctx.credentials
    existing = {u: await store.read_user(u) for u in named if u}
    plan = plan_alteration(req.upsertions, req.deletions, existing)
    results = [Altered(u, c, m) for u, (c, m) in plan.errors.items()]
    for user, changes in plan.changes.items():
        results.append(await _write(store, user, changes, session))
    return AlterUserScramCredentialsResult(tuple(results))


async def _write(store: CredentialStore, user: str, changes: Changes, session: Session) -> Altered:
    try:
        await store.alter(user, changes)
    except OdradekError as exc:
        return Altered(user, exc.code, exc.message)
    except Exception as exc:  # ZooKeeper trouble: the user is told, the log keeps why
        log.warning("altering the SCRAM credentials of %s failed: %s", user, exc)
        return Altered(user, UnknownServerError.code, f"not written: {exc}")
    log.info("user %s SCRAM credentials altered by %s", user, session.principal)
    return Altered(user, 0, None)
