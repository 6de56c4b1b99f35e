"""`normalize=true` (writes.py `normalized`, normalize.py, protobuf_text.py): two spellings of
one schema get one id with it and two without, for Avro, JSON Schema and Protobuf; the
normalized text is what is stored; a subject's config `normalize: true` does the same."""

from __future__ import annotations

import base64
import json

import pytest

from coordinator.schema_registry import compat, normalize, protobuf_compat, writes
from coordinator.schema_registry.records import AVRO, JSON, PROTOBUF, Reference, SchemaRecord
from coordinator.schema_registry.service import canonical_of
from coordinator.schema_registry.state import RegistryState

LEVEL = "NONE"

AVRO_A = json.dumps({"type": "record", "namespace": "shop", "name": "Order", "fields": [
    {"name": "id", "type": {"type": "string"}},
    {"name": "tags", "type": {"type": "array", "items": "string"}, "default": []},
    {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "next", "type": ["null", "Order"], "default": None, "doc": "the next one"},
]})  # fmt: skip
AVRO_B = json.dumps({"name": "shop.Order", "type": "record", "fields": [
    {"type": "string", "name": "id"},
    {"default": [], "name": "tags", "type": {"items": {"type": "string"}, "type": "array"}},
    {"name": "at", "type": {"logicalType": "timestamp-millis", "type": "long"}},
    {"doc": "the next one", "name": "next", "type": ["null", "shop.Order"], "default": None},
]}, indent=2)  # fmt: skip
JSON_A = '{"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}}'
JSON_B = '{"properties":{"b":{"type":"integer"},"a":{"type":"string"}},\n "type":"object"}'
PROTO_A = """syntax = "proto3";
package shop;
option java_package = "com.shop";
option go_package = "shop";
message Order {
  string id = 1;
  map<string, int64> counts = 3;
  repeated Line lines = 2;
  oneof paid { string card = 4; string cash = 5; }
  optional int32 priority = 6;
  reserved 8 to 10, 12;
  reserved "old";
  message Line { string sku = 1; Kind kind = 2; }
  enum Kind { UNKNOWN = 0; BOOK = 1; }
}
"""
# the same file, spelled otherwise: another layout, option order, and relative type names
PROTO_B = """syntax="proto3"; package shop;
option go_package="shop"; option java_package="com.shop";
message Order { message Line { string sku = 1; Order.Kind kind = 2; }
  enum Kind { UNKNOWN = 0; BOOK = 1; }
  string id = 1; repeated Line lines = 2; map<string,int64> counts = 3;
  oneof paid { string card = 4; string cash = 5; } optional int32 priority = 6;
  reserved "old"; reserved 12, 8 to 10; }
"""


def _registered(state: RegistryState, subject: str, schema_type: str, text: str,
                normalize_: bool) -> int:  # fmt: skip
    new = writes.NewSchema(subject, schema_type, text)
    records, schema_id = writes.register(state, new, LEVEL, normalize_)
    for r in records:
        state.apply(r, canonical_of(r))
    return schema_id


def _descriptor(text: str) -> str:
    """The base64 FileDescriptorProto of a `.proto` text, as confluent-kafka registers it."""
    parsed = protobuf_compat.parse(text)
    return base64.b64encode(parsed.file.SerializeToString()).decode()


@pytest.mark.parametrize(
    ("schema_type", "one", "other", "two_without"),
    [
        (AVRO, AVRO_A, AVRO_B, True),
        (JSON, JSON_A, JSON_B, False),
        (PROTOBUF, PROTO_A, PROTO_B, True),
        (PROTOBUF, PROTO_A, _descriptor(PROTO_A), True),
    ],
    ids=["avro", "json", "protobuf", "protobuf-text-and-descriptor"],
)
def test_two_spellings_one_id_with_normalize_two_without(
    schema_type: str, one: str, other: str, two_without: bool
) -> None:
    # JSON Schema is matched by its JSON with key order and layout removed even without
    # normalize (Avro too, but AVRO_B differs in more than that)
    plain = RegistryState()
    ids = {_registered(plain, "s", schema_type, text, False) for text in (one, other)}
    assert len(ids) == (2 if two_without else 1)
    normalized = RegistryState()
    first = _registered(normalized, "s", schema_type, one, True)
    assert _registered(normalized, "s", schema_type, other, True) == first
    assert normalized.versions("s") == [1]
    stored = normalized.schemas[first].text
    assert stored == compat.normalized(compat.Schema(schema_type, other))  # stored normalized
    # a lookup of either spelling with normalize finds it; without, only the stored text
    for text in (one, other):
        assert writes.lookup(normalized, writes.NewSchema("s", schema_type, text), False,
                             True) == (first, 1)  # fmt: skip
    compat.parse(compat.Schema(schema_type, stored))  # the stored text is a valid schema


def test_avro_normal_form_is_confluents() -> None:
    assert normalize.avro(AVRO_A) == (
        '{"name":"shop.Order","type":"record","fields":['
        '{"name":"id","type":"string"},'
        '{"name":"tags","type":{"type":"array","items":"string"},"default":[]},'
        '{"name":"at","type":{"type":"long","logicalType":"timestamp-millis"}},'
        '{"name":"next","type":["null","shop.Order"],"doc":"the next one","default":null}]}'
    )
    # a referenced type is named by its full name; a decimal's scale 0 is left out
    ref = '{"type": "record", "name": "Money", "namespace": "m", "fields": []}'
    text = json.dumps({"type": "record", "name": "R", "namespace": "m", "fields": [
        {"name": "total", "type": "Money"},
        {"name": "d", "type": {"type": "bytes", "logicalType": "decimal", "precision": 9,
                               "scale": 0}}]})  # fmt: skip
    assert normalize.avro(text, [ref]) == (
        '{"name":"m.R","type":"record","fields":[{"name":"total","type":"m.Money"},'
        '{"name":"d","type":{"type":"bytes","logicalType":"decimal","precision":9}}]}'
    )


def test_protobuf_normal_form_sorts_options_and_prints_full_type_names() -> None:
    text = compat.normalized(compat.Schema(PROTOBUF, PROTO_B))
    assert text.splitlines()[:6] == ['syntax = "proto3";', "package shop;", "",
                                     'option go_package = "shop";',
                                     'option java_package = "com.shop";', ""]  # fmt: skip
    assert "  repeated .shop.Order.Line lines = 2;" in text
    assert "  map<string, int64> counts = 3;" in text
    assert "  reserved 8 to 10, 12;" in text


def test_config_normalize_applies_without_the_query_flag() -> None:
    state = RegistryState()
    for r in writes.set_config(state, "s", "NONE", True):
        state.apply(r)
    assert _registered(state, "s", AVRO, AVRO_A, False) == _registered(
        state, "s", AVRO, AVRO_B, False)  # fmt: skip
    # another subject, without the config: two spellings stay two schemas
    assert _registered(state, "t", AVRO, AVRO_A, False) != _registered(
        state, "t", AVRO, AVRO_B, False)  # fmt: skip


def test_references_are_sorted_and_each_once() -> None:
    a, b = Reference("a.json", "a", 1), Reference("b.json", "b", 1)
    assert normalize.references([b, a, b]) == (a, b)


def test_a_protobuf_file_that_cannot_be_printed_the_same_is_kept_as_given() -> None:
    text = 'syntax = "proto2";\npackage p;\nmessage M { extensions 100 to 200; }\n'
    assert compat.normalized(compat.Schema(PROTOBUF, text)) == text.strip()
    record = SchemaRecord("s", 1, 1, text, False, PROTOBUF)
    assert canonical_of(record) == text.strip()
