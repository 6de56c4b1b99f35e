"""How a connection of ours secures itself: the client's and the broker's own connections alike.

`SecurityConfig` carries kafka-python's names for the settings (security_protocol, ssl_cafile,
ssl_certfile, ssl_keyfile, ssl_password, ssl_check_hostname, or a ready `ssl_context`), and the
SASL settings (piece S: sasl_mechanism, sasl_plain_username, sasl_plain_password). The native
client builds one from its keyword arguments (`SecurityConfig.from_options`); the broker builds
one for its inter-broker connections from its own keystore and truststore
(broker/security/tls.py `inter_broker_security`). `BrokerConnection.connect(..., security=)`
(transport/connection.py) opens TLS with `ssl_context()` and then runs SASL.

A TLS handshake the server refuses (its CA does not trust our certificate, or ours does not
trust its) is `SslAuthenticationError`: Kafka's SslAuthenticationException, not retriable.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass, field
from typing import Any

from protocol.errors import OdradekError, UsageError

PLAINTEXT = "PLAINTEXT"
SSL = "SSL"
SASL_PLAINTEXT = "SASL_PLAINTEXT"
SASL_SSL = "SASL_SSL"
SECURITY_PROTOCOLS = (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL)
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")  # what transport/sasl.py speaks


class SslAuthenticationError(OdradekError):
    """The TLS handshake failed (Kafka's SslAuthenticationException). No wire code: local."""

    code = -1
    name = "SSL_AUTHENTICATION_FAILED"
    retriable = False
    default_message = "SSL handshake failed"


def uses_tls(security_protocol: str) -> bool:
    return security_protocol in (SSL, SASL_SSL)


def uses_sasl(security_protocol: str) -> bool:
    return security_protocol in (SASL_PLAINTEXT, SASL_SSL)


@dataclass(frozen=True, slots=True)
class SecurityConfig:
    security_protocol: str = PLAINTEXT
    ssl_cafile: str | None = None  # PEM CA certificates trusted (None: the system's)
    ssl_certfile: str | None = None  # our certificate (chain), PEM: for mTLS
    ssl_keyfile: str | None = None  # its key, PEM (None: in ssl_certfile)
    ssl_password: str | None = field(default=None, repr=False)  # the key's password
    ssl_check_hostname: bool = True
    ssl_context: ssl.SSLContext | None = field(default=None, repr=False, compare=False)
    # SASL (transport/sasl.py runs it right after connecting): PLAIN, SCRAM-SHA-256/512 and
    # the user and password (kafka-python's names; the password is left out of repr)
    sasl_mechanism: str | None = None
    sasl_plain_username: str | None = None
    sasl_plain_password: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.security_protocol not in SECURITY_PROTOCOLS:
            raise UsageError(f"security_protocol must be one of {', '.join(SECURITY_PROTOCOLS)}, "
                             f"got {self.security_protocol!r}")  # fmt: skip
        tls_given = self.ssl_cafile or self.ssl_certfile or self.ssl_keyfile or self.ssl_context
        if tls_given and not uses_tls(self.security_protocol):
            raise UsageError(f"ssl settings were given but security_protocol is "
                             f"{self.security_protocol} (want SSL or SASL_SSL)")  # fmt: skip
        self._check_sasl()

    def _check_sasl(self) -> None:
        given = self.sasl_mechanism or self.sasl_plain_username or self.sasl_plain_password
        protocol = self.security_protocol
        if not self.sasl:
            if given:
                raise UsageError(f"sasl settings were given but security_protocol is "
                                 f"{protocol} (want SASL_PLAINTEXT or SASL_SSL)")  # fmt: skip
            return
        if self.sasl_mechanism not in SASL_MECHANISMS:
            names = ", ".join(SASL_MECHANISMS)
            raise UsageError(f"security_protocol {protocol} needs sasl_mechanism, one of "
                             f"{names} (got {self.sasl_mechanism!r})")  # fmt: skip
        if not self.sasl_plain_username or self.sasl_plain_password is None:
            raise UsageError(f"sasl_mechanism {self.sasl_mechanism} needs sasl_plain_username "
                             f"and sasl_plain_password")  # fmt: skip

    @classmethod
    def from_options(cls, options: dict[str, Any]) -> SecurityConfig:
        """From the client's keyword arguments (kafka-python's names); unknown names refused."""
        names = set(cls.__dataclass_fields__)
        unknown = sorted(set(options) - names)
        if unknown:
            raise UsageError(f"unknown security setting(s): {', '.join(unknown)}")
        return cls(**{k: v for k, v in options.items() if v is not None})

    @property
    def tls(self) -> bool:
        return uses_tls(self.security_protocol)

    @property
    def sasl(self) -> bool:
        return uses_sasl(self.security_protocol)

    def make_ssl_context(self) -> ssl.SSLContext | None:
        """The context to connect with (None: plaintext); UsageError when a file is unusable."""
        if not self.tls:
            return None
        if self.ssl_context is not None:
            return self.ssl_context
        ctx = ssl.create_default_context(cafile=self.ssl_cafile)
        ctx.check_hostname = self.ssl_check_hostname
        if self.ssl_certfile:
            try:
                ctx.load_cert_chain(self.ssl_certfile, self.ssl_keyfile, self.ssl_password)
            except (OSError, ssl.SSLError) as exc:
                raise UsageError(f"cannot load ssl_certfile {self.ssl_certfile}: "
                                 f"{getattr(exc, 'strerror', None) or exc}") from None  # fmt: skip
        return ctx


PLAINTEXT_CONFIG = SecurityConfig()
