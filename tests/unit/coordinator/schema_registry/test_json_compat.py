"""JSON Schema compatibility (Confluent's rules): a table of changes, each under every level.

Each row is (change, old schema, new schema, BACKWARD?, FORWARD?), the same rows as the JSON
Schema table of docs/schema-registry.md (`test_the_docs_show_this_table`); with one earlier
version a *_TRANSITIVE level answers as its plain level, FULL is both, NONE passes all.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from coordinator.schema_registry import compat, json_compat
from coordinator.schema_registry.compat import Schema
from coordinator.schema_registry.errors import RegistryError
from tests.unit.coordinator.schema_registry.docs_table import check_row, table


def obj(closed: bool = True, required: tuple[str, ...] = (), **props: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "object", "properties": props}
    if closed:
        out["additionalProperties"] = False
    if required:
        out["required"] = list(required)
    return out


S, INT, N = {"type": "string"}, {"type": "integer"}, {"type": "number"}
TABLE: list[tuple[str, Any, Any, bool, bool]] = [
    ("add an optional property (closed model)", obj(a=S), obj(a=S, b=S), True, False),
    ("add an optional property (open model)", obj(False, a=S), obj(False, a=S, b=S),
     False, True),
    ("remove a property (open model)", obj(False, a=S, b=S), obj(False, a=S), True, False),
    ("remove a property (closed model)", obj(a=S, b=S), obj(a=S), False, True),
    ("add a required property with a default (closed model)", obj(a=S),
     obj(required=("b",), a=S, b={**S, "default": ""}), True, False),
    ("add a required property without a default (closed model)", obj(a=S),
     obj(required=("b",), a=S, b=S), False, False),
    ("add a property of any value (open model)", obj(False, a=S), obj(False, a=S, b={}),
     True, True),
    ("add a property covered by additionalProperties' schema",
     {**obj(a=S), "additionalProperties": S}, {**obj(a=S, b=S), "additionalProperties": S},
     True, True),
    ("make a property required", obj(a=S), obj(required=("a",), a=S), False, True),
    ("open a closed model (additionalProperties false to true)", obj(a=S), obj(False, a=S),
     True, False),
    ("integer to number", obj(a=INT), obj(a=N), True, False),
    ("string to integer", obj(a=S), obj(a=INT), False, False),
    ("make a type nullable (a type list)", obj(a=S), obj(a={"type": ["string", "null"]}),
     True, False),
    ("add an enum value", obj(a={"enum": ["x"]}), obj(a={"enum": ["x", "y"]}), True, False),
    ("anyOf gains a branch", {"anyOf": [S, INT]}, {"anyOf": [S, INT, {"type": "boolean"}]},
     True, False),
    ("oneOf to anyOf", {"oneOf": [S, INT]}, {"anyOf": [S, INT]}, True, False),
    ("raise maxLength", obj(a={**S, "maxLength": 5}), obj(a={**S, "maxLength": 9}),
     True, False),
    ("add a pattern", obj(a=S), obj(a={**S, "pattern": "^x"}), False, True),
    ("add a minimum", obj(a=N), obj(a={**N, "minimum": 0}), False, True),
    ("array items integer to number", {"type": "array", "items": INT},
     {"type": "array", "items": N}, True, False),
    ("a nested object's property changes type", obj(o=obj(x=INT)), obj(o=obj(x=S)), False, False),
    ("a $ref'd definition gains an optional property",
     {**obj(a={"$ref": "#/definitions/D"}), "definitions": {"D": obj(x=INT)}},
     {**obj(a={"$ref": "#/definitions/D"}), "definitions": {"D": obj(x=INT, y=S)}}, True, False),
    ("title and description changed", {**obj(a=S), "title": "A"},
     {**obj(a=S), "title": "B", "description": "d"}, True, True),
    ("add a format", S, {**S, "format": "email"}, True, True),
    ("raise maxContains", {"type": "array", "contains": INT, "maxContains": 2},
     {"type": "array", "contains": INT, "maxContains": 3}, True, False),
    ("add a minContains", {"type": "array", "contains": INT},
     {"type": "array", "contains": INT, "minContains": 2}, False, True),
    ("add a contains", {"type": "array"}, {"type": "array", "contains": INT}, True, True),
    ("add if/then/else", obj(False, a=S),
     {**obj(False, a=S), "if": obj(False, a={"const": "x"}), "then": {"required": ["a"]}},
     False, False),
    ("change a then branch",
     {**obj(False, a=S), "if": obj(False, a={"const": "x"}), "then": {"required": ["a"]}},
     {**obj(False, a=S), "if": obj(False, a={"const": "x"}), "then": {"required": []}},
     True, True),
    ("add propertyNames", obj(False, a=S), {**obj(False, a=S), "propertyNames": {"maxLength": 3}},
     True, True),
    ("lower maxLength beside an enum", {**S, "maxLength": 5, "enum": ["a", "b"]},
     {**S, "maxLength": 3, "enum": ["a", "b"]}, False, True),
    ("add an enum value beside a type", {**S, "enum": ["a"]}, {**S, "enum": ["a", "b"]},
     True, False),
    ("add a type beside an enum", {"enum": ["a"]}, {**S, "enum": ["a"]}, False, False),
    ("a oneOf beside properties gains a branch",
     {**obj(False, a=S), "oneOf": [{"required": ["a"]}]},
     {**obj(False, a=S), "oneOf": [{"required": ["a"]}, {"required": ["b"]}]}, True, False),
]  # fmt: skip


@pytest.mark.parametrize("level", compat.LEVELS)
@pytest.mark.parametrize(("change", "old", "new", "backward", "forward"), TABLE,
                         ids=[row[0] for row in TABLE])  # fmt: skip
def test_change_under_level(
    level: str, change: str, old: Any, new: Any, backward: bool, forward: bool
) -> None:
    check_row("JSON", level, change, json.dumps(old), json.dumps(new), backward, forward)


def test_the_docs_show_this_table() -> None:
    assert table("JSON Schema") == {row[0]: (row[3], row[4]) for row in TABLE}


def test_messages_name_confluents_difference_and_where() -> None:
    [problem] = json_compat.incompatibilities(
        json_compat.parse(json.dumps(obj(False, a=S, b=S))),
        json_compat.parse(json.dumps(obj(False, a=S))),
    )
    assert "PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL" in problem and "#/properties/b" in problem


def test_references_resolve_by_name() -> None:
    address = json.dumps(obj(city=S))
    old = json.dumps(obj(home={"$ref": "address.json"}))
    new = json.dumps(obj(home={"$ref": "address.json"}, work={"$ref": "address.json"}))
    refs = (("address.json", address),)
    assert compat.check("FULL", Schema("JSON", old, refs), [Schema("JSON", old, refs)]) == []
    [problem] = compat.check("FORWARD", Schema("JSON", new, refs), [Schema("JSON", old, refs)])
    assert "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL" in problem
    with pytest.raises(RegistryError) as unresolved:  # without the reference
        compat.check("BACKWARD", Schema("JSON", new), [Schema("JSON", old)])
    assert unresolved.value.error_code == 42201 and "$ref" in unresolved.value.message


def test_recursive_schemas_end() -> None:
    node = {"$ref": "#/definitions/N"}
    tree = {**node, "definitions": {"N": obj(kids={"type": "array", "items": node})}}
    assert compat.check("FULL", Schema("JSON", json.dumps(tree)),
                        [Schema("JSON", json.dumps(tree))]) == []  # fmt: skip


@pytest.mark.parametrize(
    "text",
    [
        "{",
        '"string"',
        '{"type": 5}',
        '{"minimum": "x"}',
        '{"properties": {"a": {"$ref": "#/definitions/nope"}}}',
    ],
)
def test_a_bad_schema_is_42201(text: str) -> None:
    with pytest.raises(RegistryError) as bad:
        compat.parse(Schema("JSON", text))
    assert (bad.value.status, bad.value.error_code) == (422, 42201)
    assert bad.value.message.startswith("Invalid JSON Schema")


def test_a_schema_nested_too_deeply_is_42201_not_a_crash() -> None:
    depth = 3000  # past Python's recursion limit: built as text, json.dumps would not
    text = '{"type": "object", "properties": {"a": ' * depth + '{"type": "string"}' + "}}" * depth
    with pytest.raises(RegistryError) as bad:
        compat.check("BACKWARD", Schema("JSON", text), [Schema("JSON", text.replace("a", "b"))])
    assert bad.value.error_code == 42201
    with pytest.raises(ValueError, match="nested too deeply"):
        compat.canonical(Schema("JSON", text))
