"""TLS for the broker's listeners: SSL contexts, the client certificate's principal, sniffing.

- `server_context(tls)` builds the `ssl.SSLContext` of an SSL / SASL_SSL listener from Kafka's
  ssl.* settings (`TlsSettings`, filled from BrokerConfig by `tls_settings(config, listener)`,
  a listener's own listener.name.<l>.ssl.* over the broker's): the
  keystore (PEM file holding key and chain, PEM inline, or PKCS12), the truststore (PEM file,
  PEM inline, or PKCS12) for client certificates, `ssl.client.auth` (none | requested |
  required), the enabled protocols and cipher suites. `client_context(tls)` is the same for the
  broker's own connections to its peers (its keystore is its client certificate).
  Python's ssl loads a key only from a file: a PKCS12 or inline key is written to a private
  temporary file encrypted under a random one-use password and removed once loaded, so neither
  a clear key nor a configured password reaches the disk.
- `PrincipalMapper` is Kafka's SslPrincipalMapper: `ssl.principal.mapping.rules` is a list of
  `RULE:pattern/replacement/[LU]` and `DEFAULT`; the first rule whose pattern matches the whole
  subject (RFC 2253, e.g. "CN=alice,OU=eng") gives the name, `DEFAULT` gives the subject as is,
  no rule matching is an error (the connection is refused).
- `TlsChannel` is TLS without I/O (h11-style): bytes from the socket go in (`feed`), plaintext
  and bytes to send come out; the server's Connection pumps it, so a failed handshake is seen
  (and logged, bounded) by the server rather than lost inside the event loop's transport.
- `sniff(prefix, tls)` names what arrived on a listener when it is not its protocol: a TLS
  ClientHello (0x16 0x03) on a plaintext listener, anything else on a TLS listener, HTTP on either.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import ssl
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from broker.session import Session
from protocol.errors import UsageError

CLIENT_AUTH = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}
KEYSTORE_TYPES = ("PEM", "PKCS12")
TLS_VERSIONS = {
    "TLSv1.2": ssl.TLSVersion.TLSv1_2,
    "TLSv1.3": ssl.TLSVersion.TLSv1_3,
}
JKS_HINT = (
    "JKS is Java's format; convert it with: keytool -importkeystore -srckeystore FILE.jks "
    '-destkeystore FILE.p12 -deststoretype PKCS12, then set {name}_type = "PKCS12"'
)


@dataclass(frozen=True, slots=True)
class TlsSettings:
    """Kafka's ssl.* settings (BrokerConfig's fields of the same names, dots as underscores)."""

    keystore_type: str = "PEM"
    keystore_location: str = ""
    keystore_password: str = ""
    key_password: str = ""
    keystore_certificate_chain: str = ""  # PEM inline
    keystore_key: str = ""  # PEM inline
    truststore_type: str = "PEM"
    truststore_location: str = ""
    truststore_password: str = ""
    truststore_certificates: str = ""  # PEM inline
    client_auth: str = "none"
    enabled_protocols: str = "TLSv1.2,TLSv1.3"
    cipher_suites: str = ""
    endpoint_identification_algorithm: str = "https"  # client side: "" turns host checks off

    def check(self) -> None:
        """One UsageError line on the first setting that cannot work."""
        for name, value in (
            ("ssl_keystore", self.keystore_type),
            ("ssl_truststore", self.truststore_type),
        ):
            if value.upper() == "JKS":
                raise UsageError(f"{name}_type JKS is not supported. " + JKS_HINT.format(name=name))
            if value.upper() not in KEYSTORE_TYPES:
                raise UsageError(f"{name}_type must be PEM or PKCS12, got {value!r}")
        if self.client_auth not in CLIENT_AUTH:
            raise UsageError(
                f"ssl_client_auth must be none, requested or required, got {self.client_auth!r}"
            )
        protocol_range(self.enabled_protocols)
        if self.keystore_location and (self.keystore_certificate_chain or self.keystore_key):
            raise UsageError(
                "set ssl_keystore_location or ssl_keystore_certificate_chain/"
                "ssl_keystore_key, not both"
            )
        if bool(self.keystore_certificate_chain) != bool(self.keystore_key):
            raise UsageError("ssl_keystore_certificate_chain and ssl_keystore_key go together")
        if self.endpoint_identification_algorithm not in ("", "https", "HTTPS"):
            raise UsageError(
                "ssl_endpoint_identification_algorithm must be https or empty, got "
                f"{self.endpoint_identification_algorithm!r}"
            )

    @property
    def has_keystore(self) -> bool:
        return bool(self.keystore_location or self.keystore_key)


def protocol_range(enabled: str) -> tuple[ssl.TLSVersion, ssl.TLSVersion]:
    names = [p.strip() for p in enabled.split(",") if p.strip()]
    unknown = [n for n in names if n not in TLS_VERSIONS]
    if unknown or not names:
        raise UsageError(
            f"ssl_enabled_protocols: unknown or no protocol in {enabled!r}; "
            f"known: {', '.join(TLS_VERSIONS)}"
        )
    versions = sorted(TLS_VERSIONS[n] for n in names)
    return versions[0], versions[-1]


# ----- contexts -------------------------------------------------------------------------------


def server_context(tls: TlsSettings) -> ssl.SSLContext:
    """The SSL context of a TLS listener; UsageError when the keystore cannot be used."""
    tls.check()
    if not tls.has_keystore:
        raise UsageError(
            "a listener with security protocol SSL or SASL_SSL needs a keystore: "
            "ssl_keystore_location or ssl_keystore_certificate_chain/_key"
        )
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    _common(ctx, tls)
    ctx.verify_mode = CLIENT_AUTH[tls.client_auth]
    return ctx


def client_context(tls: TlsSettings, check_hostname: bool | None = None) -> ssl.SSLContext:
    """The SSL context of the broker's own connections to a TLS listener of its peers."""
    tls.check()
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    _common(ctx, tls)
    if check_hostname is None:
        check_hostname = bool(tls.endpoint_identification_algorithm)
    ctx.check_hostname = check_hostname
    if not (tls.truststore_location or tls.truststore_certificates):
        ctx.load_default_certs()
    return ctx


