"""A FileDescriptorProto printed as `.proto` text in one layout: Protobuf's `normalize=true`.

Confluent's registry tells a Protobuf schema by the text its parser prints back, so `.proto`
text and a base64 descriptor of the same file are one schema, and `normalize` then sorts
options and imports. Here the descriptor (protobuf_compat.py compiles text with protoc, or
reads the base64 one) is printed:

    syntax = "proto3";
    package a.b;

    import "other.proto";          imports sorted (public / weak kept)

    option java_package = "x";     options sorted by name, here and in every block

    message M {                    messages, then enums, then services, each as declared
      string name = 1;             fields in number order; type names fully qualified (.a.b.T)
      map<string, int64> m = 2;    a map entry printed as map<K, V>, never as its message
      optional int32 o = 3;        proto3 optional; proto2 labels as declared
      oneof kind { ... }           a oneof at its first field
      reserved 5 to 7, 9;          reserved ranges and names, sorted
      message Inner { ... }
    }

`print_file` checks its work: the text it prints must compile to the same descriptor (source
info and the file name aside). What it cannot print the same (extensions, custom options,
groups) raises ValueError, and the caller keeps the schema as it was given.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from google.protobuf import descriptor_pb2

FDP = descriptor_pb2.FieldDescriptorProto
SCALARS = {
    FDP.TYPE_DOUBLE: "double", FDP.TYPE_FLOAT: "float", FDP.TYPE_INT64: "int64",
    FDP.TYPE_UINT64: "uint64", FDP.TYPE_INT32: "int32", FDP.TYPE_FIXED64: "fixed64",
    FDP.TYPE_FIXED32: "fixed32", FDP.TYPE_BOOL: "bool", FDP.TYPE_STRING: "string",
    FDP.TYPE_BYTES: "bytes", FDP.TYPE_UINT32: "uint32", FDP.TYPE_SFIXED32: "sfixed32",
    FDP.TYPE_SFIXED64: "sfixed64", FDP.TYPE_SINT32: "sint32", FDP.TYPE_SINT64: "sint64",
}  # fmt: skip
LABELS = {FDP.LABEL_OPTIONAL: "optional", FDP.LABEL_REQUIRED: "required",
          FDP.LABEL_REPEATED: "repeated"}  # fmt: skip
MAX_FIELD_NUMBER = 536_870_911
INDENT = "  "


def print_file(
    file: descriptor_pb2.FileDescriptorProto,
    compile_text: Callable[[str], descriptor_pb2.FileDescriptorProto],
) -> str:
    """The file as `.proto` text in the layout above; ValueError when the text would not
    compile (with `compile_text`) back to the same descriptor."""
    if file.extension or any(_has_extensions(m) for m in file.message_type):
        raise ValueError("extensions are not printed")
    text = _File(file).text()
    again = compile_text(text)
    if _comparable(again) != _comparable(file):
        raise ValueError("the printed text does not compile to the same descriptor")
    return text


def _comparable(file: descriptor_pb2.FileDescriptorProto) -> bytes:
    copy = descriptor_pb2.FileDescriptorProto()
    copy.CopyFrom(file)
    copy.ClearField("source_code_info")
    copy.ClearField("name")
    if copy.syntax == "proto2":
        copy.ClearField("syntax")
    for message in copy.message_type:
        _canonical_message(message)
    return copy.SerializeToString(deterministic=True)


def _canonical_message(message: Any) -> None:
    """Fields by number, nested messages by name, reserved ranges and names sorted (their
    order means nothing on the wire); json_name left out (protoc sets it only sometimes)."""
    for f in message.field:
        f.ClearField("json_name")
    _sort(message.field, lambda x: x.number)
    _sort(message.nested_type, lambda x: x.name)
    _sort(message.reserved_range, lambda x: x.start)
    message.reserved_name.sort()
    for nested in message.nested_type:
        _canonical_message(nested)


def _sort(repeated: Any, key: Callable[[Any], Any]) -> None:
    items = sorted(repeated, key=key)
    copies = [type(x)() for x in items]
    for copy, item in zip(copies, items, strict=True):
        copy.CopyFrom(item)
    del repeated[:]
    repeated.extend(copies)


def _has_extensions(message: Any) -> bool:
    return bool(message.extension or message.extension_range) or any(
        _has_extensions(m) for m in message.nested_type
    )


def _literal(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, int | float):
        return repr(value)
    raise ValueError(f"an option value {value!r} is not printed")


def _options(options: Any) -> list[tuple[str, str]]:
    """(name, literal) of every option set, sorted; an enum option by its value's name."""
    out = []
    for fd, value in options.ListFields():
        if fd.is_extension or fd.name == "uninterpreted_option":
            raise ValueError("custom options are not printed")
        if fd.enum_type is not None:
            out.append((fd.name, fd.enum_type.values_by_number[value].name))
        else:
            out.append((fd.name, _literal(value)))
    return sorted(out)


