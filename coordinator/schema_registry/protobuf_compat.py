"""Protobuf compatibility, by Confluent's rules: a diff of two schemas, judged by a table.

**Parsing.** A schema is either `.proto` text or, as confluent-kafka's Python
ProtobufSerializer registers it, a base64 FileDescriptorProto. Text is compiled by protoc
itself (grpcio-tools' in-process compiler: the schema and its references written by their
reference names to a scratch directory, the well-known `google/protobuf/*.proto` from
grpcio-tools' include directory); a text that does not compile is 42201 with protoc's own
lines (`schema.proto:3:60 error: "Nope" is not defined.`). Either way what is compared is the
FileDescriptorProto, with every type name resolved to its full name by protoc.

**Compatibility.** Confluent's registry (its `protobuf.diff` package) walks the writer's file
(`original`) and the reader's (`update`) and names each difference; the pair is compatible
when each is in its COMPATIBLE_CHANGES set (`COMPATIBLE` here):
- the package changed: PACKAGE_CHANGED; top-level and nested messages and enums are matched
  by name: MESSAGE_ADDED, MESSAGE_REMOVED (a message renamed is one of each), ENUM_ADDED, ...;
- fields are matched by number, never by name: FIELD_ADDED, FIELD_REMOVED (proto2 `required`
  ones are REQUIRED_FIELD_ADDED / _REMOVED), FIELD_NAME_CHANGED (harmless on the wire);
- a field's type: scalar, message or map (FIELD_KIND_CHANGED between them); scalars in
  protobuf's wire-compatible groups (int32 int64 uint32 uint64 bool and enums; sint32 sint64;
  string bytes; fixed32 sfixed32; fixed64 sfixed64; float; double), another group is
  FIELD_SCALAR_KIND_CHANGED; a message type by its name within its package, then its fields
  (FIELD_NAMED_TYPE_CHANGED when they differ incompatibly); a map's key and value the same way;
- a scalar's label (singular, repeated, proto2 `required`) changed within its type group:
  FIELD_NUMERIC_LABEL_CHANGED for numbers and enums (packed on the wire; `required` checked),
  the compatible FIELD_STRING_OR_BYTES_LABEL_CHANGED for strings and bytes; a message's
  label is not compared (singular to repeated is compatible on the wire);
- `reserved` numbers and names are not compared: Confluent's default (STRICT) policy lets a
  reserved number be reused (only its LOGICAL policy refuses that);
- oneofs by name: ONEOF_ADDED / _REMOVED, ONEOF_FIELD_ADDED / _REMOVED, and an existing field
  moved into a oneof: fine alone, MULTIPLE_FIELDS_MOVED_TO_ONEOF when two are,
  FIELD_MOVED_TO_EXISTING_ONEOF when the oneof already had fields. proto3 `optional` (a
  synthetic oneof in the descriptor) counts as a plain field.
"""

from __future__ import annotations

import ast
import base64
import binascii
import os
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import grpc_tools
from google.protobuf import descriptor_pb2
from google.protobuf.message import DecodeError
from grpc_tools import _protoc_compiler

from coordinator.schema_registry import protobuf_text

# Confluent's protobuf SchemaDiff.COMPATIBLE_CHANGES; every other difference breaks
COMPATIBLE = frozenset(
    """
    MESSAGE_ADDED MESSAGE_MOVED ENUM_ADDED ENUM_REMOVED ENUM_CONST_ADDED ENUM_CONST_CHANGED
    ENUM_CONST_REMOVED FIELD_ADDED FIELD_REMOVED FIELD_NAME_CHANGED
    FIELD_STRING_OR_BYTES_LABEL_CHANGED ONEOF_ADDED ONEOF_REMOVED ONEOF_FIELD_ADDED
    """.split()  # noqa: SIM905 (a list of names reads better as words)
)

