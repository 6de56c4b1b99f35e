"""`_schemas` records in Confluent's bytes, the state replayed from them, and the writes'
decisions (records plus an answer), without a broker."""

from __future__ import annotations

import json

import pytest

from coordinator.schema_registry import writes
from coordinator.schema_registry.errors import RegistryError
from coordinator.schema_registry.records import (
    ConfigRecord,
    DeleteSubjectRecord,
    ModeRecord,
    NoopRecord,
    Record,
    Reference,
    SchemaRecord,
    decode,
    encode,
)
from coordinator.schema_registry.service import canonical_of
from coordinator.schema_registry.state import RegistryState

USER = json.dumps({"type": "record", "name": "User", "fields": [{"name": "a", "type": "int"}]})
USER2 = json.dumps({"type": "record", "name": "User", "fields": [
    {"name": "a", "type": "int"}, {"name": "b", "type": "int", "default": 0}]})  # fmt: skip


def test_keys_and_values_are_confluents_bytes() -> None:
    record = SchemaRecord("s", 1, 7, USER, False, "AVRO", (Reference("R", "r", 2),))
    key, value = encode(record)
    assert key == b'{"keytype":"SCHEMA","subject":"s","version":1,"magic":1}'
    refs = [{"name": "R", "subject": "r", "version": 2}]
    assert json.loads(value or b"") == {"subject": "s", "version": 1, "id": 7, "schema": USER,
                                        "deleted": False, "references": refs}  # fmt: skip
    assert encode(SchemaRecord("s", 1)) == (key, None)  # a hard delete: a tombstone
    assert encode(ConfigRecord(None, "FULL")) == (
        b'{"keytype":"CONFIG","subject":null,"magic":0}',
        b'{"compatibilityLevel":"FULL"}',
    )
    assert encode(ModeRecord("s", "READONLY")) == (
        b'{"keytype":"MODE","subject":"s","magic":0}',
        b'{"mode":"READONLY"}',
    )
    assert encode(DeleteSubjectRecord("s", 3)) == (
        b'{"keytype":"DELETE_SUBJECT","subject":"s","magic":0}',
        b'{"subject":"s","version":3}',
    )
    assert encode(NoopRecord()) == (b'{"keytype":"NOOP","magic":0}', None)  # fmt: skip


@pytest.mark.parametrize("record", [
    SchemaRecord("s", 1, 7, USER), SchemaRecord("s", 2, 8, "{}", True, "JSON"),
    SchemaRecord("s", 1), ConfigRecord("s", "NONE", True), ConfigRecord(None, None),
    ModeRecord(None, "READWRITE"), ModeRecord("s", None), DeleteSubjectRecord("s", 4),
    NoopRecord(),
])  # fmt: skip
def test_round_trip(record: Record) -> None:
    assert decode(*encode(record)) == record


def test_records_another_registry_wrote_decode() -> None:
    """Confluent writes its keys with spaces in some versions, and schemaType absent."""
    key = b'{"keytype": "SCHEMA", "subject": "x", "version": 2, "magic": 1}'
    value = b'{"subject": "x", "version": 2, "id": 3, "schema": "\\"int\\"", "deleted": false}'
    assert decode(key, value) == SchemaRecord("x", 2, 3, '"int"', False, "AVRO")
    with pytest.raises(ValueError, match="unknown keytype"):
        decode(b'{"keytype": "SOMETHING", "magic": 0}', None)


def replay(*records: Record) -> RegistryState:
    state = RegistryState()
    for r in records:
        state.apply(r, canonical_of(r))
    return state


def register(state: RegistryState, subject: str, text: str,
             refs: tuple[Reference, ...] = ()) -> int:  # fmt: skip
    """A write as the service does it: decide, then apply its records."""
    records, schema_id = writes.register(state, writes.NewSchema(subject, "AVRO", text, refs),
                                         "BACKWARD")  # fmt: skip
    for r in records:
        state.apply(r, canonical_of(r))
    return schema_id


def test_ids_are_global_and_never_reused() -> None:
    state = RegistryState()
    assert register(state, "a", USER) == 1
    assert register(state, "a", USER) == 1  # the same again: nothing written
    assert state.records_applied == 1
    assert register(state, "b", " " + USER) == 1  # another subject, same schema: same id
    assert register(state, "a", USER2) == 2
    state.apply(SchemaRecord("a", 2))  # hard-deleted: the id is still not handed out again
    assert state.versions("a", deleted=True) == [1]
    assert register(state, "c", '"string"') == 3


