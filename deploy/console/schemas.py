"""The console's schema registry pages, and the message browser's decoding of framed records.

`Registry` asks the brokers' registries (docs/schema-registry.md) as the reader: on a secured
cluster with the logged-in user's name and password as HTTP Basic and the cluster's CA (the
View's security settings, views.py), so the registry's ACLs decide what each user sees. Its
URLs are tried in turn while one cannot be reached.

- `subjects()`: every subject (at most SUBJECTS_MAX) with its versions and compatibility level
  (the subject's, else the global one), and the global level. One request per subject for
  its versions and one for its level: the page asks for it when its tab is shown.
- `subject(name)`: the subject's versions (at most VERSIONS_MAX, the newest), each with its
  id, type and schema text, and its level.
- `decoder()`: the browser's `Decoder` for one page. Confluent's framing is the magic byte 0,
  a 4-byte big-endian schema id, then the payload (Avro's binary encoding; JSON Schema's JSON
  text; Protobuf's message indexes, then the message: protobuf_values.py).
  `prepare(values)` fetches the schemas of the ids a page holds (each id once per console and
  login: ids never change, SCHEMAS_CACHED kept; a Protobuf schema as descriptors, with the
  files it imports), then `render(value)` decodes a framed value into pretty JSON ({"kind":
  "avro" | "json-schema" | "protobuf", "schema_id": N, ...}), or None: not framed, an unknown
  id, or a payload the schema does not read (the value is then shown as it is, hex).
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import ssl
import urllib.parse
from collections import OrderedDict
from typing import Any

import aiohttp
import fastavro
from google.protobuf import descriptor_pb2
from google.protobuf.message import DecodeError

from deploy.console import protobuf_values

SUBJECTS_MAX = 200
VERSIONS_MAX = 50
SCHEMAS_CACHED = 1000
IMPORTS_MAX = 64  # files a Protobuf schema imports, fetched to decode its values
TIMEOUT_S = 10.0
TEXT_MAX = 64 * 1024  # a decoded value shown up to this many characters

_schemas: OrderedDict[tuple[str, int], tuple[str, Any]] = OrderedDict()  # (urls, id) -> parsed


class RegistryUnavailable(Exception):
    """No registry answered, or it answered with an error (its status and message)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


class Registry:
    def __init__(self, urls: list[str], security: dict[str, Any] | None = None) -> None:
        self.urls = urls
        security = security or {}
        self.tls: ssl.SSLContext | None = security.get("ssl_context")
        self.headers: dict[str, str] = {}
        user = security.get("sasl_plain_username")
        if user:
            login = f"{user}:{security.get('sasl_plain_password') or ''}".encode()
            self.headers["Authorization"] = "Basic " + base64.b64encode(login).decode()

    async def get(self, path: str) -> Any:
        """The JSON answer of the first registry that answers; RegistryUnavailable else."""
        failure = RegistryUnavailable(502, "no schema registry is known to this console")
        timeout = aiohttp.ClientTimeout(total=TIMEOUT_S)
        async with aiohttp.ClientSession(timeout=timeout, headers=self.headers) as session:
            for url in self.urls:
                try:
                    async with session.get(url + path, ssl=self.tls or True) as resp:
                        body = await resp.json(content_type=None)
                        if resp.status >= 400:
                            message = body.get("message") if isinstance(body, dict) else None
                            raise RegistryUnavailable(resp.status, f"schema registry: "
                                                      f"{message or resp.reason}")  # fmt: skip
                        return body
                except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
                    failure = RegistryUnavailable(502, f"schema registry {url}: {exc!r}")
        raise failure

    async def _level(self, subject: str | None) -> str:
        path = "/config" if subject is None else f"/config/{_quote(subject)}?defaultToGlobal=true"
        return str((await self.get(path)).get("compatibilityLevel", "?"))

    async def subjects(self) -> dict[str, Any]:
        names = list(await self.get("/subjects"))
        out = []
        for name in names[:SUBJECTS_MAX]:
            versions = await self.get(f"/subjects/{_quote(name)}/versions")
            out.append({"name": name, "versions": versions, "level": await self._level(name)})
        return {"subjects": out, "level": await self._level(None),
                "more": max(len(names) - SUBJECTS_MAX, 0)}  # fmt: skip

    async def subject(self, name: str) -> dict[str, Any]:
        numbers = list(await self.get(f"/subjects/{_quote(name)}/versions"))[-VERSIONS_MAX:]
        versions = []
        for number in reversed(numbers):  # the newest first
            got = await self.get(f"/subjects/{_quote(name)}/versions/{number}")
            versions.append({"version": got["version"], "id": got["id"],
                             "schemaType": got.get("schemaType", "AVRO"),
                             "schema": got["schema"],
                             "references": got.get("references", [])})  # fmt: skip
        return {"name": name, "level": await self._level(name), "versions": versions}

    def decoder(self) -> Decoder:
        return Decoder(self)


