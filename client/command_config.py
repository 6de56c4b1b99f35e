"""`--command-config FILE`: Kafka tools' client properties file, read into the client's settings.

The file is what `kafka-topics.sh --command-config` reads (a Java properties file):

    security.protocol=SASL_SSL
    sasl.mechanism=SCRAM-SHA-512
    sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\
        username="admin" password="admin-secret";
    ssl.truststore.location=/etc/odradek/ca.pem
    ssl.truststore.type=PEM

`parse_properties` reads Java's syntax (comments `#`/`!`, `=`, `:` or blank as separator,
backslash line continuations and escapes, `\\uXXXX`); `command_config` checks the settings
against each other and gives a `CommandConfig`: the security protocol, the SASL user and
password from the JAAS value (protocol/jaas.py), and where TLS trusts and who it is (PEM files
or inline PEM, or PKCS12 stores, read with `cryptography`). `client_options()` turns it into
the keyword arguments the native client takes (kafka-python's names: security_protocol,
sasl_mechanism, sasl_plain_username, sasl_plain_password, ssl_context). Every property the tools
do not use is refused with one line naming it: a setting is never silently ignored.
"""

from __future__ import annotations

import os
import ssl
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from protocol.errors import UsageError
from protocol.jaas import PLAIN_LOGIN_MODULE, SCRAM_LOGIN_MODULE, single_entry

MAX_FILE_BYTES = 1 << 20
SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = {  # sasl.mechanism -> the login module its sasl.jaas.config must name
    "PLAIN": PLAIN_LOGIN_MODULE,
    "SCRAM-SHA-256": SCRAM_LOGIN_MODULE,
    "SCRAM-SHA-512": SCRAM_LOGIN_MODULE,
}
STORE_TYPES = ("PEM", "PKCS12")
SUPPORTED = (
    "security.protocol",
    "sasl.mechanism",
    "sasl.jaas.config",
    "ssl.truststore.location",
    "ssl.truststore.type",
    "ssl.truststore.password",
    "ssl.truststore.certificates",
    "ssl.keystore.location",
    "ssl.keystore.type",
    "ssl.keystore.password",
    "ssl.key.password",
    "ssl.keystore.certificate.chain",
    "ssl.keystore.key",
    "ssl.endpoint.identification.algorithm",
)
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


# ----- Java properties ---------------------------------------------------------------------


def _logical_lines(text: str) -> list[str]:
    """Physical lines joined where one ends in an odd number of backslashes; comment and blank
    lines dropped; a continuation line's leading blanks dropped (java.util.Properties.load)."""
    out: list[str] = []
    pending: str | None = None
    for raw in text.splitlines():
        line = raw.lstrip(" \t\f")
        if pending is None and (not line or line[0] in "#!"):
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        joined = line if pending is None else pending + line
        if trailing % 2 == 1:
            pending = joined[:-1]
            continue
        pending = None
        out.append(joined)
    if pending is not None:
        out.append(pending)
    return out


def _unescape(text: str, where: str) -> str:
    out = []
    i = 0
    while i < len(text):
        char = text[i]
        if char != "\\" or i + 1 >= len(text):
            out.append(char)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "u":
            digits = text[i + 2 : i + 6]
            if len(digits) != 4 or any(c not in "0123456789abcdefABCDEF" for c in digits):
                raise UsageError(f"{where}: malformed \\uXXXX escape")
            out.append(chr(int(digits, 16)))
            i += 6
            continue
        out.append(_ESCAPES.get(nxt, nxt))
        i += 2
    return "".join(out)


def _split_key(line: str) -> tuple[str, str]:
    """The key ends at the first unescaped `=`, `:` or blank; blanks around the separator go."""
    i = 0
    while i < len(line):
        char = line[i]
        if char == "\\":
            i += 2
            continue
        if char in "=: \t\f":
            break
        i += 1
    key, rest = line[:i], line[i:]
    if rest[:1] in ("=", ":"):
        rest = rest[1:]
    else:  # "key = value": a blank ended the key, and a separator may follow it
        rest = rest.lstrip(" \t\f")
        if rest[:1] in ("=", ":"):
            rest = rest[1:]
    rest = rest.lstrip(" \t\f")
    return key, rest


