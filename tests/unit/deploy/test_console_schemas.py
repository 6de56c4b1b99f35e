"""The console's decoding of values framed with a schema registry id (deploy/console/
schemas.py): Confluent's framing read, Avro decoded with the registry's schema, JSON Schema's
JSON pretty-printed, Protobuf decoded by its message indexes, and anything else left for the
page to show as it is."""

from __future__ import annotations

import io
import json
import struct

import fastavro
from google.protobuf import message_factory

from coordinator.schema_registry import protobuf_compat
from deploy.console import protobuf_values
from deploy.console.schemas import decode, framed_id, parse_schema

AVRO = json.dumps({"type": "record", "name": "Invoice", "fields": [
    {"name": "id", "type": "string"}, {"name": "cents", "type": "long"},
    {"name": "raw", "type": "bytes"}]})  # fmt: skip


def framed(schema_id: int, payload: bytes) -> bytes:
    return b"\x00" + struct.pack(">I", schema_id) + payload


def avro_payload(record: dict[str, object]) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(json.loads(AVRO)), record)
    return out.getvalue()


def test_framing_is_magic_zero_then_a_big_endian_id() -> None:
    assert framed_id(framed(258, b"x")) == 258
    assert framed_id(b"\x00\x00\x00\x01") is None  # too short for an id and a payload
    assert framed_id(b"\x01\x00\x00\x00\x01x") is None  # another magic byte
    assert framed_id(None) is None


def test_avro_is_decoded_with_the_registrys_schema() -> None:
    value = framed(7, avro_payload({"id": "i-1", "cents": 1250, "raw": b"\x01\x02"}))
    shown = decode(value, 7, *parse_schema("AVRO", AVRO))
    assert shown is not None
    assert (shown["kind"], shown["schema_id"], shown["size"]) == ("avro", 7, len(value))
    assert json.loads(shown["text"]) == {"id": "i-1", "cents": 1250, "raw": "01 02"}
    # a payload this schema does not read: left as it is
    assert decode(framed(7, b"\x99"), 7, *parse_schema("AVRO", AVRO)) is None


def test_json_schema_values_and_the_types_not_decoded() -> None:
    shown = decode(framed(3, b'{"a": [1, 2]}'), 3, *parse_schema("JSON", '{"type": "object"}'))
    assert shown is not None and shown["kind"] == "json-schema"
    assert json.loads(shown["text"]) == {"a": [1, 2]}
    assert decode(framed(3, b"{not json"), 3, *parse_schema("JSON", "{}")) is None
    assert decode(framed(4, b"\x00\x08\x01"), 4, *parse_schema("PROTOBUF", "syntax")) is None
    assert decode(framed(5, b"x"), 5, *parse_schema("AVRO", "{not a schema")) is None


ORDER_PROTO = """syntax = "proto3";
package shop;
import "google/protobuf/timestamp.proto";
message Order {
  string id = 1;
  int32 count = 2;
  google.protobuf.Timestamp at = 3;
  message Line { string sku = 1; int64 cents = 2; }
}
"""


def _order_schema() -> protobuf_values.Schema:
    """The schema as the console builds it: from the descriptor `?format=serialized` gives."""
    file = protobuf_compat.parse(ORDER_PROTO).file
    return protobuf_values.build(file, [])


def test_protobuf_values_decoded_by_their_message_indexes() -> None:
    schema = _order_schema()
    classes = {
        name: message_factory.GetMessageClass(schema.pool.FindMessageTypeByName(name))
        for name in ("shop.Order", "shop.Order.Line")
    }
    order = classes["shop.Order"](id="o-1", count=3)
    order.at.FromSeconds(0)
    # [0]: the single byte 0; [0, 0]: count 2 then 0 and 0, each a zigzag varint
    shown = decode(framed(9, b"\x00" + order.SerializeToString()), 9, "PROTOBUF", schema)
    assert shown is not None and (shown["kind"], shown["message"]) == ("protobuf", "shop.Order")
    assert json.loads(shown["text"]) == {"id": "o-1", "count": 3, "at": "1970-01-01T00:00:00Z"}
    line = classes["shop.Order.Line"](sku="a", cents=-5).SerializeToString()
    shown = decode(framed(9, b"\x04\x00\x00" + line), 9, "PROTOBUF", schema)
    assert shown is not None and shown["message"] == "shop.Order.Line"
    assert json.loads(shown["text"]) == {"sku": "a", "cents": "-5"}  # int64: a JSON string
    # indexes past the file's messages, a cut varint, bytes that are no message: as they are
    for payload in (b"\x02\x04", b"\x02\x80", b"\x00\xff\xff\xff"):
        assert decode(framed(9, payload), 9, "PROTOBUF", schema) is None
    assert protobuf_values.message_indexes(b"\x06\x02\x00\x04") == ([1, 0, 2], 4)
