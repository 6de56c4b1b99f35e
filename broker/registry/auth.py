"""HTTP Basic for the schema registry, checked against the cluster's SCRAM credentials.

With `schema_registry_authentication = "http_basic"` every request carries
`Authorization: Basic base64(user:password)` (confluent-kafka's `basic.auth.user.info`), and
the user is a SCRAM user of the cluster (/config/users, the same credentials a SASL login
checks). The broker keeps no password, so the password is checked as Redpanda checks it: for
a mechanism the user has a credential of (SCRAM-SHA-512 first), SaltedPassword =
PBKDF2(password, the stored salt, the stored iterations), and H(HMAC(SaltedPassword,
"Client Key")) must equal the stored key (compared in constant time). The request's
principal is then User:<user>. No header, a header that is not Basic, an unknown user or a
wrong password are all 401 with Confluent's body `{"error_code": 401, "message":
"Unauthorized"}` and `WWW-Authenticate: Basic` (one answer: a prober learns nothing of which
users exist).

PBKDF2 with 4096 iterations of SHA-512 takes about 9 ms: it runs in a worker thread
(hashlib's PBKDF2 releases the GIL), never on the broker's loop, and a successful check is
remembered, keyed by the user and a keyed hash of the password (a random key per process),
for as long as the user's credential is the same (a changed or deleted credential checks
again). At most `REMEMBERED_MAX` entries, the oldest dropped. Failed checks are not
remembered.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import hmac
import secrets
from collections import OrderedDict
from collections.abc import Callable

from coordinator.schema_registry.errors import RegistryError
from protocol.principal import KafkaPrincipal
from protocol.scram import MECHANISMS, ScramCredential, salted_password

AUTHENTICATIONS = ("none", "http_basic")  # Redpanda's names for schema_registry_api's methods
REMEMBERED_MAX = 1024
PREFERRED = ("SCRAM-SHA-512", "SCRAM-SHA-256")
Lookup = Callable[[str, str], ScramCredential | None]  # (mechanism, user) -> credential


def unauthorized() -> RegistryError:
    return RegistryError(401, 401, "Unauthorized")


def basic_login(header: str | None) -> tuple[str, str]:
    """(user, password) of an `Authorization: Basic ...` value; 401 for anything else."""
    scheme, _, token = (header or "").strip().partition(" ")
    if scheme.lower() != "basic":
        raise unauthorized()
    try:
        text = base64.b64decode(token.strip(), validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        raise unauthorized() from None
    user, sep, password = text.partition(":")
    if not sep or not user:
        raise unauthorized()
    return user, password


def password_matches(mechanism: str, credential: ScramCredential, password: str) -> bool:
    """Does `password` give the credential's stored key (RFC 5802's StoredKey)?"""
    mech = MECHANISMS[mechanism]
    salted = salted_password(mech, password, credential.salt, credential.iterations)
    client_key = hmac.new(salted, b"Client Key", mech.hash_name).digest()
    stored_key = hashlib.new(mech.hash_name, client_key).digest()
    return hmac.compare_digest(stored_key, credential.stored_key)


class BasicAuth:
    """The registry's login: an Authorization header to a principal, or 401."""

    def __init__(self, lookup: Lookup, remembered_max: int = REMEMBERED_MAX) -> None:
        self.lookup = lookup
        self.remembered_max = remembered_max
        self._key = secrets.token_bytes(32)
        self._remembered: OrderedDict[tuple[str, bytes], ScramCredential] = OrderedDict()

    def _credential(self, user: str) -> tuple[str, ScramCredential] | None:
        for mechanism in PREFERRED:
            found = self.lookup(mechanism, user)
            if found is not None:
                return mechanism, found
        return None

    async def principal(self, header: str | None) -> KafkaPrincipal:
        user, password = basic_login(header)
        found = self._credential(user)
        if found is None:
            raise unauthorized()
        mechanism, credential = found
        key = (user, hmac.new(self._key, password.encode(), "sha256").digest())
        if self._remembered.get(key) == credential:
            self._remembered.move_to_end(key)
            return KafkaPrincipal.user(user)
        matches = await asyncio.to_thread(password_matches, mechanism, credential, password)
        if not matches:
            raise unauthorized()
        self._remembered[key] = credential
        while len(self._remembered) > self.remembered_max:
            self._remembered.popitem(last=False)
        return KafkaPrincipal.user(user)