def parse_properties(text: str, source: str = "properties") -> dict[str, str]:
    """A Java properties text -> {key: value}; a key given twice is a UsageError (Java keeps
    the last one, which hides a mistake in a file that holds credentials)."""
    props: dict[str, str] = {}
    for line in _logical_lines(text):
        raw_key, raw_value = _split_key(line)
        key = _unescape(raw_key, source)
        if not key:
            raise UsageError(f"{source}: a line has a value but no property name")
        if key in props:
            raise UsageError(f"{source}: property {key} is given twice")
        props[key] = _unescape(raw_value, f"{source}: {key}")
    return props


# ----- the client settings -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CommandConfig:
    """What a client needs to reach a secured listener. Inline PEM text or file paths; the
    passwords stay in memory (never printed: `__repr__` hides them)."""

    security_protocol: str = "PLAINTEXT"
    sasl_mechanism: str | None = None
    sasl_username: str | None = None
    sasl_password: str | None = None
    truststore_type: str = "PEM"
    truststore_location: str | None = None
    truststore_password: str | None = None
    truststore_certificates: str | None = None
    keystore_type: str = "PEM"
    keystore_location: str | None = None
    keystore_password: str | None = None
    key_password: str | None = None
    keystore_certificate_chain: str | None = None
    keystore_key: str | None = None
    check_hostname: bool = True

    def __repr__(self) -> str:
        user = f", user={self.sasl_username!r}" if self.sasl_username else ""
        return f"CommandConfig({self.security_protocol}, {self.sasl_mechanism}{user})"

    @property
    def uses_tls(self) -> bool:
        return self.security_protocol in ("SSL", "SASL_SSL")

    @property
    def uses_sasl(self) -> bool:
        return self.security_protocol in ("SASL_PLAINTEXT", "SASL_SSL")

    def client_options(self) -> dict[str, Any]:
        """Keyword arguments for client.Producer/Consumer/Admin (kafka-python's names)."""
        if self.security_protocol == "PLAINTEXT":
            return {}
        options: dict[str, Any] = {"security_protocol": self.security_protocol}
        if self.uses_sasl:
            options["sasl_mechanism"] = self.sasl_mechanism
            options["sasl_plain_username"] = self.sasl_username
            options["sasl_plain_password"] = self.sasl_password
        if self.uses_tls:
            options["ssl_context"] = self.ssl_context()
        return options

    def ssl_context(self) -> ssl.SSLContext:
        """A client TLS context: the truststore's CAs (else the system's), our certificate and
        key when a keystore is given (mTLS), host names checked unless the algorithm is ""."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # certificates always verified
        context.check_hostname = self.check_hostname
        cadata = self.trusted_pem()
        if cadata is None:
            context.load_default_certs(ssl.Purpose.SERVER_AUTH)
        else:  # only the truststore's CAs, as Kafka's clients trust
            try:
                context.load_verify_locations(cadata=cadata)
            except ssl.SSLError:
                raise UsageError("ssl truststore: no readable PEM certificate in it") from None
        self._load_identity(context)
        return context

    def trusted_pem(self) -> str | None:
        """The truststore's CA certificates as PEM text (None: no truststore given)."""
        if self.truststore_certificates is not None:
            return self.truststore_certificates
        if self.truststore_location is None:
            return None
        data = _read(self.truststore_location, "ssl.truststore.location")
        if self.truststore_type == "PEM":
            return data.decode("ascii", errors="replace")
        return _pkcs12_certs_pem(data, self.truststore_password, "ssl.truststore.location")

    def _load_identity(self, context: ssl.SSLContext) -> None:
        if self.keystore_certificate_chain is not None and self.keystore_key is not None:
            _load_pem_identity(
                context, self.keystore_certificate_chain.encode(), self.keystore_key.encode(),
                self.key_password,
            )  # fmt: skip
        elif self.keystore_location is not None:
            data = _read(self.keystore_location, "ssl.keystore.location")
            if self.keystore_type == "PEM":  # one file: the key and the certificate chain
                _load_pem_identity(context, data, data, self.key_password)
            else:
                chain, key = _pkcs12_identity(data, self.keystore_password)
                _load_pem_identity(context, chain, key, None)


