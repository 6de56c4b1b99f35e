"""SCRAM credentials as the broker's handlers see them, and KIP-554's decisions as pure functions.

`ctx.credentials` is a `CredentialStore`: the daemon wires the `CredentialCache` of
coordinator/cluster/scram_credentials.py behind it (/config/users, followed through notifications),
tests an in-memory fake. The SASL server calls `lookup(mechanism, user)`, a dictionary read.
Describe and Alter read ZooKeeper itself, so that an answer never lags a write made through
another broker.

`plan_alteration` is Kafka's ZkAdminManager.alterUserScramCredentials as a function of the
request and the mechanisms each user has: per user, an error (code, message) or the changes to
write (mechanism -> credential, or None to delete). `describe_results` is its describe.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from protocol.api.scram import (
    CredentialInfo,
    DescribeUserScramCredentialsResult,
    ScramCredentialDeletion,
    ScramCredentialUpsertion,
)
from protocol.errors import (
    DuplicateResourceError,
    ResourceNotFoundError,
    UnacceptableCredentialError,
    UnsupportedSaslMechanismError,
)
from protocol.scram import (
    BY_TYPE_CODE,
    MECHANISMS,
    ScramCredential,
    credential_from_salted_password,
)

Credentials = dict[str, ScramCredential]  # mechanism name -> credential
Changes = dict[str, ScramCredential | None]  # mechanism name -> new credential, None: delete


class CredentialStore(Protocol):
    def lookup(self, mechanism: str, user: str) -> ScramCredential | None:
        """The credential the SASL server checks a login against (None: no such user or no
        credential for that mechanism)."""
        ...

    async def read_user(self, user: str) -> Credentials:
        """The user's credentials as ZooKeeper holds them now ({} when none)."""
        ...

    async def read_all_users(self) -> dict[str, Credentials]:
        """Every user with a credential, as ZooKeeper holds them now."""
        ...

    async def alter(self, user: str, changes: Changes) -> None:
        """Write the changes (keeping the user's other config keys) and notify every broker."""
        ...


@dataclass(frozen=True, slots=True)
class Plan:
    errors: dict[str, tuple[int, str]]  # user -> (error code, message)
    changes: dict[str, Changes]  # user -> what to write


EMPTY_USER = "Username must not be empty"
UNKNOWN_MECHANISM = "Unknown SCRAM mechanism"
MAX_ITERATIONS = 16384


def upsertion_error(u: ScramCredentialUpsertion) -> tuple[int, str] | None:
    if not u.name:
        return UnacceptableCredentialError.code, EMPTY_USER
    mech = BY_TYPE_CODE.get(u.mechanism)
    if mech is None:
        return UnsupportedSaslMechanismError.code, UNKNOWN_MECHANISM
    if u.iterations < mech.min_iterations:
        return UnacceptableCredentialError.code, "Too few iterations"
    if u.iterations > MAX_ITERATIONS:
        return UnacceptableCredentialError.code, "Too many iterations"
    return None


def deletion_error(d: ScramCredentialDeletion) -> tuple[int, str] | None:
    if not d.name:
        return UnacceptableCredentialError.code, EMPTY_USER
    if d.mechanism not in BY_TYPE_CODE:
        return UnsupportedSaslMechanismError.code, UNKNOWN_MECHANISM
    return None


def plan_alteration(
    upsertions: Sequence[ScramCredentialUpsertion],
    deletions: Sequence[ScramCredentialDeletion],
    existing: Mapping[str, Credentials],
) -> Plan:
    """Kafka's checks, in Kafka's order: an invalid entry fails its whole user; then a (user,
    mechanism) named twice; then deleting a credential the user does not have. `existing` holds
    the current credentials of every user named."""
    errors: dict[str, tuple[int, str]] = {}
    for entry_error in [(d.name, deletion_error(d)) for d in deletions] + [
        (u.name, upsertion_error(u)) for u in upsertions
    ]:
        user, error = entry_error
        if error is not None:
            errors[user] = error
    entries = [(u.name, u.mechanism) for u in upsertions] + [
        (d.name, d.mechanism) for d in deletions
    ]
    pairs = Counter(e for e in entries if e[0] not in errors)
    for (user, _), count in pairs.items():
        if count > 1:
            errors[user] = (
                DuplicateResourceError.code,
                "A user credential cannot be altered twice in the same request",
            )
    for d in deletions:
        name = BY_TYPE_CODE[d.mechanism].name if d.mechanism in BY_TYPE_CODE else ""
        if d.name not in errors and name not in existing.get(d.name, {}):
            errors[d.name] = (
                ResourceNotFoundError.code,
                "Attempt to delete a user credential that does not exist",
            )
    changes: dict[str, Changes] = {}
    for d in deletions:
        if d.name not in errors:
            changes.setdefault(d.name, {})[BY_TYPE_CODE[d.mechanism].name] = None
    for u in upsertions:
        if u.name not in errors:
            mech = BY_TYPE_CODE[u.mechanism]
            credential = credential_from_salted_password(
                mech, u.salt, u.salted_password, u.iterations
            )
            changes.setdefault(u.name, {})[mech.name] = credential
    return Plan(errors, changes)


def describe_results(
    users: Sequence[str] | None, found: Mapping[str, Credentials]
) -> list[DescribeUserScramCredentialsResult]:
    """Kafka's describe: every user with a credential (sorted) when `users` is None or empty;
    else one result per distinct user named, in order, an empty name or a user without a
    credential RESOURCE_NOT_FOUND, a user named twice DUPLICATE_RESOURCE."""
    if not users:
        return [_described(u, found[u]) for u in sorted(found) if found[u]]
    counts = Counter(users)
    results = []
    for user in dict.fromkeys(users):
        if not user:
            results.append(_failed(user, ResourceNotFoundError.code, EMPTY_USER))
        elif counts[user] > 1:
            message = (
                "Cannot describe SCRAM credentials for the same user twice in a single "
                f"request: {user}"
            )
            results.append(_failed(user, DuplicateResourceError.code, message))
        elif not found.get(user):
            message = f"Attempt to describe a user credential that does not exist: {user}"
            results.append(_failed(user, ResourceNotFoundError.code, message))
        else:
            results.append(_described(user, found[user]))
    return results


def _described(user: str, creds: Credentials) -> DescribeUserScramCredentialsResult:
    infos = [
        CredentialInfo(MECHANISMS[m].type_code, c.iterations)
        for m, c in sorted(creds.items(), key=lambda mc: MECHANISMS[mc[0]].type_code)
    ]
    return DescribeUserScramCredentialsResult(user, 0, None, infos)


def _failed(user: str, code: int, message: str) -> DescribeUserScramCredentialsResult:
    return DescribeUserScramCredentialsResult(user, code, message, [])
