"""SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677) as Kafka speaks them: both ends, no I/O.

The exchange is four messages, each the bytes of one SaslAuthenticate token:

    client-first   n,[a=<authzid>],n=<saslname>,r=<client nonce>        (gs2 header "n,," then bare)
    server-first   r=<client nonce + server nonce>,s=<base64 salt>,i=<iterations>
    client-final   c=biws,r=<nonce>,p=<base64 ClientProof>              ("biws" = base64("n,,"))
    server-final   v=<base64 ServerSignature>   (or e=<error>)

    SaltedPassword  = Hi(password, salt, i)           (PBKDF2-HMAC, key length = hash length)
    ClientKey       = HMAC(SaltedPassword, "Client Key"),  StoredKey = H(ClientKey)
    ServerKey       = HMAC(SaltedPassword, "Server Key")
    AuthMessage     = client-first-bare "," server-first "," client-final-without-proof
    ClientProof     = ClientKey XOR HMAC(StoredKey, AuthMessage)
    ServerSignature = HMAC(ServerKey, AuthMessage)

The server keeps only `ScramCredential(salt, stored_key, server_key, iterations)`, stored as Kafka
writes it (ScramCredentialUtils): `salt=<b64>,stored_key=<b64>,server_key=<b64>,iterations=<n>`.
It checks a proof by recomputing StoredKey = H(ClientProof XOR ClientSignature).

Kafka's rules kept here: only the gs2 header "n" (no channel binding); an authzid, if given, must
equal the user name; user names are escaped only as RFC 5802's saslname (`=` -> `=3D`,
`,` -> `=2C`; Kafka does no other SASLprep, and neither do we); iterations 4096..16384 for both
mechanisms (ScramMechanism); extensions are accepted and ignored.

`ScramServer` and `ScramClient` are small state machines (STATES below). Every failure is
SaslAuthenticationFailedError. On the server its `message` is what Kafka sends the client (for a
wrong password or unknown user, Kafka's one generic line, so the reply does not tell which) and
`detail` is the reason for the broker's log. Nonces and salts come from an injected
`nonce` factory and salts from `random_bytes`, so that tests are repeatable.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import NoReturn

from protocol.errors import SaslAuthenticationFailedError, UsageError

RandomBytes = Callable[[int], bytes]
NonceFactory = Callable[[], str]


def new_nonce() -> str:
    """A fresh nonce: 32 random characters from [A-Za-z0-9_-] (printable, no comma)."""
    return secrets.token_urlsafe(24)


@dataclass(frozen=True, slots=True)
class ScramMechanism:
    name: str  # "SCRAM-SHA-256"
    hash_name: str  # hashlib's name
    type_code: int  # KIP-554's mechanism byte: 1 = SCRAM-SHA-256, 2 = SCRAM-SHA-512
    min_iterations: int = 4096
    max_iterations: int = 16384

    @property
    def digest_size(self) -> int:
        return hashlib.new(self.hash_name).digest_size


SCRAM_SHA_256 = ScramMechanism("SCRAM-SHA-256", "sha256", 1)
SCRAM_SHA_512 = ScramMechanism("SCRAM-SHA-512", "sha512", 2)
MECHANISMS: dict[str, ScramMechanism] = {m.name: m for m in (SCRAM_SHA_256, SCRAM_SHA_512)}
BY_TYPE_CODE: dict[int, ScramMechanism] = {m.type_code: m for m in MECHANISMS.values()}
# Kafka's default when a tool is given a password without iterations (kafka-configs.sh).
DEFAULT_ITERATIONS = 4096


def mechanism(name: str) -> ScramMechanism:
    """The SCRAM mechanism called `name`; UsageError naming the ones there are."""
    found = MECHANISMS.get(name.upper())
    if found is None:
        raise UsageError(f"{name!r} is not a SCRAM mechanism (one of {', '.join(MECHANISMS)})")
    return found


# --- credentials -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ScramCredential:
    """What the server keeps for one user and mechanism: never the password."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    def to_string(self) -> str:
        """Kafka's form (ScramCredentialUtils.credentialToString)."""
        b64 = _b64
        return (
            f"salt={b64(self.salt)},stored_key={b64(self.stored_key)},"
            f"server_key={b64(self.server_key)},iterations={self.iterations}"
        )

    @classmethod
    def from_string(cls, text: str) -> ScramCredential:
        """Parse Kafka's form; ValueError("Credentials not valid") as Kafka, for anything else."""
        props: dict[str, str] = {}
        for token in text.split(","):
            key, sep, value = token.partition("=")
            if not sep or not key:
                raise ValueError("Credentials not valid: salt, stored_key, server_key, iterations")
            props[key] = value
        if sorted(props) != ["iterations", "salt", "server_key", "stored_key"]:
            raise ValueError("Credentials not valid: salt, stored_key, server_key, iterations")
        try:
            return cls(
                salt=base64.b64decode(props["salt"], validate=True),
                stored_key=base64.b64decode(props["stored_key"], validate=True),
                server_key=base64.b64decode(props["server_key"], validate=True),
                iterations=int(props["iterations"]),
            )
        except (binascii.Error, ValueError) as exc:
            raise ValueError(f"Credentials not valid: {exc}") from None

    def __repr__(self) -> str:  # keys are secrets too: keep them out of logs
        return f"ScramCredential(iterations={self.iterations})"