def _read(location: str, setting: str) -> bytes:
    try:
        with open(location, "rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise UsageError(f"{setting}: cannot read {location}: {exc.strerror}") from None
    if len(data) > MAX_FILE_BYTES:
        raise UsageError(f"{setting}: {location} is larger than {MAX_FILE_BYTES} bytes")
    return data


def _pkcs12_certs_pem(data: bytes, password: str | None, setting: str) -> str:
    from cryptography.hazmat.primitives.serialization import Encoding, pkcs12

    try:
        store = pkcs12.load_pkcs12(data, password.encode() if password else None)
    except ValueError:
        raise UsageError(f"{setting}: not a PKCS12 store, or the wrong password") from None
    certs = [c.certificate for c in store.additional_certs]
    if store.cert is not None:
        certs.append(store.cert.certificate)
    if not certs:
        raise UsageError(f"{setting}: the PKCS12 store holds no certificates")
    return "".join(c.public_bytes(Encoding.PEM).decode() for c in certs)


def _pkcs12_identity(data: bytes, password: str | None) -> tuple[bytes, bytes]:
    """(certificate chain PEM, unencrypted key PEM) from a PKCS12 keystore, in memory."""
    from cryptography.hazmat.primitives.serialization import (
        Encoding,
        NoEncryption,
        PrivateFormat,
        pkcs12,
    )

    try:
        key, cert, extra = pkcs12.load_key_and_certificates(
            data, password.encode() if password else None
        )
    except ValueError:
        raise UsageError(
            "ssl.keystore.location: not a PKCS12 store, or the wrong password"
        ) from None
    if key is None or cert is None:
        raise UsageError("ssl.keystore.location: the PKCS12 store holds no key and certificate")
    chain = b"".join(c.public_bytes(Encoding.PEM) for c in [cert, *extra])
    key_pem = key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())
    return chain, key_pem


def _load_pem_identity(
    context: ssl.SSLContext, chain: bytes, key: bytes, password: str | None
) -> None:
    """`load_cert_chain` reads only files: the chain and the key go to a private temporary file
    with the key encrypted under a one-time password held in memory, and the file is removed
    at once, so no usable key is ever written."""
    from cryptography.hazmat.primitives.serialization import (
        BestAvailableEncryption,
        Encoding,
        PrivateFormat,
        load_pem_private_key,
    )

    try:
        private = load_pem_private_key(key, password.encode() if password else None)
    except (ValueError, TypeError):
        raise UsageError(
            "ssl keystore: no readable private key (or the wrong ssl.key.password)"
        ) from None
    one_time = os.urandom(24).hex().encode()
    encrypted = private.private_bytes(
        Encoding.PEM, PrivateFormat.PKCS8, BestAvailableEncryption(one_time)
    )
    certs = b"".join(
        block for block in _pem_blocks(chain) if block.startswith(b"-----BEGIN CERTIFICATE")
    )
    if not certs:
        raise UsageError("ssl keystore: no certificate found")
    fd, name = tempfile.mkstemp(suffix=".pem")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(certs + encrypted)
        context.load_cert_chain(name, password=one_time)
    except ssl.SSLError as exc:
        raise UsageError(f"ssl keystore: the certificate and key do not load: {exc}") from None
    finally:
        Path(name).unlink(missing_ok=True)


def _pem_blocks(data: bytes) -> list[bytes]:
    blocks, current = [], []
    for line in data.splitlines(keepends=True):
        if line.startswith(b"-----BEGIN"):
            current = [line]
        elif current:
            current.append(line)
            if line.startswith(b"-----END"):
                blocks.append(b"".join(current))
                current = []
    return blocks


def command_config(props: dict[str, str], source: str = "--command-config") -> CommandConfig:
    """Check the properties against each other; UsageError with one line on the first fault."""
    unknown = sorted(set(props) - set(SUPPORTED))
    if unknown:
        raise UsageError(
            f"{source}: unsupported propert{'ies' if len(unknown) > 1 else 'y'} "
            f"{', '.join(unknown)} (supported: {', '.join(SUPPORTED)})"
        )
    protocol = props.get("security.protocol", "PLAINTEXT").strip().upper()
    if protocol not in SECURITY_PROTOCOLS:
        raise UsageError(
            f"{source}: security.protocol {protocol!r} is not one of "
            + ", ".join(SECURITY_PROTOCOLS)
        )
    fields: dict[str, Any] = {"security_protocol": protocol}
    fields.update(_sasl_fields(props, protocol, source))
    fields.update(_ssl_fields(props, protocol, source))
    return CommandConfig(**fields)


