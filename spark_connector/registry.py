"""A small client of a Confluent Schema Registry API, for `valueFormat=avro`; and the spec a read
carries to its tasks.

`RegistryClient(urls, security)` asks `GET /subjects/{s}/versions/{v}` (the reader schema, at
planning) and `GET /schemas/ids/{id}` (a writer schema, on executors), each with its
references' schemas (`GET /subjects/{s}/versions/{v}` for each, depth first), over urllib.
The URLs are tried in order until one answers; an error answer (Confluent's `error_code`) is
raised at once as `RegistryError`, a URL that does not answer moves on to the next.

Credentials are the query's `kafka.` security options (spark_connector/security.py): the
registry of a `--secure` cluster takes the cluster's SCRAM users with HTTP Basic and serves
TLS with the cluster's CA (docs/schema-registry.md "Security"), so the SASL user and password
become the Basic login and the truststore the TLS context, as Confluent's registry clients
take `basic.auth.user.info` and `ssl.ca.location`.

`AvroValues` is what a task needs to decode values (plain values, pickled into each input
partition): the registry's URLs and the security properties, the reader schema's id and
text (with its references' texts), and the `mode`.
"""

from __future__ import annotations

import base64
import json
import ssl
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

from protocol.errors import OdradekError
from spark_connector.security import Props, client_options

TIMEOUT_S = 30.0
REFERENCE_DEPTH_MAX = 32  # references of references: a bound on the walk
FAILFAST, PERMISSIVE = "FAILFAST", "PERMISSIVE"


class RegistryError(OdradekError):
    """The registry answered with an error, or no URL answered."""

    name = "SCHEMA_REGISTRY"

    def __init__(self, message: str, error_code: int = 0) -> None:
        super().__init__(message)
        self.error_code = error_code  # Confluent's (40401 ...); 0 when no URL answered


@dataclass(frozen=True, slots=True)
class Schema:
    """A registered schema: its type, text and the texts of what it references (in the order
    to parse them: a reference's own references come before it)."""

    schema_type: str
    text: str
    references: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class AvroValues:
    """How a task decodes values: see the module's docstring."""

    urls: tuple[str, ...]
    security: Props
    reader_id: int
    reader: Schema
    mode: str = FAILFAST  # or PERMISSIVE: an undecodable value is null


class RegistryClient:
    def __init__(self, urls: tuple[str, ...], security: Props = ()) -> None:
        self.urls = urls
        options = client_options(security)
        self.context: ssl.SSLContext | None = options.get("ssl_context")
        self.headers = {"Accept": "application/vnd.schemaregistry.v1+json"}
        user = options.get("sasl_plain_username")
        if user is not None:
            login = f"{user}:{options.get('sasl_plain_password') or ''}".encode()
            self.headers["Authorization"] = "Basic " + base64.b64encode(login).decode()

    def version(self, subject: str, version: str) -> tuple[int, int, Schema]:
        """(id, version number, schema) of a subject's version (`latest` or a number)."""
        doc = self._get(f"/subjects/{_quote(subject)}/versions/{_quote(version)}")
        return int(doc["id"]), int(doc["version"]), self._schema(doc, 0)

    def by_id(self, schema_id: int) -> Schema:
        return self._schema(self._get(f"/schemas/ids/{schema_id}"), 0)

    def _schema(self, doc: dict[str, Any], depth: int) -> Schema:
        if depth > REFERENCE_DEPTH_MAX:
            raise RegistryError(f"schema references nested more than {REFERENCE_DEPTH_MAX} deep")
        refs: list[str] = []
        for ref in doc.get("references") or ():
            path = f"/subjects/{_quote(ref['subject'])}/versions/{_quote(str(ref['version']))}"
            inner = self._schema(self._get(path), depth + 1)
            refs += [*inner.references, inner.text]
        return Schema(str(doc.get("schemaType", "AVRO")), str(doc["schema"]), tuple(refs))

    def _get(self, path: str) -> Any:
        failure = "no registry URL given"
        for url in self.urls:
            req = urllib.request.Request(url + path, headers=self.headers)
            try:
                with urllib.request.urlopen(req, timeout=TIMEOUT_S, context=self.context) as resp:
                    return json.loads(resp.read())
            except urllib.error.HTTPError as exc:
                raise _answer_error(url, path, exc) from None
            except (urllib.error.URLError, OSError) as exc:
                failure = f"{url}: {getattr(exc, 'reason', exc)}"
        raise RegistryError(f"schema registry unreachable ({failure})")


def _answer_error(url: str, path: str, exc: urllib.error.HTTPError) -> RegistryError:
    try:
        doc = json.loads(exc.read())
    except ValueError:
        doc = {}
    code = int(doc.get("error_code", exc.code)) if isinstance(doc, dict) else exc.code
    message = doc.get("message", exc.reason) if isinstance(doc, dict) else exc.reason
    return RegistryError(f"schema registry {url}{path}: {exc.code} {message} ({code})", code)


def _quote(part: str) -> str:
    return urllib.parse.quote(part, safe="")