def salted_password(mech: ScramMechanism, password: str, salt: bytes, iterations: int) -> bytes:
    """Hi(password, salt, i): PBKDF2-HMAC with a key as long as the hash (RFC 5802 2.2)."""
    return hashlib.pbkdf2_hmac(mech.hash_name, password.encode(), salt, iterations)


def credential_from_salted_password(
    mech: ScramMechanism, salt: bytes, salted: bytes, iterations: int
) -> ScramCredential:
    """The stored form, from what KIP-554's AlterUserScramCredentials carries."""
    client_key = _hmac(mech, salted, b"Client Key")
    return ScramCredential(
        salt=salt,
        stored_key=hashlib.new(mech.hash_name, client_key).digest(),
        server_key=_hmac(mech, salted, b"Server Key"),
        iterations=iterations,
    )


def make_credential(
    mech: ScramMechanism | str,
    password: str,
    iterations: int = DEFAULT_ITERATIONS,
    salt: bytes | None = None,
    random_bytes: RandomBytes = os.urandom,
) -> ScramCredential:
    """A fresh credential for `password` (a random 32-byte salt unless one is given)."""
    m = mechanism(mech) if isinstance(mech, str) else mech
    check_iterations(m, iterations)
    salt = random_bytes(32) if salt is None else salt
    return credential_from_salted_password(
        m, salt, salted_password(m, password, salt, iterations), iterations
    )


def check_iterations(mech: ScramMechanism, iterations: int) -> None:
    """UsageError unless Kafka would accept `iterations` for `mech`."""
    if not mech.min_iterations <= iterations <= mech.max_iterations:
        raise UsageError(
            f"iterations {iterations} for {mech.name} is outside "
            f"{mech.min_iterations}..{mech.max_iterations}"
        )


# --- names --------------------------------------------------------------------------------------


def sasl_name(username: str) -> str:
    """RFC 5802's saslname: `=` -> `=3D`, `,` -> `=2C` (ScramFormatter.saslName)."""
    return username.replace("=", "=3D").replace(",", "=2C")


def username_of(name: str) -> str:
    """The inverse of sasl_name; ValueError for a lone `=` (ScramFormatter.username)."""
    unescaped = name.replace("=2C", ",")
    if "=" in unescaped.replace("=3D", ""):
        raise ValueError(f"Invalid username: {name}")
    return unescaped.replace("=3D", "=")


# --- messages (ScramMessages' grammar) ----------------------------------------------------------