FDP = descriptor_pb2.FieldDescriptorProto
# protobuf's wire-compatible scalar groups ("Updating A Message Type"), as Confluent groups them
SCALAR_GROUPS = {
    FDP.TYPE_INT32: "GENERAL_NUMBER", FDP.TYPE_INT64: "GENERAL_NUMBER",
    FDP.TYPE_UINT32: "GENERAL_NUMBER", FDP.TYPE_UINT64: "GENERAL_NUMBER",
    FDP.TYPE_BOOL: "GENERAL_NUMBER", FDP.TYPE_ENUM: "GENERAL_NUMBER",
    FDP.TYPE_SINT32: "SIGNED_NUMBER", FDP.TYPE_SINT64: "SIGNED_NUMBER",
    FDP.TYPE_STRING: "STRING_OR_BYTES", FDP.TYPE_BYTES: "STRING_OR_BYTES",
    FDP.TYPE_FIXED32: "FIXED32", FDP.TYPE_SFIXED32: "FIXED32",
    FDP.TYPE_FIXED64: "FIXED64", FDP.TYPE_SFIXED64: "FIXED64",
    FDP.TYPE_FLOAT: "FLOAT", FDP.TYPE_DOUBLE: "DOUBLE",
}  # fmt: skip
MAIN_FILE = "schema.proto"  # the name a text schema is compiled under
_INCLUDE = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")  # well-known types


@dataclass(slots=True)
class Parsed:
    """A schema's file descriptor and every message and enum it and its imports define."""

    file: descriptor_pb2.FileDescriptorProto
    messages: dict[str, tuple[str, descriptor_pb2.DescriptorProto]] = field(default_factory=dict)
    enums: set[str] = field(default_factory=set)


def parse(text: str, references: Sequence[tuple[str, str]] = ()) -> Parsed:
    """Parse a schema (`.proto` text or a base64 FileDescriptorProto) with its references as
    (name, text); ValueError with protoc's lines for one that does not compile."""
    files: dict[str, descriptor_pb2.FileDescriptorProto] = {}
    texts: dict[str, str] = {}
    for name, ref in references:
        descriptor = _from_base64(ref)
        if descriptor is None:
            texts[name] = ref
        else:
            descriptor.name = name
            files[name] = descriptor
    main = _from_base64(text)
    if main is None:
        if files:
            raise ValueError("Invalid Protobuf schema: a .proto text schema's references must "
                             "be .proto text too, not serialized descriptors")  # fmt: skip
        compiled = _compile({**texts, MAIN_FILE: text})
        main = compiled.pop(MAIN_FILE)
        files.update(compiled)
    else:
        files.update(_compile(texts) if texts else {})
    parsed = Parsed(main)
    for f in (*files.values(), main):
        _index(parsed, f.package, "", f.message_type, f.enum_type)
    return parsed


def canonical(text: str) -> str:
    """A schema is told by its text as given (base64 or `.proto`), leading and trailing
    whitespace removed: no further normalization."""
    return text.strip()


def normalized(text: str, references: Sequence[tuple[str, str]] = ()) -> str:
    """The schema (`.proto` text or a base64 descriptor) printed as `.proto` text in one
    layout (protobuf_text.py), or as it was given when that cannot be printed the same."""
    file = parse(text, references).file
    texts = {name: ref for name, ref in references if _from_base64(ref) is None}

    def compile_text(printed: str) -> descriptor_pb2.FileDescriptorProto:
        if len(texts) != len(references):  # references given as descriptors: only text here
            raise ValueError("references are serialized descriptors")
        return _compile({**texts, MAIN_FILE: printed})[MAIN_FILE]

    try:
        return protobuf_text.print_file(file, compile_text)
    except ValueError:
        return text.strip()


def serialized(parsed: Parsed) -> str:
    """The schema as a base64 FileDescriptorProto (`?format=serialized`)."""
    return base64.standard_b64encode(parsed.file.SerializeToString()).decode("ascii")


def _from_base64(text: str) -> descriptor_pb2.FileDescriptorProto | None:
    """A base64 FileDescriptorProto's descriptor, or None when `text` is not one."""
    try:
        raw = base64.b64decode("".join(text.split()), validate=True)
        descriptor = descriptor_pb2.FileDescriptorProto.FromString(raw)
    except (binascii.Error, ValueError, DecodeError):
        return None
    if not (descriptor.message_type or descriptor.enum_type or descriptor.syntax):
        return None
    return descriptor