def _common(ctx: ssl.SSLContext, tls: TlsSettings) -> None:
    ctx.minimum_version, ctx.maximum_version = protocol_range(tls.enabled_protocols)
    if tls.cipher_suites:
        try:
            ctx.set_ciphers(":".join(c.strip() for c in tls.cipher_suites.split(",")))
        except ssl.SSLError:
            raise UsageError(
                f"ssl_cipher_suites: no usable cipher in {tls.cipher_suites!r} "
                "(OpenSSL names, e.g. ECDHE-RSA-AES128-GCM-SHA256)"
            ) from None
    if tls.has_keystore:
        _load_keystore(ctx, tls)
    _load_truststore(ctx, tls)


def _load_keystore(ctx: ssl.SSLContext, tls: TlsSettings) -> None:
    where = tls.keystore_location or "ssl_keystore_certificate_chain"
    try:
        if tls.keystore_type.upper() == "PKCS12":
            chain_pem, key_obj = _pkcs12(tls.keystore_location, tls.keystore_password)
            _load_key_object(ctx, chain_pem, key_obj)
        elif tls.keystore_key:
            key_obj = _pem_key(tls.keystore_key.encode(), tls.key_password)
            _load_key_object(ctx, tls.keystore_certificate_chain.encode(), key_obj)
        else:
            ctx.load_cert_chain(tls.keystore_location, password=tls.key_password or None)
    except (OSError, ValueError, ssl.SSLError) as exc:
        raise UsageError(f"cannot load the keystore {where}: {_why(exc)}") from None


def _load_truststore(ctx: ssl.SSLContext, tls: TlsSettings) -> None:
    where = tls.truststore_location or "ssl_truststore_certificates"
    try:
        if tls.truststore_certificates:
            ctx.load_verify_locations(cadata=tls.truststore_certificates)
        elif tls.truststore_location and tls.truststore_type.upper() == "PKCS12":
            certs = _pkcs12_certs(tls.truststore_location, tls.truststore_password)
            ctx.load_verify_locations(cadata=certs.decode())
        elif tls.truststore_location:
            ctx.load_verify_locations(cafile=tls.truststore_location)
    except (OSError, ValueError, ssl.SSLError) as exc:
        raise UsageError(f"cannot load the truststore {where}: {_why(exc)}") from None


def _why(exc: BaseException) -> str:
    return getattr(exc, "strerror", None) or getattr(exc, "reason", None) or str(exc)


def _pem_key(data: bytes, password: str) -> object:
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    return load_pem_private_key(data, password.encode() if password else None)


def _pkcs12(location: str, password: str) -> tuple[bytes, object]:
    from cryptography.hazmat.primitives.serialization import Encoding, pkcs12

    bundle = pkcs12.load_pkcs12(Path(location).read_bytes(), password.encode() or None)
    if bundle.key is None or bundle.cert is None:
        raise ValueError("the PKCS12 keystore holds no key and certificate")
    chain = [bundle.cert.certificate, *(c.certificate for c in bundle.additional_certs)]
    return b"".join(c.public_bytes(Encoding.PEM) for c in chain), bundle.key


