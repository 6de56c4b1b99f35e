"""Protobuf compatibility (Confluent's rules): a table of changes, each under every level.

Each row is (change, old .proto, new .proto, BACKWARD?, FORWARD?), the same rows as the
Protobuf table of docs/schema-registry.md (`test_the_docs_show_this_table`). protoc (from
grpcio-tools) compiles each schema; base64 descriptors, as confluent-kafka's Python
ProtobufSerializer registers them, are read as they are.
"""

from __future__ import annotations

import base64

import pytest

from coordinator.schema_registry import compat, protobuf_compat
from coordinator.schema_registry.compat import Schema
from coordinator.schema_registry.errors import RegistryError
from tests.unit.coordinator.schema_registry.docs_table import check_row, table


def proto(body: str, package: str = "t", syntax: str = "proto3") -> str:
    return f'syntax = "{syntax}";\npackage {package};\n{body}\n'


BASE = proto("message User { string name = 1; int32 age = 2; }")
TABLE: list[tuple[str, str, str, bool, bool]] = [
    ("add a field", BASE,
     proto("message User { string name = 1; int32 age = 2; string email = 3; }"), True, True),
    ("remove a field", BASE, proto("message User { string name = 1; }"), True, True),
    ("rename a field (same number)", BASE,
     proto("message User { string name = 1; int32 years = 2; }"), True, True),
    ("int32 to int64 (same wire group)", BASE,
     proto("message User { string name = 1; int64 age = 2; }"), True, True),
    ("int32 to sint32", BASE, proto("message User { string name = 1; sint32 age = 2; }"),
     False, False),
    ("string to bytes", BASE, proto("message User { bytes name = 1; int32 age = 2; }"),
     True, True),
    ("string to int32", BASE, proto("message User { int32 name = 1; int32 age = 2; }"),
     False, False),
    ("a scalar becomes a message", BASE,
     proto("message User { string name = 1; A age = 2; } message A { int32 v = 1; }"),
     False, False),
    ("string made repeated", BASE,
     proto("message User { repeated string name = 1; int32 age = 2; }"), True, True),
    ("int32 made repeated", BASE,
     proto("message User { string name = 1; repeated int32 age = 2; }"), False, False),
    ("add a message", BASE, proto("message User { string name = 1; int32 age = 2; }\n"
                                  "message Group { string id = 1; }"), True, False),
    ("rename the message", BASE, proto("message Person { string name = 1; int32 age = 2; }"),
     False, False),
    ("change the package", BASE, proto("message User { string name = 1; int32 age = 2; }",
                                       package="u"), False, False),
    ("add an enum value", proto("enum E { A = 0; } message User { E e = 1; }"),
     proto("enum E { A = 0; B = 1; } message User { E e = 1; }"), True, True),
    ("an enum field becomes int32", proto("enum E { A = 0; } message User { E e = 1; }"),
     proto("enum E { A = 0; } message User { int32 e = 1; }"), True, True),
    ("add a oneof with new fields", BASE,
     proto("message User { string name = 1; int32 age = 2; oneof c { string a = 3; } }"),
     True, True),
    ("move one field into a new oneof", BASE,
     proto("message User { oneof n { string name = 1; } int32 age = 2; }"), True, True),
    ("move two fields into a oneof", BASE,
     proto("message User { oneof n { string name = 1; int32 age = 2; } }"), False, True),
    ("a nested message's field changes type",
     proto("message User { Inner i = 1; message Inner { string x = 1; } }"),
     proto("message User { Inner i = 1; message Inner { int32 x = 1; } }"), False, False),
    ("a map's value type changes",
     proto("message User { map<string, string> m = 1; }"),
     proto("message User { map<string, int32> m = 1; }"), False, False),
    ("add a required field (proto2)",
     proto("message User { optional string name = 1; }", syntax="proto2"),
     proto("message User { optional string name = 1; required int32 age = 2; }",
           syntax="proto2"), False, False),
    ("an int32 made required (proto2)",
     proto("message User { optional int32 age = 1; }", syntax="proto2"),
     proto("message User { required int32 age = 1; }", syntax="proto2"), False, False),
    ("a string made required (proto2)",
     proto("message User { optional string name = 1; }", syntax="proto2"),
     proto("message User { required string name = 1; }", syntax="proto2"), True, True),
    ("a message field made repeated",
     proto("message User { A a = 1; } message A { int32 v = 1; }"),
     proto("message User { repeated A a = 1; } message A { int32 v = 1; }"), True, True),
    ("an enum field made repeated", proto("enum E { A = 0; } message User { E e = 1; }"),
     proto("enum E { A = 0; } message User { repeated E e = 1; }"), False, False),
    ("a field made proto3 optional", BASE,
     proto("message User { string name = 1; optional int32 age = 2; }"), True, True),
    ("reuse a reserved number", proto("message User { string name = 1; reserved 2; }"),
     proto("message User { string name = 1; int32 age = 2; }"), True, True),
    ("remove a field, its number reserved", BASE,
     proto("message User { string name = 1; reserved 2; }"), True, True),
]  # fmt: skip