def _compile(texts: dict[str, str]) -> dict[str, descriptor_pb2.FileDescriptorProto]:
    """Compile `.proto` texts by name with protoc: {file name: descriptor}, imports too."""
    out: dict[str, descriptor_pb2.FileDescriptorProto] = {}
    with tempfile.TemporaryDirectory(prefix="odradek-proto-") as scratch:
        for name, text in texts.items():
            path = os.path.join(scratch, name)
            if os.path.commonpath([scratch, os.path.realpath(path)]) != scratch:
                raise ValueError(f"Invalid Protobuf reference name {name!r}")
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        for name in texts:
            try:
                generated = _protoc_compiler.get_protos(
                    name.encode(), [scratch.encode(), _INCLUDE.encode()]
                )
            except _protoc_compiler.ProtocErrors as exc:
                lines = "; ".join(str(e) for e in exc.errors())
                raise ValueError(f"Invalid Protobuf schema: {lines}") from None
            for _, code in generated:
                descriptor = _descriptor_in(code)
                out.setdefault(descriptor.name, descriptor)
    return out


def _descriptor_in(code: bytes) -> descriptor_pb2.FileDescriptorProto:
    """The serialized FileDescriptorProto a generated `_pb2` module adds to its pool."""
    for node in ast.walk(ast.parse(code)):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "AddSerializedFile"):  # fmt: skip
            return descriptor_pb2.FileDescriptorProto.FromString(ast.literal_eval(node.args[0]))
    raise ValueError("Invalid Protobuf schema: protoc generated no descriptor")


def _index(parsed: Parsed, package: str, scope: str, messages: Any, enums: Any) -> None:
    prefix = ".".join(p for p in (package, scope) if p)
    for enum in enums:
        parsed.enums.add(f".{prefix}.{enum.name}" if prefix else f".{enum.name}")
    for message in messages:
        full = f".{prefix}.{message.name}" if prefix else f".{message.name}"
        parsed.messages[full] = (package, message)
        inner = f"{scope}.{message.name}" if scope else message.name
        _index(parsed, package, inner, message.nested_type, message.enum_type)


def incompatibilities(reader: Parsed, writer: Parsed) -> list[str]:
    """Why data written with `writer` may not be read with `reader` (empty: compatible)."""
    diff = _Diff(writer, reader)
    if writer.file.package != reader.file.package:
        diff.add("PACKAGE_CHANGED")
    diff.types(list(writer.file.message_type), list(reader.file.message_type),
               list(writer.file.enum_type), list(reader.file.enum_type))  # fmt: skip
    return [_msg(kind, path) for path, kind in diff.found if kind not in COMPATIBLE]


def _msg(kind: str, path: str) -> str:
    return f"{{errorType:'{kind}', description:'{kind.lower().replace('_', ' ')}', " \
           f"location:'{path}'}}"  # fmt: skip