_SASLNAME = r"(?:[\x01-\x2b\x2d-\x3c\x3e-\x7f]|=2C|=3D)+"
_PRINTABLE = r"[\x21-\x2b\x2d-\x7e]+"
_VALUE = r"[\x01-\x2b\x2d-\x7f]+"
_B64 = r"(?:[A-Za-z0-9/+]{4})*(?:[A-Za-z0-9/+]{3}=|[A-Za-z0-9/+]{2}==)?"
_EXT = rf"(?:,[A-Za-z]+={_VALUE})*"
_RESERVED = rf"(?:m={_VALUE},)?"
CLIENT_FIRST = re.compile(
    rf"n,(?:a=(?P<authzid>{_SASLNAME}))?,(?P<bare>{_RESERVED}n=(?P<name>{_SASLNAME}),"
    rf"r=(?P<nonce>{_PRINTABLE}){_EXT})"
)
SERVER_FIRST = re.compile(
    rf"{_RESERVED}r=(?P<nonce>{_PRINTABLE}),s=(?P<salt>{_B64}),i=(?P<iterations>[0-9]{{1,9}}){_EXT}"
)
CLIENT_FINAL = re.compile(
    rf"(?P<without_proof>c=(?P<channel>{_B64}),r=(?P<nonce>{_PRINTABLE}){_EXT}),p=(?P<proof>{_B64})"
)
SERVER_FINAL = re.compile(rf"(?:e=(?P<error>{_VALUE})|v=(?P<signature>{_B64})){_EXT}")
GS2_HEADER_B64 = "biws"  # base64("n,,"): no channel binding, no authzid


class ScramState(Enum):
    """Each side's states; `_expect` below refuses a message in any other one."""

    # server: waits for client-first; -> RECEIVE_CLIENT_FINAL once it has sent server-first
    RECEIVE_CLIENT_FIRST = "receive client-first"
    # server: waits for client-final; -> COMPLETE when the proof checks, else FAILED
    RECEIVE_CLIENT_FINAL = "receive client-final"
    # client: has nothing sent yet; -> RECEIVE_SERVER_FIRST after client_first()
    SEND_CLIENT_FIRST = "send client-first"
    # client: waits for server-first; -> RECEIVE_SERVER_FINAL after it sends client-final
    RECEIVE_SERVER_FIRST = "receive server-first"
    # client: waits for server-final; -> COMPLETE when the server's signature checks
    RECEIVE_SERVER_FINAL = "receive server-final"
    COMPLETE = "complete"  # the exchange succeeded; nothing more may come
    FAILED = "failed"  # an error ended it; nothing more may come


def invalid_credentials_message(mech_name: str, reauthentication: bool = False) -> str:
    """The line Kafka's broker sends for a wrong password or unknown user
    (SaslServerAuthenticator): it does not say which."""
    during = "re-authentication" if reauthentication else "authentication"
    return (
        f"Authentication failed during {during} due to invalid credentials "
        f"with SASL mechanism {mech_name}"
    )


class ScramFailure(SaslAuthenticationFailedError):
    """SASL_AUTHENTICATION_FAILED from a SCRAM exchange. `message` is what the peer may be told;
    `detail` is why, for our own log (it never holds a password or key)."""

    def __init__(self, message: str, detail: str | None = None) -> None:
        super().__init__(message)
        self.detail = detail or message


# --- server -------------------------------------------------------------------------------------


class _Exchange:
    """What both ends of an exchange share: its state, and failing in Kafka's words."""

    role = ""
    state: ScramState

    def _expect(self, state: ScramState) -> None:
        if self.state is not state:
            self._fail(f"Unexpected challenge in Sasl {self.role} state {self.state.name}")

    def _strict_b64(self, text: str) -> bytes:
        data = _b64decode(text)
        if data is None:
            self._fail(f"Invalid SCRAM message: non-canonical base64 {_excerpt(text)!r}")
        return data

    def _decode(self, token: bytes) -> str:
        try:
            return token.decode()
        except UnicodeDecodeError:
            self._fail("Invalid SCRAM message: not UTF-8")

    def _fail(self, message: str) -> NoReturn:
        self.state = ScramState.FAILED
        raise ScramFailure(message)


