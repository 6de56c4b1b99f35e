"""The registry's state, built by replaying `_schemas` records in offset order.

    subjects   subject -> version -> Version (schema id, deleted flag); a hard delete (a
               SCHEMA tombstone) removes the version, and the subject with its last one
    schemas    id -> (type, text, references); an id once handed out keeps its schema even
               when every version using it is deleted (as Karapace does), so a record
               written with it still decodes
    ids        (type, canonical text, references) -> id: the same schema registered under
               another subject gets the same id, as Confluent's
    configs    subject (None: global) -> compatibility level (and normalize)
    modes      subject (None: global) -> READWRITE / READONLY / IMPORT
    max_id     the largest id seen: the writer hands out max_id + 1, only once it has
               replayed the topic to its end (service.py)

`apply` is the only mutator: replaying the topic and applying a write's records after they
are appended are the same steps, so a broker that read the log holds what the writer held.
A record that contradicts the state (a DELETE_SUBJECT of an unknown subject) changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from coordinator.schema_registry.records import (
    AVRO,
    ConfigRecord,
    DeleteSubjectRecord,
    ModeRecord,
    NoopRecord,
    Record,
    Reference,
    SchemaRecord,
)

MODES = ("READWRITE", "READONLY", "IMPORT")


@dataclass(frozen=True, slots=True)
class StoredSchema:
    schema_type: str
    text: str
    references: tuple[Reference, ...] = ()


@dataclass(slots=True)
class Version:
    id: int
    deleted: bool = False


@dataclass(slots=True)
class RegistryState:
    subjects: dict[str, dict[int, Version]] = field(default_factory=dict)
    schemas: dict[int, StoredSchema] = field(default_factory=dict)
    ids: dict[tuple[str, str, tuple[Reference, ...]], int] = field(default_factory=dict)
    configs: dict[str | None, str] = field(default_factory=dict)
    normalize: dict[str | None, bool] = field(default_factory=dict)
    modes: dict[str | None, str] = field(default_factory=dict)
    max_id: int = 0
    records_applied: int = 0

    # ----- replay -----------------------------------------------------------------------

    def apply(self, record: Record, canonical: str | None = None) -> None:
        """Apply one record; `canonical` is the schema's canonical text for a SCHEMA record
        (computed by the caller, which knows the formats; None: the text as it is)."""
        self.records_applied += 1
        if isinstance(record, SchemaRecord):
            self._apply_schema(record, canonical)
        elif isinstance(record, ConfigRecord):
            self._set(self.configs, record.subject, record.level)
            if record.normalize is None or record.level is None:
                self.normalize.pop(record.subject, None)
            else:
                self.normalize[record.subject] = record.normalize
        elif isinstance(record, ModeRecord):
            self._set(self.modes, record.subject, record.mode)
        elif isinstance(record, DeleteSubjectRecord):
            for number, version in self.subjects.get(record.subject, {}).items():
                if number <= record.version:
                    version.deleted = True
        else:
            assert isinstance(record, NoopRecord)

    def _apply_schema(self, record: SchemaRecord, canonical: str | None) -> None:
        versions = self.subjects.setdefault(record.subject, {})
        if record.schema is None:  # a hard delete
            versions.pop(record.version, None)
            if not versions:
                del self.subjects[record.subject]
            return
        stored = StoredSchema(record.schema_type, record.schema, record.references)
        self.schemas.setdefault(record.id, stored)
        key = (record.schema_type, record.schema if canonical is None else canonical,
               record.references)  # fmt: skip
        self.ids.setdefault(key, record.id)
        self.max_id = max(self.max_id, record.id)
        versions[record.version] = Version(record.id, record.deleted)

    @staticmethod
    def _set(table: dict[str | None, str], subject: str | None, value: str | None) -> None:
        if value is None:
            table.pop(subject, None)
        else:
            table[subject] = value

    # ----- reads ------------------------------------------------------------------------

    def subject_names(self, deleted: bool = False) -> list[str]:
        """Subjects with a live version (and, with `deleted`, those with only deleted ones)."""
        return sorted(s for s, vs in self.subjects.items()
                      if vs and (deleted or any(not v.deleted for v in vs.values())))  # fmt: skip

    def versions(self, subject: str, deleted: bool = False) -> list[int]:
        vs = self.subjects.get(subject, {})
        return sorted(n for n, v in vs.items() if deleted or not v.deleted)

    def live_schemas(self, subject: str) -> list[StoredSchema]:
        """The subject's live versions' schemas, oldest first (what compatibility checks)."""
        vs = self.subjects.get(subject, {})
        return [self.schemas[vs[n].id] for n in self.versions(subject)]

    def id_of(self, schema_type: str, canonical: str, refs: tuple[Reference, ...]) -> int | None:
        return self.ids.get((schema_type, canonical, refs))

    def version_with_id(self, subject: str, schema_id: int, deleted: bool = False) -> int | None:
        """The subject's (latest) version holding schema `schema_id`."""
        found = [n for n in self.versions(subject, deleted)
                 if self.subjects[subject][n].id == schema_id]  # fmt: skip
        return found[-1] if found else None

    def uses_of(self, schema_id: int, deleted: bool = False) -> list[tuple[str, int]]:
        """(subject, version) pairs holding the schema id."""
        return sorted((s, n) for s, vs in self.subjects.items() for n, v in vs.items()
                      if v.id == schema_id and (deleted or not v.deleted))  # fmt: skip

    def referrers(self, subject: str, version: int) -> list[int]:
        """Ids of live schemas that reference (subject, version)."""
        ids = {v.id for vs in self.subjects.values() for v in vs.values() if not v.deleted}
        return sorted(i for i in ids
                      if any(r.subject == subject and r.version == version
                             for r in self.schemas[i].references))  # fmt: skip

    def level(self, subject: str | None, default: str) -> str:
        if subject is not None and subject in self.configs:
            return self.configs[subject]
        return self.configs.get(None, default)

    def normalizing(self, subject: str) -> bool:
        """Does the subject's config (else the global one) say `normalize: true`?"""
        return self.normalize.get(subject, self.normalize.get(None, False))

    def mode(self, subject: str | None) -> str:
        if subject is not None and subject in self.modes:
            return self.modes[subject]
        return self.modes.get(None, "READWRITE")


def schema_type_of(name: str | None) -> str:
    return name or AVRO
