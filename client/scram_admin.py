"""SCRAM credentials in the admin client (KIP-554), what `odradek users` uses. AsyncAdmin inherits
`ScramAdmin`; the sync Admin inherits `SyncScramAdmin`, whose methods run the same calls on its
loop.

    alter_user_scram_credentials     AlterUserScramCredentials (51): set (upsert) or delete users'
                                     credentials, per mechanism
    describe_user_scram_credentials  DescribeUserScramCredentials (50): each user's mechanisms
                                     and iteration counts (every user's when none is named)

The password never leaves the client: an upsertion sends a random salt and the salted password
(Hi(password, salt, iterations), protocol/scram.py), from which the broker derives what it
stores. A refused change raises its error naming the user (UnacceptableCredentialError for too few
iterations, ResourceNotFoundError for deleting or describing what does not exist, ...).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from protocol.api.scram import (
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsResponse,
    DescribeUserScramCredentialsRequest,
    DescribeUserScramCredentialsResponse,
    ScramCredentialDeletion,
    ScramCredentialUpsertion,
)
from protocol.errors import UsageError, for_code
from protocol.scram import BY_TYPE_CODE, DEFAULT_ITERATIONS, mechanism, salted_password

SALT_BYTES = 32


@dataclass(frozen=True, slots=True)
class UserScramCredentialUpsertion:
    """Set `user`'s credential for `mechanism` ("SCRAM-SHA-256" or "SCRAM-SHA-512")."""

    user: str
    mechanism: str
    password: str = field(repr=False)
    iterations: int = DEFAULT_ITERATIONS
    salt: bytes | None = field(default=None, repr=False)  # None: random


@dataclass(frozen=True, slots=True)
class UserScramCredentialDeletion:
    user: str
    mechanism: str


@dataclass(frozen=True, slots=True)
class ScramCredentialInfo:
    mechanism: str
    iterations: int


def _upsertion(u: UserScramCredentialUpsertion) -> ScramCredentialUpsertion:
    mech = mechanism(u.mechanism)
    salt = u.salt if u.salt is not None else os.urandom(SALT_BYTES)
    # out of range: the broker refuses it (UNACCEPTABLE_CREDENTIAL); do not spend time hashing
    usable = 0 < u.iterations <= mech.max_iterations
    salted = salted_password(mech, u.password, salt, u.iterations) if usable else b""
    return ScramCredentialUpsertion(u.user, mech.type_code, u.iterations, salt, salted)


def _mechanism_name(type_code: int) -> str:
    found = BY_TYPE_CODE.get(type_code)
    return found.name if found is not None else f"UNKNOWN({type_code})"


class ScramAdmin:
    request_timeout_ms: int
    _send_admin: Callable[..., Any]

    async def alter_user_scram_credentials(
        self,
        upsertions: Iterable[UserScramCredentialUpsertion] = (),
        deletions: Iterable[UserScramCredentialDeletion] = (),
    ) -> None:
        ups = [_upsertion(u) for u in upsertions]
        dels = [
            ScramCredentialDeletion(d.user, mechanism(d.mechanism).type_code) for d in deletions
        ]
        if not ups and not dels:
            raise UsageError("nothing to alter: no upsertion and no deletion")
        req = AlterUserScramCredentialsRequest(dels, ups)
        resp: AlterUserScramCredentialsResponse = await self._send_admin(
            req, self.request_timeout_ms
        )
        for result in resp.results:
            if result.error_code:
                error = for_code(result.error_code)
                raise error(
                    f"user {result.user!r}: {result.error_message or error.default_message}"
                )

    async def describe_user_scram_credentials(
        self, users: Iterable[str] | None = None
    ) -> dict[str, list[ScramCredentialInfo]]:
        """user -> its credentials' mechanisms and iterations; a named user without any
        raises ResourceNotFoundError."""
        req = DescribeUserScramCredentialsRequest(None if users is None else list(users))
        resp: DescribeUserScramCredentialsResponse = await self._send_admin(
            req, self.request_timeout_ms
        )
        if resp.error_code:
            error = for_code(resp.error_code)
            raise error(resp.error_message or error.default_message)
        out: dict[str, list[ScramCredentialInfo]] = {}
        for result in resp.results:
            if result.error_code:
                error = for_code(result.error_code)
                raise error(
                    f"user {result.user!r}: {result.error_message or error.default_message}"
                )
            out[result.user] = [
                ScramCredentialInfo(_mechanism_name(i.mechanism), i.iterations)
                for i in result.credential_infos
            ]
        return out


class SyncScramAdmin:
    """The same calls on the sync Admin (client/sync.py), each run on its loop."""

    _run: Callable[..., Any]

    def alter_user_scram_credentials(
        self,
        upsertions: Iterable[UserScramCredentialUpsertion] = (),
        deletions: Iterable[UserScramCredentialDeletion] = (),
    ) -> None:
        ups, dels = list(upsertions), list(deletions)
        self._run(lambda a: a.alter_user_scram_credentials(ups, dels))

    def describe_user_scram_credentials(
        self, users: Iterable[str] | None = None
    ) -> dict[str, list[ScramCredentialInfo]]:
        named = None if users is None else list(users)
        result: dict[str, list[ScramCredentialInfo]] = self._run(
            lambda a: a.describe_user_scram_credentials(named)
        )
        return result