def _sasl_fields(props: dict[str, str], protocol: str, source: str) -> dict[str, Any]:
    given = [k for k in ("sasl.mechanism", "sasl.jaas.config") if k in props]
    if not protocol.startswith("SASL_"):
        if given:
            raise UsageError(
                f"{source}: {given[0]} needs security.protocol SASL_SSL or SASL_PLAINTEXT"
            )
        return {}
    mechanism = props.get("sasl.mechanism", "GSSAPI").strip().upper()  # Kafka's default
    if mechanism not in MECHANISMS:
        raise UsageError(
            f"{source}: sasl.mechanism {mechanism} is not supported (use {', '.join(MECHANISMS)})"
        )
    if "sasl.jaas.config" not in props:
        raise UsageError(f"{source}: {protocol} with {mechanism} needs sasl.jaas.config")
    entry = single_entry(props["sasl.jaas.config"])
    if entry.login_module != MECHANISMS[mechanism]:
        raise UsageError(
            f"{source}: sasl.mechanism {mechanism} needs {MECHANISMS[mechanism]} in "
            f"sasl.jaas.config, not {entry.login_module}"
        )
    return {
        "sasl_mechanism": mechanism,
        "sasl_username": entry.option("username"),
        "sasl_password": entry.option("password"),
    }


def _store_type(props: dict[str, str], setting: str, source: str) -> str:
    kind = props.get(setting, "PEM" if setting.startswith("ssl.keystore") else "").strip().upper()
    if kind == "JKS":
        raise UsageError(
            f"{source}: {setting} JKS is not supported; convert it to PKCS12 with `keytool "
            "-importkeystore -srckeystore store.jks -destkeystore store.p12 -deststoretype PKCS12`"
        )
    if kind and kind not in STORE_TYPES:
        raise UsageError(f"{source}: {setting} {kind} is not one of {', '.join(STORE_TYPES)}")
    return kind


def _ssl_fields(props: dict[str, str], protocol: str, source: str) -> dict[str, Any]:
    given = sorted(k for k in props if k.startswith("ssl."))
    if protocol not in ("SSL", "SASL_SSL"):
        if given:
            raise UsageError(f"{source}: {given[0]} needs security.protocol SSL or SASL_SSL")
        return {}
    trust_location = props.get("ssl.truststore.location")
    trust_type = _store_type(props, "ssl.truststore.type", source)
    if not trust_type:  # Kafka's default is JKS; a .p12 name is read as PKCS12, else PEM
        p12 = trust_location is not None and trust_location.lower().endswith((".p12", ".pfx"))
        trust_type = "PKCS12" if p12 else "PEM"
    if trust_location and "ssl.truststore.certificates" in props:
        raise UsageError(f"{source}: give ssl.truststore.location or ssl.truststore.certificates")
    key_type = _store_type(props, "ssl.keystore.type", source)
    inline = [k in props for k in ("ssl.keystore.certificate.chain", "ssl.keystore.key")]
    if any(inline) and not all(inline):
        raise UsageError(
            f"{source}: ssl.keystore.certificate.chain and ssl.keystore.key go together"
        )
    if all(inline) and "ssl.keystore.location" in props:
        raise UsageError(f"{source}: give ssl.keystore.location or the inline PEM keystore")
    algorithm = props.get("ssl.endpoint.identification.algorithm", "https").strip().lower()
    if algorithm not in ("https", ""):
        raise UsageError(
            f"{source}: ssl.endpoint.identification.algorithm is 'https' or empty, "
            f"not {algorithm!r}"
        )
    return {
        "truststore_type": trust_type,
        "truststore_location": trust_location,
        "truststore_password": props.get("ssl.truststore.password"),
        "truststore_certificates": props.get("ssl.truststore.certificates"),
        "keystore_type": key_type or "PEM",
        "keystore_location": props.get("ssl.keystore.location"),
        "keystore_password": props.get("ssl.keystore.password"),
        "key_password": props.get("ssl.key.password"),
        "keystore_certificate_chain": props.get("ssl.keystore.certificate.chain"),
        "keystore_key": props.get("ssl.keystore.key"),
        "check_hostname": algorithm == "https",
    }


def load_command_config(path: Path) -> CommandConfig:
    """Read and check FILE; UsageError when it cannot be read or is wrong."""
    source = f"--command-config {path}"
    return command_config(
        parse_properties(_read(str(path), source).decode("utf-8"), source), source
    )
