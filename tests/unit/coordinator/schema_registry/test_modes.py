"""READWRITE, READONLY and IMPORT as decisions over the state (writes.py): IMPORT registers
with the given id and version, unchecked, and only a subject (or registry) with no schemas
goes into it; READONLY refuses writes; a given id outside IMPORT is refused."""

from __future__ import annotations

import json

import pytest

from coordinator.schema_registry import writes
from coordinator.schema_registry.errors import RegistryError
from coordinator.schema_registry.records import Record
from coordinator.schema_registry.service import canonical_of
from coordinator.schema_registry.state import RegistryState

LEVEL = "BACKWARD"


def _record(*fields: str) -> str:
    return json.dumps({"type": "record", "name": "R", "fields": [
        {"name": f, "type": "int"} for f in fields]})  # fmt: skip


def _applied(state: RegistryState, records: list[Record]) -> None:
    for r in records:
        state.apply(r, canonical_of(r))


def _new(text: str, subject: str = "s", id: int | None = None,
         version: int | None = None) -> writes.NewSchema:  # fmt: skip
    return writes.NewSchema(subject, "AVRO", text, (), id, version)


def _refused(call: object, code: int) -> str:
    assert callable(call)
    with pytest.raises(RegistryError) as refused:
        call()
    assert (refused.value.status, refused.value.error_code) == (422, code), refused.value.message
    return refused.value.message


def test_import_takes_the_given_ids_and_versions_unchecked() -> None:
    state = RegistryState()
    _applied(state, writes.set_mode(state, None, "IMPORT"))
    # version 3 first, then 1 without a compatibility check (a new required field is not
    # BACKWARD), then one with no version: the next after the subject's highest
    for new, want in ((_new(_record("a", "b"), id=70, version=3), 70),
                      (_new(_record("a"), id=12, version=1), 12),
                      (_new(_record("a", "b", "c"), id=90), 90)):  # fmt: skip
        records, schema_id = writes.register(state, new, LEVEL)
        assert schema_id == want
        _applied(state, records)
    assert {n: v.id for n, v in state.subjects["s"].items()} == {3: 70, 1: 12, 4: 90}
    # the same schema at its id and version again: no records
    assert writes.register(state, _new(_record("a"), id=12, version=1), LEVEL) == ([], 12)
    # the same schema under another subject with its id: shared, as Confluent's
    records, _ = writes.register(state, _new(_record("a"), "t", id=12, version=1), LEVEL)
    _applied(state, records)
    assert state.uses_of(12) == [("s", 1), ("t", 1)]
    assert "Overwrite" in _refused(
        lambda: writes.register(state, _new(_record("z"), "u", id=70), LEVEL), 42205
    )
    assert "already has version 3" in _refused(
        lambda: writes.register(state, _new(_record("z"), id=71, version=3), LEVEL), 42205
    )
    assert "import mode" in _refused(
        lambda: writes.register(state, _new(_record("z")), LEVEL), 42205
    )
    # back to READWRITE: ids go on after the largest imported one
    _applied(state, writes.set_mode(state, None, "READWRITE"))
    _applied(state, writes.set_config(state, "s", "NONE", None))
    records, schema_id = writes.register(state, _new(_record("d")), LEVEL)
    assert schema_id == 91 and records
    assert "not in import mode" in _refused(
        lambda: writes.register(state, _new(_record("x"), "v", id=5), LEVEL), 42205
    )


def test_import_only_into_an_empty_subject_or_registry_unless_forced() -> None:
    state = RegistryState()
    _applied(state, writes.register(state, _new(_record("a")), LEVEL)[0])
    assert "Cannot import" in _refused(lambda: writes.set_mode(state, None, "IMPORT"), 42205)
    assert "Cannot import" in _refused(lambda: writes.set_mode(state, "s", "IMPORT"), 42205)
    _applied(state, writes.set_mode(state, "other", "IMPORT"))  # a subject with no schemas
    assert state.mode("other") == "IMPORT" and state.mode("s") == "READWRITE"
    _applied(state, writes.set_mode(state, "s", "IMPORT", force=True))
    assert state.mode("s") == "IMPORT"
    assert writes.set_mode(state, "s", "IMPORT")  # already IMPORT: no check again
    # deletes go on in IMPORT mode; READONLY refuses writes, not reads
    assert writes.delete_version(state, "s", "1", permanent=False)[1] == 1
    _applied(state, writes.set_mode(state, None, "READONLY"))
    _applied(state, writes.delete_mode(state, "s")[0])
    assert "read-only" in _refused(lambda: writes.register(state, _new(_record("b")), LEVEL),
                                   42205)  # fmt: skip
    assert "read-only" in _refused(lambda: writes.delete_subject(state, "s", False), 42205)
    assert writes.lookup(state, _new(_record("a")), deleted=False) == (1, 1)