def _pkcs12_certs(location: str, password: str) -> bytes:
    from cryptography.hazmat.primitives.serialization import Encoding, pkcs12

    bundle = pkcs12.load_pkcs12(Path(location).read_bytes(), password.encode() or None)
    certs = [c.certificate for c in bundle.additional_certs]
    if bundle.cert is not None:
        certs.append(bundle.cert.certificate)
    return b"".join(c.public_bytes(Encoding.PEM) for c in certs)


def _load_key_object(ctx: ssl.SSLContext, chain_pem: bytes, key: object) -> None:
    """load_cert_chain from memory: via a 0600 file, the key encrypted under a one-use password."""
    from cryptography.hazmat.primitives import serialization

    one_use = secrets.token_hex(16)
    key_pem = key.private_bytes(  # type: ignore[attr-defined]
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(one_use.encode()),
    )
    with _private_file(chain_pem + key_pem) as path:
        ctx.load_cert_chain(path, password=one_use)


@contextmanager
def _private_file(data: bytes) -> Iterator[str]:
    fd, path = tempfile.mkstemp(prefix="odradek-tls-", suffix=".pem")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        yield path
    finally:
        os.unlink(path)


# ----- principals -----------------------------------------------------------------------------

_RULE = re.compile(r"\s*(?:(DEFAULT)|RULE:((?:\\.|[^\\/])*)/((?:\\.|[^\\/])*)/([LU]?))\s*(?:,|$)")


@dataclass(frozen=True, slots=True)
class MappingRule:
    pattern: re.Pattern[str] | None  # None: DEFAULT
    replacement: str = ""
    case: str = ""  # "L" lower, "U" upper, "" as is

    def apply(self, dn: str) -> str | None:
        if self.pattern is None:
            return dn
        if self.pattern.fullmatch(dn) is None:
            return None
        name = self.pattern.sub(self.replacement, dn)
        return name.lower() if self.case == "L" else name.upper() if self.case == "U" else name


class NoMatchingRule(Exception):
    pass


class PrincipalMapper:
    """Kafka's SslPrincipalMapper over `ssl_principal_mapping_rules`."""

    def __init__(self, rules: str = "DEFAULT") -> None:
        self.rules = parse_rules(rules)

    def name(self, dn: str) -> str:
        for rule in self.rules:
            name = rule.apply(dn)
            if name is not None:
                return name
        raise NoMatchingRule(f"no ssl_principal_mapping_rules rule matches {dn!r}")


def parse_rules(text: str) -> tuple[MappingRule, ...]:
    text = text.strip() or "DEFAULT"
    rules: list[MappingRule] = []
    pos = 0
    while pos < len(text):
        m = _RULE.match(text, pos)
        if m is None or m.end() == pos:
            raise UsageError(
                f"ssl_principal_mapping_rules: cannot read {text[pos:]!r} (want "
                "RULE:pattern/replacement/[LU] or DEFAULT, comma-separated)"
            )
        pos = m.end()
        if m.group(1):
            rules.append(MappingRule(None))
            continue
        try:
            pattern = re.compile(m.group(2).replace("\\/", "/"))
        except re.error as exc:
            raise UsageError(
                f"ssl_principal_mapping_rules: bad pattern {m.group(2)!r}: {exc}"
            ) from None
        rules.append(MappingRule(pattern, _python_replacement(m.group(3)), m.group(4)))
    return tuple(rules)


def _python_replacement(java: str) -> str:
    """Java's replacement ($1, \\/) as Python's (\\g<1>)."""
    out: list[str] = []
    i = 0
    while i < len(java):
        c = java[i]
        if c == "\\" and i + 1 < len(java):
            nxt = java[i + 1]
            out.append("\\\\" if nxt == "\\" else nxt)
            i += 2
        elif c == "$" and i + 1 < len(java) and java[i + 1].isdigit():
            j = i + 1
            while j < len(java) and java[j].isdigit():
                j += 1
            out.append(f"\\g<{java[i + 1 : j]}>")
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def subject_dn(der: bytes) -> str:
    """A certificate's subject in RFC 2253 form (last RDN first), as Java's X500Principal."""
    from cryptography import x509

    return x509.load_der_x509_certificate(der).subject.rfc4514_string()


# ----- sans-I/O TLS ---------------------------------------------------------------------------

READ_BYTES = 256 * 1024