class ScramServer(_Exchange):
    """The broker's end of one exchange.

        server = ScramServer(SCRAM_SHA_512)
        username = server.receive_client_first(token)       # then look up the credential
        reply = server.server_first(credential_or_None)
        reply = server.receive_client_final(token)          # server.complete is now True

    `respond(token, lookup)` does the same one token at a time.
    """

    role = "server"

    def __init__(self, mech: ScramMechanism, nonce: NonceFactory = new_nonce) -> None:
        self.mechanism = mech
        self.state = ScramState.RECEIVE_CLIENT_FIRST
        self.username: str | None = None
        self._new_nonce = nonce
        self._client_nonce = ""
        self._client_first_bare = ""
        self._server_first = ""
        self._credential: ScramCredential | None = None

    @property
    def complete(self) -> bool:
        return self.state is ScramState.COMPLETE

    def respond(self, token: bytes, lookup: Callable[[str], ScramCredential | None]) -> bytes:
        """The reply to the client's next token; `lookup(username)` finds its credential."""
        if self.state is ScramState.RECEIVE_CLIENT_FIRST:
            return self.server_first(lookup(self.receive_client_first(token)))
        return self.receive_client_final(token)

    def receive_client_first(self, token: bytes) -> str:
        """Parse client-first; returns the user name whose credential server_first needs."""
        self._expect(ScramState.RECEIVE_CLIENT_FIRST)
        text = self._decode(token)
        match = CLIENT_FIRST.fullmatch(text)
        if match is None:
            self._fail(f"Invalid SCRAM client first message format: {_excerpt(text)}")
        try:
            username = username_of(match["name"])
        except ValueError as exc:
            self._fail(str(exc))
        authzid = match["authzid"]
        if authzid is not None and authzid != username:
            self._fail(
                "Authentication failed: Client requested an authorization id that is "
                "different from username"
            )
        self.username = username
        self._client_nonce = match["nonce"]
        self._client_first_bare = match["bare"]
        return username

    def server_first(self, credential: ScramCredential | None) -> bytes:
        """server-first for the user named in client-first (None: no such user or mechanism)."""
        self._expect(ScramState.RECEIVE_CLIENT_FIRST)
        if self.username is None:
            self._fail("server-first before client-first")
        if credential is None:
            self._fail_generic(f"no {self.mechanism.name} credential for user {self.username!r}")
        if credential.iterations < self.mechanism.min_iterations:
            self._fail_generic(
                f"Iterations {credential.iterations} is less than the minimum "
                f"{self.mechanism.min_iterations} for {self.mechanism.name}"
            )
        nonce = self._client_nonce + self._new_nonce()
        self._credential = credential
        self._server_first = f"r={nonce},s={_b64(credential.salt)},i={credential.iterations}"
        self.state = ScramState.RECEIVE_CLIENT_FINAL
        return self._server_first.encode()

    def receive_client_final(self, token: bytes) -> bytes:
        """Check the proof; server-final with the server's signature, or ScramFailure."""
        self._expect(ScramState.RECEIVE_CLIENT_FINAL)
        assert self._credential is not None
        text = self._decode(token)
        match = CLIENT_FINAL.fullmatch(text)
        if match is None:
            self._fail(f"Invalid SCRAM client final message format: {_excerpt(text)}")
        nonce = self._server_first[2 : self._server_first.index(",s=")]
        # librdkafka before 2.6.1 (confluentinc/librdkafka#4895: Debian's kcat links 2.0.2)
        # puts its own nonce in front of the combined one a second time. Kafka 3.8.1-3.9 took
        # any nonce ending with the combined one; we take exactly that doubled form, which
        # still carries the server's nonce whole, and nothing else.
        if match["nonce"] not in (nonce, self._client_nonce + nonce):
            self._fail("Invalid client nonce in the final client message.")
        auth = f"{self._client_first_bare},{self._server_first},{match['without_proof']}".encode()
        proof = self._strict_b64(match["proof"])
        signature = _hmac(self.mechanism, self._credential.stored_key, auth)
        if len(proof) != len(signature):
            self._fail_generic("Invalid client credentials (proof of the wrong length)")
        stored = hashlib.new(self.mechanism.hash_name, _xor(proof, signature)).digest()
        if not hmac.compare_digest(stored, self._credential.stored_key):
            self._fail_generic("Invalid client credentials")
        server_signature = _hmac(self.mechanism, self._credential.server_key, auth)
        self._credential = None
        self.state = ScramState.COMPLETE
        return f"v={_b64(server_signature)}".encode()

    def _fail(self, message: str) -> NoReturn:
        self._credential = None
        super()._fail(message)

    def _fail_generic(self, detail: str) -> NoReturn:
        """Wrong password, unknown user: the client hears Kafka's one line, the log the reason."""
        self.state = ScramState.FAILED
        self._credential = None
        raise ScramFailure(invalid_credentials_message(self.mechanism.name), detail)


# --- client -------------------------------------------------------------------------------------


