"""Each registry write as a decision over the state: the records to append and the answer.

Pure functions, after Kafka's coordinators (an operation returns records plus a response):
the service appends the records to `_schemas` and applies them (state.py `apply`), then
answers. A write that changes nothing (a schema already registered) returns no records. The
version argument helpers (`version_number`) serve the reads too.

Modes, as Confluent's: READWRITE registers with ids the registry hands out (a given id is
42205); READONLY refuses every write to the subject's schemas (42205); IMPORT registers only
with a given id (and a given version, else the next one), without a compatibility check,
as a migration copies another registry's schemas with their ids: an id already held by
another schema, or a version the subject has, is 42205. A subject, or the whole registry,
goes into IMPORT only while it has no schemas (or with `force`), else 42205.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from coordinator.schema_registry import compat, normalize
from coordinator.schema_registry.errors import RegistryError
from coordinator.schema_registry.records import (
    ConfigRecord,
    ModeRecord,
    Record,
    Reference,
    SchemaRecord,
)
from coordinator.schema_registry.state import MODES, RegistryState, StoredSchema

INT31_MAX = 2**31 - 1


@dataclass(frozen=True, slots=True)
class NewSchema:
    """A schema as a request gives it."""

    subject: str
    schema_type: str
    text: str
    references: tuple[Reference, ...] = ()
    id: int | None = None  # IMPORT mode: the id (and version) it had in the registry it left
    version: int | None = None


def version_number(state: RegistryState, subject: str, version: str, deleted: bool) -> int:
    """A path's version ("latest", "-1" or 1..2^31-1) as a number of the subject; 40401 for
    an unknown subject, 40402 for an unknown version, 42202 for one that is not a version."""
    if version in ("latest", "-1"):
        number = None
    else:
        try:
            number = int(version)
        except ValueError:
            raise RegistryError.invalid_version(version) from None
        if not 1 <= number <= INT31_MAX:
            raise RegistryError.invalid_version(version)
    known = state.versions(subject, deleted)
    if not known:
        if state.versions(subject, True):
            raise RegistryError.version_not_found(subject, version)
        raise RegistryError.subject_not_found(subject)
    if number is None:
        return known[-1]
    if number not in known:
        raise RegistryError.version_not_found(subject, version)
    return number


def resolved(state: RegistryState, new: NewSchema) -> compat.Schema:
    """The schema with its references' texts, dependencies first; 42201 for a reference that
    is not registered."""
    texts: list[tuple[str, str]] = []
    seen: set[tuple[str, int]] = set()

    def visit(refs: Sequence[Reference]) -> None:
        for ref in refs:
            if (ref.subject, ref.version) in seen:
                continue
            seen.add((ref.subject, ref.version))
            version = state.subjects.get(ref.subject, {}).get(ref.version)
            if version is None:
                raise RegistryError.invalid_schema(
                    f"Invalid schema reference {ref.name}: subject '{ref.subject}' version "
                    f"{ref.version} is not registered"
                )
            stored = state.schemas[version.id]
            visit(stored.references)
            texts.append((ref.name, stored.text))

    visit(new.references)
    return compat.Schema(new.schema_type, new.text, tuple(texts))


def text_in_format(state: RegistryState, schema_id: int, fmt: str | None) -> str:
    """A stored schema's text as `?format=` asks: `serialized` answers a Protobuf schema as a
    base64 FileDescriptorProto (confluent-kafka's Python serdes ask for it); anything else,
    or no format, answers the text as it was registered."""
    stored = state.schemas[schema_id]
    if fmt != "serialized":
        return stored.text
    return compat.serialized(resolved(state, NewSchema("", stored.schema_type, stored.text,
                                                       stored.references)))  # fmt: skip


def normalized(state: RegistryState, new: NewSchema, asked: bool) -> NewSchema:
    """`new` as it is matched and stored: rewritten in Confluent's normalized form
    (normalize.py) when the request asks (`?normalize=true`) or the subject's config (else
    the global one) says `normalize: true`, else as given."""
    if not (asked or state.normalizing(new.subject)):
        return new
    refs = normalize.references(new.references)
    text = compat.normalized(resolved(state, replace(new, references=refs)))
    return replace(new, text=text, references=refs)


def lookup(
    state: RegistryState, new: NewSchema, deleted: bool, normalize_: bool = False
) -> tuple[int, int]:
    """(id, version) of the schema in the subject; 40401 / 40403 when it is not there."""
    if not state.versions(new.subject, deleted):
        raise RegistryError.subject_not_found(new.subject)
    new = normalized(state, new, normalize_)
    schema = resolved(state, new)
    compat.parse(schema)  # 42201 for a schema that does not parse
    schema_id = state.id_of(new.schema_type, compat.canonical(schema), new.references)
    version = None if schema_id is None else state.version_with_id(new.subject, schema_id,
                                                                   deleted)  # fmt: skip
    if schema_id is None or version is None:
        raise RegistryError.schema_not_found()
    return schema_id, version


def register(
    state: RegistryState, new: NewSchema, default_level: str, normalize_: bool = False
) -> tuple[list[Record], int]:
    """Register a schema under its subject: (records, its id). The same schema already live
    there answers its id with no records; an incompatible one is 409. With `normalize_` (or
    the config's `normalize`) the normalized text is matched and stored. In IMPORT mode, see
    `import_schema`."""
    new = normalized(state, new, normalize_)
    mode = state.mode(new.subject)
    if mode == "IMPORT":
        return import_schema(state, new)
    _writable(state, new.subject)
    if new.id is not None or new.version is not None:
        raise RegistryError.not_permitted(
            f"Subject {new.subject} is not in import mode: an id or a version is given only "
            "in IMPORT mode"
        )
    schema = resolved(state, new)
    compat.parse(schema)
    canonical = compat.canonical(schema)
    schema_id = state.id_of(new.schema_type, canonical, new.references)
    if schema_id is not None and state.version_with_id(new.subject, schema_id) is not None:
        return [], schema_id
    earlier = [resolved(state, NewSchema(new.subject, s.schema_type, s.text, s.references))
               for s in state.live_schemas(new.subject)]  # fmt: skip
    if any(s.schema_type != new.schema_type for s in earlier):
        raise RegistryError.incompatible(["the subject holds schemas of another type"])
    problems = compat.check(state.level(new.subject, default_level), schema, earlier)
    if problems:
        raise RegistryError.incompatible(problems)
    if schema_id is None:
        schema_id = state.max_id + 1
    version = max(state.versions(new.subject, deleted=True), default=0) + 1
    record = SchemaRecord(new.subject, version, schema_id, new.text, False, new.schema_type,
                          new.references)  # fmt: skip
    return [record], schema_id


def import_schema(state: RegistryState, new: NewSchema) -> tuple[list[Record], int]:
    """Register with the given id and version (the next one without), unchecked: (records,
    the id). The same schema already at that id and version answers with no records."""
    if new.id is None:
        raise RegistryError.not_permitted(f"Subject {new.subject} is in import mode: give "
                                          "the schema's id (and version)")  # fmt: skip
    if not 1 <= new.id <= INT31_MAX or not 1 <= (new.version or 1) <= INT31_MAX:
        raise RegistryError.invalid_schema(f"Invalid id {new.id} or version {new.version}")
    schema = resolved(state, new)
    compat.parse(schema)
    held = state.schemas.get(new.id)
    if held is not None and not _same(state, new, held, compat.canonical(schema)):
        raise RegistryError.not_permitted(f"Overwrite new schema with id {new.id} is not "
                                          "permitted: another schema holds it")  # fmt: skip
    versions = state.subjects.get(new.subject, {})
    number = new.version or max(versions, default=0) + 1
    if number in versions:
        if versions[number].id == new.id:
            return [], new.id
        raise RegistryError.not_permitted(
            f"Subject {new.subject} already has version {number} (id {versions[number].id})"
        )
    record = SchemaRecord(new.subject, number, new.id, new.text, False, new.schema_type,
                          new.references)  # fmt: skip
    return [record], new.id


def _same(state: RegistryState, new: NewSchema, held: StoredSchema, canonical: str) -> bool:
    """Is `new` (of canonical text `canonical`) the schema `held` is?"""
    if (held.schema_type, held.references) != (new.schema_type, new.references):
        return False
    old = resolved(state, NewSchema(new.subject, held.schema_type, held.text, held.references))
    return compat.canonical(old) == canonical


def check_against(
    state: RegistryState, new: NewSchema, version: str, default_level: str
) -> list[str]:
    """POST /compatibility/subjects/{s}/versions/{v}: the problems of `new` against that
    version ("latest") under the subject's level; none when the subject has no versions."""
    schema = resolved(state, new)
    compat.parse(schema)
    if not state.versions(new.subject) and version in ("latest", "-1"):
        return []
    number = version_number(state, new.subject, version, deleted=False)
    stored = state.schemas[state.subjects[new.subject][number].id]
    old = resolved(state, NewSchema(new.subject, stored.schema_type, stored.text,
                                    stored.references))  # fmt: skip
    level = state.level(new.subject, default_level)
    return compat.check(level.removesuffix("_TRANSITIVE"), schema, [old])


def delete_version(
    state: RegistryState, subject: str, version: str, permanent: bool
) -> tuple[list[Record], int]:
    """DELETE /subjects/{s}/versions/{v}: (records, the version deleted)."""
    _writable(state, subject)
    latest = version in ("latest", "-1")  # a soft delete's "latest" is the latest live one
    number = version_number(state, subject, version, deleted=permanent or not latest)
    current = state.subjects[subject][number]
    if not permanent and current.deleted:
        raise RegistryError.version_soft_deleted(subject, number)
    if state.referrers(subject, number):
        raise RegistryError.reference_exists(
            f"One or more references exist to the schema {{subject={subject},version={number}}}"
        )
    if permanent:
        if not current.deleted:
            raise RegistryError.version_not_soft_deleted(subject, number)
        return [SchemaRecord(subject, number)], number
    stored = state.schemas[current.id]
    return [SchemaRecord(subject, number, current.id, stored.text, True, stored.schema_type,
                         stored.references)], number  # fmt: skip


def delete_subject(
    state: RegistryState, subject: str, permanent: bool
) -> tuple[list[Record], list[int]]:
    """DELETE /subjects/{s}: (records, the versions deleted). Soft: every live version is
    rewritten deleted (one SCHEMA record each, so compaction keeps it); permanent: every
    version must be soft-deleted first, and each gets a tombstone."""
    _writable(state, subject)
    every, live = state.versions(subject, deleted=True), state.versions(subject)
    if not every:
        raise RegistryError.subject_not_found(subject)
    for number in every:
        if state.referrers(subject, number):
            raise RegistryError.reference_exists(
                f"One or more references exist to the schema {{subject={subject},version={number}}}"
            )
    if permanent:
        if live:
            raise RegistryError.subject_not_soft_deleted(subject)
        return [SchemaRecord(subject, n) for n in every], every
    if not live:
        raise RegistryError.subject_soft_deleted(subject)
    records: list[Record] = []
    for number in live:
        version = state.subjects[subject][number]
        stored = state.schemas[version.id]
        records.append(SchemaRecord(subject, number, version.id, stored.text, True,
                                    stored.schema_type, stored.references))  # fmt: skip
    return records, live


def set_config(state: RegistryState, subject: str | None, level: object,
               normalize: object) -> list[Record]:  # fmt: skip
    if not isinstance(level, str) or level.upper() not in compat.LEVELS:
        raise RegistryError.invalid_level(level)
    if normalize is not None and not isinstance(normalize, bool):
        raise RegistryError.invalid_level(f"normalize={normalize!r}")
    return [ConfigRecord(subject, level.upper(), normalize)]


def delete_config(state: RegistryState, subject: str | None) -> tuple[list[Record], str]:
    """DELETE /config/{s}: (records, the level it had); 40401 for a subject without one."""
    if subject not in state.configs:
        if subject is None:
            return [], compat.DEFAULT_LEVEL
        raise RegistryError.subject_not_found(subject)
    return [ConfigRecord(subject, None)], state.configs[subject]


def set_mode(
    state: RegistryState, subject: str | None, mode: object, force: bool = False
) -> list[Record]:
    """PUT /mode[/{s}]: IMPORT only while the subject (None: the registry) has no schemas,
    unless it is in IMPORT already or `force` (Confluent's "Cannot import since found
    existing subjects")."""
    if not isinstance(mode, str) or mode.upper() not in MODES:
        raise RegistryError.invalid_mode(mode)
    if mode.upper() == "IMPORT" and state.mode(subject) != "IMPORT" and not force:
        holding = state.subject_names(deleted=True) if subject is None else (
            [subject] if state.versions(subject, deleted=True) else [])  # fmt: skip
        if holding:
            raise RegistryError.not_permitted("Cannot import since found existing subjects "
                                              f"({', '.join(holding[:3])}); force=true "
                                              "imports over them")  # fmt: skip
    return [ModeRecord(subject, mode.upper())]


def _writable(state: RegistryState, subject: str) -> None:
    """Deletes and registrations need a writable subject: READONLY refuses them (IMPORT
    takes deletes, and registrations through `import_schema`)."""
    if state.mode(subject) == "READONLY":
        raise RegistryError.not_permitted(f"Subject {subject} is in read-only mode")


def check_all(state: RegistryState, new: NewSchema, default_level: str) -> list[str]:
    """POST /compatibility/subjects/{s}/versions: `new` against the versions its subject's
    level names (the latest, or all for a *_TRANSITIVE level)."""
    schema = resolved(state, new)
    compat.parse(schema)
    earlier = [resolved(state, NewSchema(new.subject, s.schema_type, s.text, s.references))
               for s in state.live_schemas(new.subject)]  # fmt: skip
    return compat.check(state.level(new.subject, default_level), schema, earlier)


def delete_mode(state: RegistryState, subject: str | None) -> tuple[list[Record], str]:
    """DELETE /mode/{s}: (records, the mode it had); 40409 for a subject without one."""
    if subject not in state.modes:
        if subject is None:
            return [], "READWRITE"
        raise RegistryError.subject_mode_not_found(subject)
    return [ModeRecord(subject, None)], state.modes[subject]