class TlsChannel:
    """A server-side TLS session over memory buffers: `feed` socket bytes, `send` plaintext."""

    def __init__(self, context: ssl.SSLContext, server_side: bool = True) -> None:
        self._in = ssl.MemoryBIO()
        self._out = ssl.MemoryBIO()
        self.obj = context.wrap_bio(self._in, self._out, server_side=server_side)
        self.handshake_done = False
        self.peer_closed = False

    def feed(self, data: bytes) -> bytes:
        """Take socket bytes, return the plaintext they complete; ssl.SSLError on failure.
        Call `outgoing()` after it: a handshake answers."""
        self._in.write(data)
        if not self.handshake_done:
            try:
                self.obj.do_handshake()
            except ssl.SSLWantReadError:
                return b""
            self.handshake_done = True
        parts: list[bytes] = []
        while True:
            try:
                chunk = self.obj.read(READ_BYTES)
            except ssl.SSLWantReadError:
                break
            except ssl.SSLZeroReturnError:
                self.peer_closed = True
                break
            if not chunk:  # an SSLObject reads b"" (no exception) once close_notify is in
                self.peer_closed = True
                break
            parts.append(chunk)
        return b"".join(parts)

    def send(self, data: bytes | memoryview) -> bytes:
        """Encrypt plaintext; returns the bytes to write to the socket."""
        if data:
            self.obj.write(data)
        return self._out.read()

    def outgoing(self) -> bytes:
        return self._out.read()

    def close_notify(self) -> bytes:
        """Our close_notify, the answer to the peer's (RFC 8446 6.1), as socket bytes."""
        with contextlib.suppress(ssl.SSLError):  # want-read, or a session already broken
            self.obj.unwrap()
        return self._out.read()

    def peer_certificate(self) -> bytes | None:
        return self.obj.getpeercert(binary_form=True)


# ----- a listener's TLS ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ListenerTls:
    """What a TLS listener's connections need: the context, and on SSL (not SASL_SSL)
    listeners the mapper that turns a client certificate's subject into the principal's name."""

    context: ssl.SSLContext
    mapper: PrincipalMapper | None  # None: SASL_SSL, the principal comes from SASL

    def channel(self) -> TlsChannel:
        return TlsChannel(self.context)

    def principal_name(self, channel: TlsChannel) -> str | None:
        """The mapped name of the client certificate's subject (None: no certificate, or a
        SASL_SSL listener); NoMatchingRule when no mapping rule matches."""
        if self.mapper is None:
            return None
        der = channel.peer_certificate()
        return None if der is None else self.mapper.name(subject_dn(der))


def listener_tls(settings: TlsSettings, rules: str, sasl: bool) -> ListenerTls:
    """The ListenerTls of an SSL (`sasl` False) or SASL_SSL listener; UsageError when the
    keystore or truststore cannot be loaded."""
    return ListenerTls(server_context(settings), None if sasl else PrincipalMapper(rules))


# ----- wrong protocol -------------------------------------------------------------------------

SNIFF_BYTES = 4
TLS_CHUNK_BYTES = 256 * 1024  # log data over TLS is read and encrypted this much at a time
_HTTP = (b"GET ", b"POST", b"PUT ", b"HEAD", b"HTTP", b"DELE", b"OPTI", b"PATC", b"CONN")


def sniff(prefix: bytes, tls: bool) -> str | None:
    """What the first bytes of a connection are when they are not the listener's protocol.

    None: they may be right (or fewer than SNIFF_BYTES arrived: ask again with more)."""
    if prefix[:4] in _HTTP:
        return "an HTTP request"
    if tls:
        if prefix[:1] and prefix[:1] != b"\x16":
            return "plaintext (not a TLS handshake)"
        return None
    if prefix[:2] == b"\x16\x03":
        return "a TLS handshake"
    return None


def wrong_protocol_line(session: Session, what: str, door: str) -> str:
    """The one line logged when a connection is closed for speaking the wrong protocol, with
    what the client most likely needs to change."""
    protocol = session.security_protocol
    if what.startswith("a TLS handshake that failed") or what.startswith("a client cert"):
        hint = "check the client's certificate and the truststores on both sides"
    elif what.startswith("a TLS handshake"):
        hint = f"is the client set for SSL? this listener is {protocol}"
    elif what.startswith("plaintext"):
        want = "SASL_SSL" if protocol == "SASL_SSL" else "SSL"
        hint = f"is the client set for security.protocol={want}?"
    else:
        speaks = "Kafka's protocol" if door.lower().startswith("kafka") else "odradek's protocol"
        hint = f"this port speaks {speaks}, not HTTP"
    return (f"closing {session.peer}: {what} on {protocol} listener {session.listener} "
            f"({hint})")  # fmt: skip
