"""Avro compatibility: a table of schema changes, each checked under every level.

Each row is (change, old schema, new schema, BACKWARD?, FORWARD?): BACKWARD says whether the
new schema reads data written with the old one, FORWARD the other way round. With one
earlier version a *_TRANSITIVE level answers as its plain level, FULL is both, NONE passes
everything; docs/schema-registry.md shows the same table (`test_the_docs_show_this_table`).
The transitive levels differ with more history:
`test_transitive_levels_check_every_earlier_version`.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from coordinator.schema_registry import avro_compat, compat
from coordinator.schema_registry.compat import Schema
from coordinator.schema_registry.errors import RegistryError
from tests.unit.coordinator.schema_registry.docs_table import check_row, table


def record(*fields: dict[str, Any], name: str = "R", **extra: Any) -> dict[str, Any]:
    return {"type": "record", "name": name, "namespace": "t", "fields": list(fields), **extra}


def f(name: str, type_: Any, **extra: Any) -> dict[str, Any]:
    return {"name": name, "type": type_, **extra}


def enum(*symbols: str, **extra: Any) -> dict[str, Any]:
    return {"type": "enum", "name": "E", "symbols": list(symbols), **extra}


BASE = record(f("a", "int"), f("s", "string"))
TABLE: list[tuple[str, Any, Any, bool, bool]] = [
    ("add a field with a default", BASE, record(f("a", "int"), f("s", "string"),
                                                f("n", "int", default=0)), True, True),
    ("add a field without a default", BASE, record(f("a", "int"), f("s", "string"),
                                                   f("n", "int")), False, True),
    ("remove a field that had a default", record(f("a", "int"), f("s", "string", default="")),
     record(f("a", "int")), True, True),
    ("remove a field without a default", BASE, record(f("a", "int")), True, False),
    ("int to long", record(f("a", "int")), record(f("a", "long")), True, False),
    ("long to int", record(f("a", "long")), record(f("a", "int")), False, True),
    ("float to double", record(f("a", "float")), record(f("a", "double")), True, False),
    ("string to bytes", record(f("a", "string")), record(f("a", "bytes")), True, True),
    ("string to int", record(f("a", "string")), record(f("a", "int")), False, False),
    ("add an enum symbol", record(f("e", enum("A"))), record(f("e", enum("A", "B"))),
     True, False),
    ("add an enum symbol, with a default symbol", record(f("e", enum("A", default="A"))),
     record(f("e", enum("A", "B", default="A"))), True, True),
    ("remove an enum symbol", record(f("e", enum("A", "B"))), record(f("e", enum("A"))),
     False, True),
    ("a type made nullable", record(f("a", "string")), record(f("a", ["null", "string"])),
     True, False),
    ("a union branch added", record(f("a", ["null", "int"])),
     record(f("a", ["null", "int", "string"])), True, False),
    ("a union branch promoted", record(f("a", ["null", "int"])), record(f("a", ["null", "long"])),
     True, False),
    ("rename the record", BASE, record(f("a", "int"), f("s", "string"), name="Q"), False, False),
    ("rename the record, old name as an alias", BASE,
     record(f("a", "int"), f("s", "string"), name="Q", aliases=["R"]), True, False),
    ("rename a field, old name as an alias", record(f("a", "int")),
     record(f("b", "int", aliases=["a"])), True, False),
    ("fixed size changed", {"type": "fixed", "name": "F", "size": 4},
     {"type": "fixed", "name": "F", "size": 8}, False, False),
    ("array items promoted", {"type": "array", "items": "int"},
     {"type": "array", "items": "long"}, True, False),
    ("map values changed", {"type": "map", "values": "int"},
     {"type": "map", "values": "string"}, False, False),
    ("logical type added (same underlying type)", record(f("d", "int")),
     record(f("d", {"type": "int", "logicalType": "date"})), True, True),
    ("record to a primitive", BASE, "string", False, False),
    ("nested record gets a field without a default",
     record(f("inner", record(f("x", "int"), name="I"))),
     record(f("inner", record(f("x", "int"), f("y", "int"), name="I"))), False, True),
    ("recursive type unchanged", record(f("next", ["null", "t.R"])),
     record(f("next", ["null", "t.R"])), True, True),
]  # fmt: skip


@pytest.mark.parametrize("level", compat.LEVELS)
@pytest.mark.parametrize(("change", "old", "new", "backward", "forward"), TABLE,
                         ids=[row[0] for row in TABLE])  # fmt: skip
def test_change_under_level(
    level: str, change: str, old: Any, new: Any, backward: bool, forward: bool
) -> None:
    check_row("AVRO", level, change, json.dumps(old), json.dumps(new), backward, forward)


def test_the_docs_show_this_table() -> None:
    assert table("Avro") == {row[0]: (row[3], row[4]) for row in TABLE}


def test_transitive_levels_check_every_earlier_version() -> None:
    v1 = record(f("a", "int"), f("f", "int"))
    v2 = record(f("a", "int"))  # f removed
    v3 = record(f("a", "int"), f("f", "string", default=""))  # f back, as a string
    history = [Schema("AVRO", json.dumps(v)) for v in (v1, v2)]
    new = Schema("AVRO", json.dumps(v3))
    answers = {level: not compat.check(level, new, history) for level in compat.LEVELS}
    assert answers == {
        "BACKWARD": True, "BACKWARD_TRANSITIVE": False, "FORWARD": True,
        "FORWARD_TRANSITIVE": False, "FULL": True, "FULL_TRANSITIVE": False, "NONE": True,
    }  # fmt: skip


def test_messages_say_what_and_where() -> None:
    old = avro_compat.parse(json.dumps(BASE))
    new = avro_compat.parse(json.dumps(record(f("a", "int"), f("s", "string"), f("n", "int"))))
    [problem] = avro_compat.incompatibilities(new, old)
    assert "READER_FIELD_MISSING_DEFAULT_VALUE" in problem and "/fields/2" in problem
    [problem] = avro_compat.incompatibilities(
        avro_compat.parse(json.dumps(record(f("a", "string")))),
        avro_compat.parse(json.dumps(record(f("a", "int")))),
    )
    assert "TYPE_MISMATCH" in problem and "/fields/0/type" in problem


def test_references_resolve_named_types() -> None:
    address = json.dumps({"type": "record", "name": "Address", "namespace": "t",
                          "fields": [{"name": "city", "type": "string"}]})  # fmt: skip
    user = json.dumps(record(f("home", "t.Address")))
    parsed = avro_compat.parse(user, [address])
    assert "t.Address" in parsed.names
    assert avro_compat.incompatibilities(parsed, parsed) == []
    with pytest.raises(ValueError, match="Invalid Avro schema"):
        avro_compat.parse(user)  # without the reference the name is unknown


BAD_SCHEMAS = [
    '{"type": "nope"}',
    "{",
    '{"type": "enum", "name": "E"}',
    '{"type": "record", "name": "R", "fields": [{"name": "a", "type": "int", "default": "x"}]}',
]


@pytest.mark.parametrize("text", BAD_SCHEMAS)
def test_a_bad_schema_is_42201(text: str) -> None:
    with pytest.raises(RegistryError) as bad:
        compat.parse(Schema("AVRO", text))
    assert (bad.value.status, bad.value.error_code) == (422, 42201)


def test_a_type_without_checks_is_refused_saying_so() -> None:
    with pytest.raises(RegistryError) as refused:
        compat.parse(Schema("XML", "<schema/>"))
    assert refused.value.error_code == 42201 and "not supported yet" in refused.value.message