class _File:
    def __init__(self, file: descriptor_pb2.FileDescriptorProto) -> None:
        self.file = file
        self.lines: list[str] = []

    def text(self) -> str:
        f = self.file
        self.lines.append(f'syntax = "{f.syntax or "proto2"}";')
        if f.package:
            self.lines.append(f"package {f.package};")
        public, weak = set(f.public_dependency), set(f.weak_dependency)
        imports = sorted(
            (dep, "public " if i in public else "weak " if i in weak else "")
            for i, dep in enumerate(f.dependency)
        )
        self._block([f'import {kind}"{dep}";' for dep, kind in imports])
        self._block([f"option {name} = {value};" for name, value in _options(f.options)])
        for message in f.message_type:
            self._blank()
            self._message(message, 0)
        for enum in f.enum_type:
            self._blank()
            self._enum(enum, 0)
        for service in f.service:
            self._blank()
            self._service(service)
        return "\n".join(self.lines) + "\n"

    def _blank(self) -> None:
        self.lines.append("")

    def _block(self, lines: list[str]) -> None:
        if lines:
            self._blank()
            self.lines += lines

    def _add(self, depth: int, line: str) -> None:
        self.lines.append(INDENT * depth + line)

    def _message(self, m: Any, depth: int) -> None:
        self._add(depth, f"message {m.name} {{")
        for name, value in _options(m.options):
            self._add(depth + 1, f"option {name} = {value};")
        maps = {f".{n.name}": n for n in m.nested_type if n.options.map_entry}
        printed_oneofs: set[int] = set()
        for f in sorted(m.field, key=lambda x: x.number):
            real_oneof = f.HasField("oneof_index") and not f.proto3_optional
            if real_oneof:
                if f.oneof_index not in printed_oneofs:
                    printed_oneofs.add(f.oneof_index)
                    self._oneof(m, f.oneof_index, maps, depth + 1)
                continue
            self._add(depth + 1, self._field(f, maps))
        self._reserved(m, depth + 1)
        for nested in m.nested_type:
            if not nested.options.map_entry:
                self._message(nested, depth + 1)
        for enum in m.enum_type:
            self._enum(enum, depth + 1)
        self._add(depth, "}")

    def _oneof(self, m: Any, index: int, maps: dict[str, Any], depth: int) -> None:
        decl = m.oneof_decl[index]
        self._add(depth, f"oneof {decl.name} {{")
        for name, value in _options(decl.options):
            self._add(depth + 1, f"option {name} = {value};")
        members = [f for f in m.field if f.HasField("oneof_index") and f.oneof_index == index]
        for f in sorted(members, key=lambda x: x.number):
            self._add(depth + 1, self._field(f, maps, label=False))
        self._add(depth, "}")

    def _field(self, f: Any, maps: dict[str, Any], label: bool = True) -> str:
        entry = next((e for n, e in maps.items() if f.type_name.endswith(n)), None)
        if entry is not None and f.label == FDP.LABEL_REPEATED:
            key, value = sorted(entry.field, key=lambda x: x.number)
            kind, prefix = f"map<{self._type(key)}, {self._type(value)}>", ""
        else:
            kind = self._type(f)
            prefix = "" if not label else self._label(f)
        options = _options(f.options)
        if f.HasField("default_value"):
            default = f.default_value
            if f.type in (FDP.TYPE_STRING, FDP.TYPE_BYTES):
                default = _literal(default)
            options = sorted([*options, ("default", default)])
        if f.HasField("json_name") and f.json_name != _camel(f.name):
            options = sorted([*options, ("json_name", _literal(f.json_name))])
        suffix = f" [{', '.join(f'{n} = {v}' for n, v in options)}]" if options else ""
        return f"{prefix}{kind} {f.name} = {f.number}{suffix};"

    def _label(self, f: Any) -> str:
        if f.type == FDP.TYPE_GROUP:
            raise ValueError("groups are not printed")
        if f.proto3_optional:
            return "optional "
        if self.file.syntax == "proto3" and f.label == FDP.LABEL_OPTIONAL:
            return ""
        if self.file.syntax == "editions":
            raise ValueError("editions are not printed")
        return LABELS[f.label] + " "

    @staticmethod
    def _type(f: Any) -> str:
        if f.type in (FDP.TYPE_MESSAGE, FDP.TYPE_ENUM):
            return f.type_name
        if f.type == FDP.TYPE_GROUP:
            raise ValueError("groups are not printed")
        return SCALARS[f.type]

    def _reserved(self, m: Any, depth: int) -> None:
        ranges = []
        for r in sorted(m.reserved_range, key=lambda x: x.start):
            last = r.end - 1  # the descriptor's end is exclusive
            if last == r.start:
                ranges.append(str(r.start))
            else:
                ranges.append(f"{r.start} to {'max' if last == MAX_FIELD_NUMBER else last}")
        if ranges:
            self._add(depth, f"reserved {', '.join(ranges)};")
        if m.reserved_name:
            self._add(depth, f"reserved {', '.join(_literal(n) for n in sorted(m.reserved_name))};")

    def _enum(self, e: Any, depth: int) -> None:
        self._add(depth, f"enum {e.name} {{")
        for name, value in _options(e.options):
            self._add(depth + 1, f"option {name} = {value};")
        for v in e.value:
            options = _options(v.options)
            suffix = f" [{', '.join(f'{n} = {x}' for n, x in options)}]" if options else ""
            self._add(depth + 1, f"{v.name} = {v.number}{suffix};")
        for r in sorted(e.reserved_range, key=lambda x: x.start):  # the end is inclusive here
            last = "" if r.end == r.start else f" to {r.end}"
            self._add(depth + 1, f"reserved {r.start}{last};")
        if e.reserved_name:
            names = ", ".join(_literal(n) for n in sorted(e.reserved_name))
            self._add(depth + 1, f"reserved {names};")
        self._add(depth, "}")

    def _service(self, s: Any) -> None:
        self._add(0, f"service {s.name} {{")
        for name, value in _options(s.options):
            self._add(1, f"option {name} = {value};")
        for rpc in s.method:
            args = (f"{'stream ' if rpc.client_streaming else ''}{rpc.input_type}",
                    f"{'stream ' if rpc.server_streaming else ''}{rpc.output_type}")  # fmt: skip
            options = _options(rpc.options)
            inside = "".join(f" option {n} = {v};" for n, v in options)
            body = f" {{{inside} }}" if options else ";"
            self._add(1, f"rpc {rpc.name}({args[0]}) returns ({args[1]}){body}")
        self._add(0, "}")


def _camel(name: str) -> str:
    """protoc's default json_name: lowerCamelCase of the field name."""
    parts = name.split("_")
    return parts[0] + "".join(p[:1].upper() + p[1:] for p in parts[1:])