class Decoder:
    """Decodes the framed values of one browser page (see the module's comment)."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        # the schemas one user fetched are not another's: the cache is keyed by the login too
        login = registry.headers.get("Authorization", "").encode()
        self.key = ",".join(registry.urls) + " " + hashlib.sha256(login).hexdigest()

    async def prepare(self, values: list[bytes | None]) -> None:
        for schema_id in sorted({i for v in values if (i := framed_id(v)) is not None}):
            if (self.key, schema_id) in _schemas:
                continue
            try:
                got = await self.registry.get(f"/schemas/ids/{schema_id}?format=serialized")
                schema_type = str(got.get("schemaType", "AVRO"))
                if schema_type == "PROTOBUF":
                    parsed = schema_type, await self._protobuf(got)
                else:
                    parsed = parse_schema(schema_type, got["schema"])
            except RegistryUnavailable:
                continue  # unknown, or not reachable: the values stay as they are
            _schemas[self.key, schema_id] = parsed
            while len(_schemas) > SCHEMAS_CACHED:
                _schemas.popitem(last=False)

    async def _protobuf(self, got: dict[str, Any]) -> protobuf_values.Schema | None:
        """A Protobuf schema's pool: its file and, fetched by their subject and version, the
        files it imports (its references', theirs, ...: at most IMPORTS_MAX); None when they
        do not make one."""
        main, imported = _descriptor(got["schema"]), []
        todo, seen = list(got.get("references") or []), set[tuple[str, int]]()
        while todo and len(seen) < IMPORTS_MAX:
            ref = todo.pop()
            key = (ref["subject"], ref["version"])
            if key in seen:
                continue
            seen.add(key)
            version = await self.registry.get(f"/subjects/{_quote(ref['subject'])}/versions/"
                                              f"{ref['version']}?format=serialized")  # fmt: skip
            file = _descriptor(version["schema"])
            if file is not None:
                file.name = ref["name"]
                imported.append(file)
            todo += version.get("references") or []
        if main is None:
            return None
        try:
            return protobuf_values.build(main, imported)
        except (TypeError, ValueError, KeyError):
            return None

    def render(self, value: bytes | None) -> dict[str, Any] | None:
        schema_id = framed_id(value)
        found = None if schema_id is None else _schemas.get((self.key, schema_id))
        if value is None or schema_id is None or found is None:
            return None
        return decode(value, schema_id, *found)


def _quote(subject: str) -> str:
    return urllib.parse.quote(subject, safe="")


def framed_id(value: bytes | None) -> int | None:
    """The schema id of a value in Confluent's framing (magic 0, 4-byte id), else None."""
    if value is None or len(value) < 5 or value[0] != 0:
        return None
    return int.from_bytes(value[1:5], "big")


def _descriptor(text: str) -> descriptor_pb2.FileDescriptorProto | None:
    """A base64 FileDescriptorProto (`?format=serialized`), or None."""
    try:
        return descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(text))
    except (ValueError, DecodeError):
        return None


def parse_schema(schema_type: str, text: str) -> tuple[str, Any]:
    """(type, what decode needs): Avro's parsed schema; None for the types not decoded."""
    if schema_type == "AVRO":
        try:
            return schema_type, fastavro.parse_schema(json.loads(text))
        except (ValueError, TypeError, KeyError, fastavro.schema.SchemaParseException):
            return schema_type, None
    return schema_type, None


def decode(value: bytes, schema_id: int, schema_type: str, parsed: Any) -> dict[str, Any] | None:
    """A framed value as the page shows it (module comment), or None when not decoded."""
    payload = value[5:]
    try:
        if schema_type == "AVRO" and parsed is not None:
            data = fastavro.schemaless_reader(io.BytesIO(payload), parsed, None)
            kind = "avro"
        elif schema_type == "JSON":
            data, kind = json.loads(payload), "json-schema"
        elif schema_type == "PROTOBUF" and parsed is not None:
            found = protobuf_values.decode(payload, parsed)
            if found is None:
                return None
            (message, data), kind = found, "protobuf"
        else:
            return None
    except (ValueError, TypeError, EOFError, IndexError, KeyError, UnicodeDecodeError):
        return None
    text = json.dumps(data, indent=2, ensure_ascii=False, default=_jsonable)
    out = {"kind": kind, "schema_id": schema_id, "text": text[:TEXT_MAX],
           "size": len(value), "truncated": len(text) > TEXT_MAX}  # fmt: skip
    return out if kind != "protobuf" else {**out, "message": message}


def _jsonable(obj: object) -> object:
    """Avro's bytes, fixed, decimals, dates and UUIDs as JSON shows them."""
    if isinstance(obj, bytes):
        return obj.hex(" ")
    return str(obj)