class _Diff:
    def __init__(self, original: Parsed, update: Parsed) -> None:
        self.sides = (original, update)
        self.found: list[tuple[str, str]] = []
        self.path = ["#"]
        self.seen: set[tuple[str, str]] = set()

    @contextmanager
    def at(self, part: str) -> Iterator[None]:
        self.path.append(part)
        try:
            yield
        finally:
            self.path.pop()

    def add(self, kind: str) -> None:
        self.found.append(("/".join(self.path), kind))

    def types(self, o_msgs: list[Any], u_msgs: list[Any], o_enums: list[Any],
              u_enums: list[Any]) -> None:  # fmt: skip
        o_by = {m.name: (i, m) for i, m in enumerate(o_msgs)}
        u_by = {m.name: (i, m) for i, m in enumerate(u_msgs)}
        for name in sorted(set(o_by) | set(u_by)):
            with self.at(name):
                if name not in u_by:
                    if not o_by[name][1].options.map_entry:
                        self.add("MESSAGE_REMOVED")
                elif name not in o_by:
                    if not u_by[name][1].options.map_entry:
                        self.add("MESSAGE_ADDED")
                else:
                    self.message(o_by[name][1], u_by[name][1])
                    if o_by[name][0] != u_by[name][0]:
                        self.add("MESSAGE_MOVED")
        o_en, u_en = {e.name: e for e in o_enums}, {e.name: e for e in u_enums}
        for name in sorted(set(o_en) | set(u_en)):
            with self.at(name):
                if name not in u_en:
                    self.add("ENUM_REMOVED")
                elif name not in o_en:
                    self.add("ENUM_ADDED")
                else:
                    self.enum(o_en[name], u_en[name])

    def enum(self, o: Any, u: Any) -> None:
        o_by, u_by = {v.number: v.name for v in o.value}, {v.number: v.name for v in u.value}
        for number in sorted(set(o_by) | set(u_by)):
            with self.at(str(number)):
                if number not in u_by:
                    self.add("ENUM_CONST_REMOVED")
                elif number not in o_by:
                    self.add("ENUM_CONST_ADDED")
                elif o_by[number] != u_by[number]:
                    self.add("ENUM_CONST_CHANGED")

    def message(self, o: Any, u: Any) -> None:
        key = (o.name, u.name)
        if key not in self.seen:  # a recursive message met again: already being compared
            self.seen.add(key)
            self._fields(o, u)
        self.types(list(o.nested_type), list(u.nested_type), list(o.enum_type),
                   list(u.enum_type))  # fmt: skip

    def _fields(self, o: Any, u: Any) -> None:
        o_oneof, u_oneof = _oneofs(o), _oneofs(u)
        o_top = {f.number: f for f in o.field if f.number not in _members(o_oneof)}
        u_top = {f.number: f for f in u.field if f.number not in _members(u_oneof)}
        o_all, u_all = {f.number: f for f in o.field}, {f.number: f for f in u.field}
        o_in_oneof = _members(o_oneof)
        for name, numbers in u_oneof.items():
            with self.at(name):
                moved = [n for n in numbers if o_top.pop(n, None) is not None]
                existing = [n for n in numbers if n in o_in_oneof]
                if len(moved) > 1:
                    self.add("MULTIPLE_FIELDS_MOVED_TO_ONEOF")
                elif moved and existing:
                    self.add("FIELD_MOVED_TO_EXISTING_ONEOF")
        for name in sorted(set(o_oneof) | set(u_oneof)):
            with self.at(name):
                if name not in u_oneof:
                    self.add("ONEOF_REMOVED")
                elif name not in o_oneof:
                    self.add("ONEOF_ADDED")
                else:
                    for number in sorted(set(o_oneof[name]) | set(u_oneof[name])):
                        with self.at(str(number)):
                            if number not in u_oneof[name]:
                                if number not in u_all:
                                    self.add("ONEOF_FIELD_REMOVED")
                            elif number not in o_oneof[name]:
                                self.add("ONEOF_FIELD_ADDED")
                            else:
                                self.field(o_all[number], u_all[number])
        for number in sorted(set(o_top) | set(u_top)):
            with self.at(str(number)):
                if number not in u_top:
                    required = o_top[number].label == FDP.LABEL_REQUIRED
                    self.add("REQUIRED_FIELD_REMOVED" if required else "FIELD_REMOVED")
                elif number not in o_top:
                    required = u_top[number].label == FDP.LABEL_REQUIRED
                    self.add("REQUIRED_FIELD_ADDED" if required else "FIELD_ADDED")
                else:
                    self.field(o_top[number], u_top[number])
        for number in sorted(set(o_all) & set(u_all)):  # fields that moved in or out of oneofs
            o_in, u_in = _oneof_of(o_oneof, number), _oneof_of(u_oneof, number)
            if (o_in or u_in) and o_in != u_in:
                with self.at(str(number)):
                    self.field(o_all[number], u_all[number])

    def field(self, o: Any, u: Any) -> None:
        if o.name != u.name:
            self.add("FIELD_NAME_CHANGED")
        self._type(o, u, self._map_entry(o, 0), self._map_entry(u, 1), labels=True)

    def _label(self, o: Any, u: Any) -> None:
        """A scalar's (or enum's) label changed, its type group kept: numbers are packed
        when repeated and proto2 `required` is checked on read, so any change of a number's
        label breaks; a string's or bytes' does not (Confluent's compareScalarTypes). A
        message's label is not compared; proto3's plain and `optional` fields are both
        LABEL_OPTIONAL in the descriptor."""
        if o.label != u.label:
            numeric = SCALAR_GROUPS.get(o.type) != "STRING_OR_BYTES"
            self.add("FIELD_NUMERIC_LABEL_CHANGED" if numeric
                     else "FIELD_STRING_OR_BYTES_LABEL_CHANGED")  # fmt: skip

    def _type(self, o: Any, u: Any, o_map: Any, u_map: Any, labels: bool = False) -> None:
        o_kind, u_kind = _kind(o, o_map), _kind(u, u_map)
        if o_kind != u_kind:
            self.add("FIELD_KIND_CHANGED")
        elif o_kind == "MAP":
            (ok, ov), (uk, uv) = o_map, u_map
            self._type(ok, uk, None, None)
            self._type(ov, uv, self._map_entry(ov, 0), self._map_entry(uv, 1))
        elif o_kind == "SCALAR":
            if SCALAR_GROUPS.get(o.type) != SCALAR_GROUPS.get(u.type):
                self.add("FIELD_SCALAR_KIND_CHANGED")
            elif labels:
                self._label(o, u)
        else:
            self._named_type(o.type_name, u.type_name)

    def _named_type(self, o_name: str, u_name: str) -> None:
        o_found, u_found = self.sides[0].messages.get(o_name), self.sides[1].messages.get(u_name)
        if o_found is None or u_found is None:  # not resolved: the names must match
            if o_name != u_name:
                self.add("FIELD_NAMED_TYPE_CHANGED")
            return
        if _local(o_name, o_found[0]) != _local(u_name, u_found[0]):
            self.add("FIELD_NAMED_TYPE_CHANGED")
            return
        saved, self.found = self.found, []
        self.message(o_found[1], u_found[1])
        inner, self.found = self.found, saved
        self.found += inner
        if any(kind not in COMPATIBLE for _, kind in inner):
            self.add("FIELD_NAMED_TYPE_CHANGED")

    def _map_entry(self, f: Any, side: int) -> tuple[Any, Any] | None:
        """(key field, value field) of a map field, else None."""
        if f.type != FDP.TYPE_MESSAGE or f.label != FDP.LABEL_REPEATED:
            return None
        found = self.sides[side].messages.get(f.type_name)
        if found is None or not found[1].options.map_entry:
            return None
        by_number = {x.number: x for x in found[1].field}
        return by_number[1], by_number[2]


def _kind(f: Any, map_entry: Any) -> str:
    if map_entry is not None:
        return "MAP"
    return "MESSAGE" if f.type in (FDP.TYPE_MESSAGE, FDP.TYPE_GROUP) else "SCALAR"


def _local(full: str, package: str) -> str:
    prefix = f".{package}." if package else "."
    return full[len(prefix) :] if full.startswith(prefix) else full


def _oneofs(message: Any) -> dict[str, list[int]]:
    """Real oneofs (not proto3 `optional`'s synthetic ones) by name: their field numbers."""
    out: dict[str, list[int]] = {}
    for f in message.field:
        if f.HasField("oneof_index") and not f.proto3_optional:
            out.setdefault(message.oneof_decl[f.oneof_index].name, []).append(f.number)
    return out


def _members(oneofs: dict[str, list[int]]) -> set[int]:
    return {n for numbers in oneofs.values() for n in numbers}


def _oneof_of(oneofs: dict[str, list[int]], number: int) -> str | None:
    return next((name for name, numbers in oneofs.items() if number in numbers), None)
