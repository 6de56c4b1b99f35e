"""The console's login on a secured cluster: the cluster's own SASL users, a session cookie,
and who may use the broker controls.

- `check_login` asks a broker: it opens a connection as the user (the console's own TLS
  settings, the user's name and password over its SASL mechanism, SCRAM-SHA-512 on
  `cluster up --secure`), so a wrong password fails exactly as a client's would
  (SASL_AUTHENTICATION_FAILED). On that same connection it sends an AlterPartitionReassignments
  that moves nothing: the broker answers it only to a principal allowed Alter on the Cluster
  (Kafka's rule for that API), which is what kill, pause and start require. No ACL is
  evaluated here: the broker's authorizer, with its super users, decides.
- `LoginStore` keeps the sessions (pure, time injected): a random token per login, kept by the
  page in an HttpOnly, SameSite=Strict cookie; each session expires `ttl_ms` after login; at
  most `max_sessions` (the oldest go first). A session holds the user name and the Cluster
  Alter answer of its login; the password goes, with the session's token, to the session's
  View (views.py), which reads the cluster as that user for the session's life and forgets it
  when the session ends.
"""

from __future__ import annotations

import secrets
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from protocol.errors import ClusterAuthorizationFailedError, NetworkError, OdradekError

COOKIE = "odradek_console_session"
SESSION_TTL_MS = 8 * 3600 * 1000
MAX_SESSIONS = 256
MAX_NAME_CHARS = 256
MAX_PASSWORD_CHARS = 1024
LOGIN_TIMEOUT_MS = 10_000


@dataclass(frozen=True, slots=True)
class ConsoleLogin:
    user: str
    cluster_alter: bool  # the broker allowed this user Alter on the Cluster at login
    expires_ms: int


class LoginStore:
    """Sessions by token: bounded, expiring, with time given by the caller."""

    def __init__(self, ttl_ms: int = SESSION_TTL_MS, max_sessions: int = MAX_SESSIONS) -> None:
        self.ttl_ms = ttl_ms
        self.max_sessions = max_sessions
        self._by_token: OrderedDict[str, ConsoleLogin] = OrderedDict()

    def __len__(self) -> int:
        return len(self._by_token)

    def create(self, user: str, cluster_alter: bool, now_ms: int) -> str:
        self._expire(now_ms)
        while len(self._by_token) >= self.max_sessions:
            self._by_token.popitem(last=False)  # the oldest login goes first
        token = secrets.token_urlsafe(32)
        self._by_token[token] = ConsoleLogin(user, cluster_alter, now_ms + self.ttl_ms)
        return token

    def get(self, token: str | None, now_ms: int) -> ConsoleLogin | None:
        if not token:
            return None
        login = self._by_token.get(token)
        if login is None:
            return None
        if login.expires_ms <= now_ms:
            del self._by_token[token]
            return None
        return login

    def drop(self, token: str | None) -> None:
        if token:
            self._by_token.pop(token, None)

    def _expire(self, now_ms: int) -> None:
        for token in [t for t, s in self._by_token.items() if s.expires_ms <= now_ms]:
            del self._by_token[token]


def check_credentials_shape(user: Any, password: Any) -> tuple[str, str] | None:
    """(user, password) when both are non-empty strings of sane length, else None."""
    if not isinstance(user, str) or not isinstance(password, str):
        return None
    if not user or not password:
        return None
    if len(user) > MAX_NAME_CHARS or len(password) > MAX_PASSWORD_CHARS:
        return None
    return user, password


async def check_login(
    bootstrap: str, security: dict[str, Any], user: str, password: str,
    timeout_ms: int = LOGIN_TIMEOUT_MS,
) -> bool:  # fmt: skip
    """Log in to a broker as `user`; True when it also allows the user Alter on the Cluster.
    Raises the broker's error (SaslAuthenticationFailedError for a wrong password or an
    unknown user), or NetworkError when no broker of `bootstrap` answers."""
    from client.cluster import parse_bootstrap
    from protocol.api.controller import AlterPartitionReassignmentsRequest
    from transport.connection import BrokerConnection
    from transport.security import SecurityConfig

    options = dict(security, sasl_plain_username=user, sasl_plain_password=password)
    config = SecurityConfig.from_options(options)
    last: OdradekError = NetworkError(f"no broker of {bootstrap} answered")
    for host, port in parse_bootstrap(bootstrap):
        try:
            conn = await BrokerConnection.connect(
                host, port, client_id="odradek-console-login", connect_timeout_ms=timeout_ms,
                security=config,
            )  # fmt: skip
        except NetworkError as exc:
            last = exc
            continue
        try:
            probe = AlterPartitionReassignmentsRequest(timeout_ms=timeout_ms, partitions=[])
            answer = await conn.send(probe, timeout_ms=timeout_ms)
        except ClusterAuthorizationFailedError:
            return False
        finally:
            await conn.close()
        return int(answer.error_code) != ClusterAuthorizationFailedError.code
    raise last