def test_replay_of_deletes_configs_and_modes() -> None:
    state = replay(
        SchemaRecord("s", 1, 1, USER), SchemaRecord("s", 2, 2, USER2),
        SchemaRecord("t", 1, 1, USER), DeleteSubjectRecord("s", 1),
        ConfigRecord(None, "FULL"), ConfigRecord("t", "NONE"), ConfigRecord("t", None),
        ModeRecord("s", "READONLY"), NoopRecord(),
    )  # fmt: skip
    assert state.versions("s") == [2] and state.versions("s", deleted=True) == [1, 2]
    assert state.subject_names() == ["s", "t"]
    assert state.level("t", "BACKWARD") == "FULL"  # removed: the global one
    assert state.mode("s") == "READONLY" and state.mode("t") == "READWRITE"
    assert state.uses_of(1) == [("t", 1)] and state.uses_of(1, deleted=True) == [("s", 1), ("t", 1)]
    assert state.max_id == 2


def test_soft_then_permanent_deletes() -> None:
    state = RegistryState()
    register(state, "s", USER)
    with pytest.raises(RegistryError) as first:
        writes.delete_version(state, "s", "1", permanent=True)
    assert first.value.error_code == 40407  # soft-delete it first
    records, number = writes.delete_version(state, "s", "latest", permanent=False)
    assert number == 1 and records == [SchemaRecord("s", 1, 1, USER, True)]
    state.apply(records[0])
    assert state.subject_names() == [] and state.subject_names(deleted=True) == ["s"]
    with pytest.raises(RegistryError) as again:
        writes.delete_version(state, "s", "1", permanent=False)
    assert again.value.error_code == 40406
    assert register(state, "s", USER) == 1  # registered again: a new version, the same id
    assert state.versions("s", deleted=True) == [1, 2]
    with pytest.raises(RegistryError) as live:
        writes.delete_subject(state, "s", permanent=True)
    assert live.value.error_code == 40405


def test_references_must_exist_and_block_deletes() -> None:
    state = RegistryState()
    address = json.dumps({"type": "record", "name": "Address", "fields": [
        {"name": "city", "type": "string"}]})  # fmt: skip
    register(state, "address", address)
    user = json.dumps({"type": "record", "name": "U", "fields": [
        {"name": "home", "type": "Address"}]})  # fmt: skip
    ref = (Reference("Address", "address", 1),)
    with pytest.raises(RegistryError) as missing:
        register(state, "user", user, (Reference("Address", "address", 9),))
    assert missing.value.error_code == 42201
    assert register(state, "user", user, ref) == 2
    assert state.referrers("address", 1) == [2]
    with pytest.raises(RegistryError) as referenced:
        writes.delete_version(state, "address", "1", permanent=False)
    assert referenced.value.error_code == 42206


def test_incompatible_is_409_and_read_only_is_42205() -> None:
    state = RegistryState()
    register(state, "s", USER)
    breaking = json.dumps({"type": "record", "name": "User", "fields": [
        {"name": "a", "type": "int"}, {"name": "b", "type": "int"}]})  # fmt: skip
    with pytest.raises(RegistryError) as incompatible:
        register(state, "s", breaking)
    assert (incompatible.value.status, incompatible.value.error_code) == (409, 409)
    state.apply(ConfigRecord("s", "NONE"))
    assert register(state, "s", breaking) == 2
    state.apply(ModeRecord("s", "READONLY"))
    with pytest.raises(RegistryError) as read_only:
        register(state, "s", USER2)
    assert read_only.value.error_code == 42205


@pytest.mark.parametrize(("version", "code"), [("0", 42202), ("x", 42202), ("2", 40402)])
def test_version_arguments(version: str, code: int) -> None:
    state = replay(SchemaRecord("s", 1, 1, USER))
    assert writes.version_number(state, "s", "latest", False) == 1
    with pytest.raises(RegistryError) as bad:
        writes.version_number(state, "s", version, False)
    assert bad.value.error_code == code
    with pytest.raises(RegistryError) as unknown:
        writes.version_number(state, "nope", "1", False)
    assert unknown.value.error_code == 40401


def test_config_and_mode_values_are_checked() -> None:
    state = RegistryState()
    assert writes.set_config(state, None, "full_transitive", None) == [
        ConfigRecord(None, "FULL_TRANSITIVE", None)]  # fmt: skip
    with pytest.raises(RegistryError) as level:
        writes.set_config(state, "s", "SIDEWAYS", None)
    assert level.value.error_code == 42203
    with pytest.raises(RegistryError) as mode:
        writes.set_mode(state, None, "WRITEONLY")
    assert mode.value.error_code == 42204
    with pytest.raises(RegistryError) as config:
        writes.delete_config(state, "s")
    assert config.value.error_code == 40401