@pytest.mark.parametrize("level", compat.LEVELS)
@pytest.mark.parametrize(("change", "old", "new", "backward", "forward"), TABLE,
                         ids=[row[0] for row in TABLE])  # fmt: skip
def test_change_under_level(
    level: str, change: str, old: str, new: str, backward: bool, forward: bool
) -> None:
    check_row("PROTOBUF", level, change, old, new, backward, forward)


def test_the_docs_show_this_table() -> None:
    assert table("Protobuf") == {row[0]: (row[3], row[4]) for row in TABLE}


def test_messages_name_confluents_difference_and_where() -> None:
    [problem] = protobuf_compat.incompatibilities(
        protobuf_compat.parse(proto("message User { string name = 1; sint32 age = 2; }")),
        protobuf_compat.parse(BASE),
    )
    assert "FIELD_SCALAR_KIND_CHANGED" in problem and "#/User/2" in problem


def test_a_base64_descriptor_reads_as_its_text() -> None:
    as_text = protobuf_compat.parse(BASE)
    encoded = protobuf_compat.serialized(as_text)
    assert base64.b64decode(encoded)  # what confluent-kafka's ProtobufSerializer registers
    assert protobuf_compat.parse(encoded).file.message_type[0].name == "User"
    wider = proto("message User { string name = 1; int32 age = 2; string email = 3; }")
    assert compat.check("FULL", Schema("PROTOBUF", wider), [Schema("PROTOBUF", encoded)]) == []


def test_references_are_imports_by_name() -> None:
    address = proto("message Address { string city = 1; }")
    user = proto('import "address.proto";\nmessage User { Address home = 1; }')
    refs = (("address.proto", address),)
    parsed = protobuf_compat.parse(user, refs)
    assert ".t.Address" in parsed.messages
    changed = proto("message Address { int64 city = 1; }")
    problems = compat.check("BACKWARD", Schema("PROTOBUF", user, (("address.proto", changed),)),
                            [Schema("PROTOBUF", user, refs)])  # fmt: skip
    assert any("FIELD_NAMED_TYPE_CHANGED" in p for p in problems), problems
    with pytest.raises(RegistryError) as missing:  # without the reference
        compat.parse(Schema("PROTOBUF", user))
    assert missing.value.error_code == 42201 and "address.proto" in missing.value.message


def test_well_known_imports_compile() -> None:
    text = proto('import "google/protobuf/timestamp.proto";\n'
                 "message E { google.protobuf.Timestamp at = 1; }")  # fmt: skip
    assert protobuf_compat.parse(text).file.dependency == ["google/protobuf/timestamp.proto"]


@pytest.mark.parametrize("text", [
    proto("message M { Nope x = 1; }"), "message {",
    proto("message M { int32 a = 1; int32 b = 1; }"),
])  # fmt: skip
def test_a_bad_schema_is_42201_with_protocs_line(text: str) -> None:
    with pytest.raises(RegistryError) as bad:
        compat.parse(Schema("PROTOBUF", text))
    assert (bad.value.status, bad.value.error_code) == (422, 42201)
    assert bad.value.message.startswith("Invalid Protobuf schema: schema.proto:")


def test_a_parsed_schema_is_kept_not_compiled_again() -> None:
    schema = Schema("PROTOBUF", BASE)
    assert compat.parse(schema) is compat.parse(Schema("PROTOBUF", BASE))


@pytest.mark.parametrize("name", ["../escape.proto", "/etc/escape.proto"])
def test_a_reference_name_stays_in_the_scratch_directory(name: str) -> None:
    user = proto(f'import "{name}";\nmessage User {{ string name = 1; }}')
    with pytest.raises(RegistryError) as bad:
        compat.parse(Schema("PROTOBUF", user, ((name, proto("message X {}")),)))
    assert bad.value.error_code == 42201 and "reference name" in bad.value.message