class ScramClient(_Exchange):
    """The client's end of one exchange.

    client = ScramClient(SCRAM_SHA_512, "alice", "alice-secret")
    token = client.client_first()
    token = client.client_final(server_first)
    client.receive_server_final(server_final)          # client.complete is now True
    """

    role = "client"

    def __init__(
        self,
        mech: ScramMechanism,
        username: str,
        password: str,
        nonce: NonceFactory = new_nonce,
    ) -> None:
        self.mechanism = mech
        self.username = username
        self._password = password
        self._new_nonce = nonce
        self.state = ScramState.SEND_CLIENT_FIRST
        self._nonce = ""
        self._client_first_bare = ""
        self._server_signature = b""

    @property
    def complete(self) -> bool:
        return self.state is ScramState.COMPLETE

    def client_first(self) -> bytes:
        self._expect(ScramState.SEND_CLIENT_FIRST)
        self._nonce = self._new_nonce()
        self._client_first_bare = f"n={sasl_name(self.username)},r={self._nonce}"
        self.state = ScramState.RECEIVE_SERVER_FIRST
        return f"n,,{self._client_first_bare}".encode()

    def client_final(self, server_first: bytes) -> bytes:
        self._expect(ScramState.RECEIVE_SERVER_FIRST)
        text = self._decode(server_first)
        match = SERVER_FIRST.fullmatch(text)
        if match is None:
            self._fail(f"Invalid SCRAM server first message format: {_excerpt(text)}")
        nonce, iterations = match["nonce"], int(match["iterations"])
        if not nonce.startswith(self._nonce) or nonce == self._nonce:
            self._fail("Invalid server nonce: does not start with client nonce")
        m = self.mechanism
        if iterations < m.min_iterations:
            self._fail(
                f"Requested iterations {iterations} is less than the minimum "
                f"{m.min_iterations} for {m.name}"
            )
        if iterations > m.max_iterations:
            self._fail(
                f"Requested iterations {iterations} is more than the maximum "
                f"{m.max_iterations} for {m.name}"
            )
        salted = salted_password(m, self._password, self._strict_b64(match["salt"]), iterations)
        without_proof = f"c={GS2_HEADER_B64},r={nonce}"
        auth = f"{self._client_first_bare},{text},{without_proof}".encode()
        client_key = _hmac(m, salted, b"Client Key")
        stored_key = hashlib.new(m.hash_name, client_key).digest()
        proof = _xor(client_key, _hmac(m, stored_key, auth))
        self._server_signature = _hmac(m, _hmac(m, salted, b"Server Key"), auth)
        self.state = ScramState.RECEIVE_SERVER_FINAL
        return f"{without_proof},p={_b64(proof)}".encode()

    def receive_server_final(self, server_final: bytes) -> None:
        self._expect(ScramState.RECEIVE_SERVER_FINAL)
        text = self._decode(server_final)
        match = SERVER_FINAL.fullmatch(text)
        if match is None:
            self._fail(f"Invalid SCRAM server final message format: {_excerpt(text)}")
        if match["error"] is not None:
            self._fail(
                f"Sasl authentication using {self.mechanism.name} failed with error: "
                f"{match['error']}"
            )
        if not hmac.compare_digest(self._strict_b64(match["signature"]), self._server_signature):
            self._fail("Invalid server signature in server final message")
        self.state = ScramState.COMPLETE


# --- helpers ------------------------------------------------------------------------------------


EXCERPT_CHARS = 64  # of a malformed message, in an error: a token may be megabytes


def _excerpt(text: str) -> str:
    """A malformed message as an error shows it: its start, and its length when cut."""
    if len(text) <= EXCERPT_CHARS:
        return text
    return f"{text[:EXCERPT_CHARS]}... ({len(text)} characters)"


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _b64decode(text: str) -> bytes | None:
    """Base64 the grammar already matched, read strictly: the unused low bits of the last
    character must be zero, so that one proof has one spelling (a changed byte always fails).
    None if they are not."""
    data = base64.b64decode(text)
    return data if _b64(data) == text else None


def _hmac(mech: ScramMechanism, key: bytes, data: bytes) -> bytes:
    return hmac.new(key, data, mech.hash_name).digest()


def _xor(a: bytes, b: bytes) -> bytes:
    return bytes(x ^ y for x, y in zip(a, b, strict=True))
