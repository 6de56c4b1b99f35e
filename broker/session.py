"""One connection's session: who is on the other end, and how they came in.

broker/server.py makes a `Session` when a connection is accepted and hands it to the door
(`route`, `admit`) and to every handler (`handle(ctx, request, session)`), so that a handler
knows the principal it answers (authorization, quotas) without reaching into the transport.

- `listener` and `security_protocol`: the listener the connection came in on (Kafka's listener
  name, e.g. "PLAINTEXT", "CLIENT", "REPLICATION") and its security protocol (PLAINTEXT, SSL,
  SASL_PLAINTEXT, SASL_SSL).
- `peer_host`, `peer_port`: the client's address (ACL host matching uses `peer_host`).
- `principal`: User:ANONYMOUS until authentication says otherwise: a client certificate's
  mapped subject on SSL listeners, the SASL user on SASL_* listeners.
- `authenticated`: False on SASL_* listeners until the SASL exchange succeeds; the door
  refuses everything but the handshake APIs until then (broker/doors.py `admit`).
- `client_id` and the client's software name and version (KIP-511, ApiVersions v3+), for logs.
- `sasl`: the SASL exchange in progress, and `credential_expiry_ms` (KIP-368: past it, only a
  re-authentication is accepted), owned by broker/security/.
- `on_close`: what to do when the connection closes, by key (a handler's narrow callback, as
  Kafka's ConnectionDisconnectListener: a share session's member gives back its records).
  The server calls `closed()` once, when the connection is lost; a hook added after that runs
  at once.

`Refusal` lives here too, below both the door (broker/doors.py) and the codecs that raise it
(a failed SASL exchange's last answer, broker/codecs/*/sasl.py): the door imports the codecs.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

from protocol.principal import ANONYMOUS, KafkaPrincipal
from transport.security import (
    PLAINTEXT,
    SASL_PLAINTEXT,
    SASL_SSL,
    SECURITY_PROTOCOLS,
    SSL,
    uses_sasl,
    uses_tls,
)

log = logging.getLogger("odradek.broker.server")

__all__ = [
    "PLAINTEXT",
    "SASL_PLAINTEXT",
    "SASL_SSL",
    "SECURITY_PROTOCOLS",
    "SSL",
    "Refusal",
    "Session",
    "uses_sasl",
    "uses_tls",
]


class Refusal(Exception):
    """A frame the door will not serve: `why` is logged, `reply` (if any) sent, then close."""

    def __init__(
        self, why: str, reply: bytes | None = None, logged: bool = False, code: int | None = None
    ) -> None:
        super().__init__(why)
        self.why = why
        self.reply = reply
        self.logged = logged  # the door logged it already: the server's line is DEBUG
        self.code = code  # the error `reply` carries, when a handler raised it (for metrics)


@dataclass(slots=True, eq=False)
class Session:
    listener: str = PLAINTEXT
    security_protocol: str = PLAINTEXT
    peer_host: str = ""
    peer_port: int = -1
    principal: KafkaPrincipal = ANONYMOUS
    authenticated: bool = True
    client_id: str | None = None
    client_software_name: str | None = None
    client_software_version: str | None = None
    sasl: Any = None  # the SASL exchange in progress (broker/security/sasl.py)
    credential_expiry_ms: int | None = None  # KIP-368: re-authenticate before this
    on_close: dict[Hashable, Callable[[], None]] = field(default_factory=dict)
    is_closed: bool = False

    @classmethod
    def accepted(
        cls, listener: str, security_protocol: str, peer_host: str, peer_port: int
    ) -> Session:
        """The session of a connection just accepted: unauthenticated on SASL listeners."""
        return cls(listener, security_protocol, peer_host, peer_port,
                   authenticated=not uses_sasl(security_protocol))  # fmt: skip

    def when_closed(self, key: Hashable, hook: Callable[[], None]) -> None:
        """Run `hook` when the connection closes (at once if it has); one hook per key."""
        if self.is_closed:
            hook()
        else:
            self.on_close[key] = hook

    def closed(self) -> None:
        """The connection is gone: run the hooks, each once (one failing does not stop the
        others: it is logged)."""
        self.is_closed = True
        hooks, self.on_close = self.on_close, {}
        for hook in hooks.values():
            try:
                hook()
            except Exception:
                log.exception("a connection-close hook failed")

    @property
    def peer(self) -> str:
        return f"{self.peer_host}:{self.peer_port}"

    def software(self) -> str:
        """The client's software as its ApiVersions named it, for log lines."""
        if not self.client_software_name:
            return "software unknown"
        return f"{self.client_software_name} {self.client_software_version or '?'}"
