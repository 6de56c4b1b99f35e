"""The `_schemas` topic's records, in Confluent's JSON (Karapace writes and reads the same).

Keys are compact JSON objects in Confluent's key order (`keytype` first, `magic` last):

    {"keytype":"SCHEMA","subject":"s","version":1,"magic":1}
        value {"subject":"s","version":1,"id":7,"schema":"...","deleted":false,
               "schemaType":"JSON"|"PROTOBUF" (absent for AVRO),
               "references":[{"name":..,"subject":..,"version":..}] (absent when none)}
        value null (a tombstone): the version is deleted for good (`?permanent=true`)
    {"keytype":"CONFIG","subject":"s"|null,"magic":0}
        value {"compatibilityLevel":"BACKWARD", "normalize": bool (optional)}; null: removed
    {"keytype":"MODE","subject":"s"|null,"magic":0}
        value {"mode":"READWRITE"|"READONLY"|"IMPORT"}; null: removed
    {"keytype":"DELETE_SUBJECT","subject":"s","magic":0}
        value {"subject":"s","version":N}: every version up to N soft-deleted
    {"keytype":"NOOP","magic":0}     (Confluent's leader writes one to find the log end)

A subject of null is the global config or mode. Compaction keeps the last value per key, which
is why a soft delete rewrites the SCHEMA record with "deleted": true under the same key.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

TOPIC = "_schemas"
AVRO, JSON, PROTOBUF = "AVRO", "JSON", "PROTOBUF"


@dataclass(frozen=True, slots=True)
class Reference:
    name: str
    subject: str
    version: int

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "subject": self.subject, "version": self.version}


@dataclass(frozen=True, slots=True)
class SchemaRecord:
    """One version of a subject; `schema` None is a hard delete (a tombstone)."""

    subject: str
    version: int
    id: int = -1
    schema: str | None = None
    deleted: bool = False
    schema_type: str = AVRO
    references: tuple[Reference, ...] = field(default_factory=tuple)


@dataclass(frozen=True, slots=True)
class ConfigRecord:
    subject: str | None
    level: str | None  # None: the config is removed
    normalize: bool | None = None


@dataclass(frozen=True, slots=True)
class ModeRecord:
    subject: str | None
    mode: str | None  # None: the mode is removed


@dataclass(frozen=True, slots=True)
class DeleteSubjectRecord:
    subject: str
    version: int  # every version up to this one is soft-deleted


@dataclass(frozen=True, slots=True)
class NoopRecord:
    pass


Record = SchemaRecord | ConfigRecord | ModeRecord | DeleteSubjectRecord | NoopRecord


def _dump(obj: dict[str, Any]) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


def encode(record: Record) -> tuple[bytes, bytes | None]:
    """(key, value) bytes of a record."""
    if isinstance(record, SchemaRecord):
        key = {"keytype": "SCHEMA", "subject": record.subject, "version": record.version,
               "magic": 1}  # fmt: skip
        if record.schema is None:
            return _dump(key), None
        value: dict[str, Any] = {"subject": record.subject, "version": record.version,
                                 "id": record.id, "schema": record.schema,
                                 "deleted": record.deleted}  # fmt: skip
        if record.schema_type != AVRO:
            value["schemaType"] = record.schema_type
        if record.references:
            value["references"] = [r.as_json() for r in record.references]
        return _dump(key), _dump(value)
    if isinstance(record, ConfigRecord):
        key = {"keytype": "CONFIG", "subject": record.subject, "magic": 0}
        if record.level is None:
            return _dump(key), None
        value = {"compatibilityLevel": record.level}
        if record.normalize is not None:
            value["normalize"] = record.normalize
        return _dump(key), _dump(value)
    if isinstance(record, ModeRecord):
        key = {"keytype": "MODE", "subject": record.subject, "magic": 0}
        return _dump(key), None if record.mode is None else _dump({"mode": record.mode})
    if isinstance(record, DeleteSubjectRecord):
        key = {"keytype": "DELETE_SUBJECT", "subject": record.subject, "magic": 0}
        return _dump(key), _dump({"subject": record.subject, "version": record.version})
    return _dump({"keytype": "NOOP", "magic": 0}), None


def decode(key: bytes | None, value: bytes | None) -> Record:
    """A record from its bytes; ValueError (or KeyError, TypeError) for one that is not ours."""
    if key is None:
        raise ValueError("a _schemas record without a key")
    k = json.loads(key)
    v = json.loads(value) if value else None
    if not isinstance(k, dict) or (v is not None and not isinstance(v, dict)):
        raise ValueError("a _schemas key or value that is not a JSON object")
    keytype = k["keytype"]
    if keytype == "SCHEMA":
        if v is None:
            return SchemaRecord(str(k["subject"]), int(k["version"]))
        refs = tuple(Reference(str(r["name"]), str(r["subject"]), int(r["version"]))
                     for r in v.get("references") or ())  # fmt: skip
        return SchemaRecord(str(v["subject"]), int(v["version"]), int(v["id"]), str(v["schema"]),
                            bool(v.get("deleted", False)), str(v.get("schemaType") or AVRO),
                            refs)  # fmt: skip
    if keytype == "CONFIG":
        if v is None:
            return ConfigRecord(k.get("subject"), None)
        normalize = v.get("normalize")
        return ConfigRecord(k.get("subject"), str(v["compatibilityLevel"]),
                            None if normalize is None else bool(normalize))  # fmt: skip
    if keytype == "MODE":
        return ModeRecord(k.get("subject"), None if v is None else str(v["mode"]))
    if keytype == "DELETE_SUBJECT":
        if v is None:
            raise ValueError("a DELETE_SUBJECT record without a value")
        return DeleteSubjectRecord(str(v["subject"]), int(v["version"]))
    if keytype == "NOOP":
        return NoopRecord()
    raise ValueError(f"unknown keytype {keytype!r}")
