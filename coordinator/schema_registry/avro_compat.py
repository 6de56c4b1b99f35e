"""Avro schema compatibility: can a reader with one schema read data written with another?

fastavro parses the schemas (`parse`); this module only walks two parsed schemas side by side
with the Avro specification's schema resolution rules, as Avro's SchemaCompatibility (what
Confluent's registry calls) applies them:
- primitives match themselves, and the writer's type may be promoted: int to long, float or
  double; long to float or double; float to double; string to bytes and bytes to string;
- records match by unqualified name (or a reader alias); each reader field is read from the
  writer's field of the same name (or an alias) or, missing there, needs a default; writer
  fields the reader does not have are skipped;
- enums match by name; every writer symbol must be a reader symbol unless the reader has a
  default symbol; fixed types match by name and size;
- arrays by their items, maps by their values;
- a writer union: every branch must be readable; a reader union (writer not a union): some
  branch must read the writer's type.
Logical types are read as their underlying types (as Avro's check does). A recursive type is
assumed compatible with itself on a second visit of the same pair (the recursion ends there).

`incompatibilities(reader, writer)` returns Confluent-like messages (empty: compatible), each
with the error type and the path in the reader's schema where it was found.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from fastavro.schema import SchemaParseException, parse_schema

PROMOTIONS = {
    "int": {"long", "float", "double"},
    "long": {"float", "double"},
    "float": {"double"},
    "string": {"bytes"},
    "bytes": {"string"},
}
PRIMITIVES = {"null", "boolean", "int", "long", "float", "double", "bytes", "string"}
NAMED = {"record", "error", "enum", "fixed"}

Schema = Any  # fastavro's parsed schema: a str, a list (a union) or a dict


class Parsed:
    """A parsed schema and every named type it (and its references) define, by full name."""

    def __init__(self, schema: Schema, names: Mapping[str, Schema]) -> None:
        self.schema = schema
        self.names = names


def parse(text: str, references: Sequence[str] = ()) -> Parsed:
    """Parse an Avro schema's JSON text, its references' texts first (their named types are
    then known to it by name). Raises ValueError (with fastavro's reason) for a bad schema."""
    names: dict[str, Schema] = {}
    try:
        for ref in references:
            parse_schema(json.loads(ref), named_schemas=names, _write_hint=False)
        schema = parse_schema(json.loads(text), named_schemas=names, _write_hint=False)
    except (SchemaParseException, ValueError, TypeError, KeyError, AttributeError) as exc:
        raise ValueError(f"Invalid Avro schema: {exc}") from None
    return Parsed(schema, names)


def canonical(text: str) -> str:
    """A schema text with formatting removed, to tell the same schema registered twice."""
    return json.dumps(json.loads(text), separators=(",", ":"), sort_keys=True)


def incompatibilities(reader: Parsed, writer: Parsed) -> list[str]:
    """Why data written with `writer` cannot be read with `reader` (empty: it can)."""
    return _Checker(reader.names, writer.names).check(reader.schema, writer.schema, "")


class _Checker:
    def __init__(self, r_names: Mapping[str, Schema], w_names: Mapping[str, Schema]) -> None:
        self.r_names, self.w_names = r_names, w_names
        self.seen: set[tuple[str, str]] = set()

    def check(self, reader: Schema, writer: Schema, path: str) -> list[str]:
        reader, writer = self._resolve(reader, self.r_names), self._resolve(writer, self.w_names)
        r_type, w_type = _type(reader), _type(writer)
        if w_type == "union":
            out: list[str] = []
            for i, branch in enumerate(writer):
                out += self._union_branch(reader, branch, f"{path}/{i}")
            return out
        if r_type == "union":
            return self._union_branch(reader, writer, path)
        if r_type != w_type:
            if w_type in PRIMITIVES and r_type in PROMOTIONS.get(w_type, ()):
                return []
            return [
                _msg(
                    "TYPE_MISMATCH",
                    path or "/",
                    f"reader type: {r_type} not compatible with writer type: {w_type}",
                )
            ]
        if r_type in PRIMITIVES:
            return []
        if r_type in ("record", "error"):
            return self._record(reader, writer, path)
        if r_type == "enum":
            return self._enum(reader, writer, path)
        if r_type == "fixed":
            return self._fixed(reader, writer, path)
        if r_type == "array":
            return self.check(reader["items"], writer["items"], f"{path}/items")
        if r_type == "map":
            return self.check(reader["values"], writer["values"], f"{path}/values")
        return [_msg("TYPE_MISMATCH", path or "/", f"unknown type {r_type}")]

    def _resolve(self, schema: Schema, names: Mapping[str, Schema]) -> Schema:
        if isinstance(schema, str) and schema not in PRIMITIVES:
            return names[schema]
        if isinstance(schema, dict) and schema.get("logicalType") and schema["type"] in PRIMITIVES:
            return schema["type"]  # a logical type is read as its underlying type
        if isinstance(schema, dict) and schema.get("type") in PRIMITIVES:
            return schema["type"]
        if isinstance(schema, dict) and str(schema.get("type")) in names:
            return names[schema["type"]]  # {"type": "ns.Name"}: a reference in a wrapper
        return schema

    def _union_branch(self, reader: Schema, writer: Schema, path: str) -> list[str]:
        """A writer type (not a union) read by the reader, a union or not."""
        if _type(self._resolve(reader, self.r_names)) != "union":
            return self.check(reader, writer, path)
        for branch in reader:
            if not self.check(branch, writer, path):
                return []
        w = self._resolve(writer, self.w_names)
        return [
            _msg(
                "MISSING_UNION_BRANCH",
                path or "/",
                f"reader union lacking writer type: {_type(w).upper()}",
            )
        ]

    def _record(self, reader: dict[str, Any], writer: dict[str, Any], path: str) -> list[str]:
        if not _same_name(reader, writer):
            return [_msg("NAME_MISMATCH", f"{path}/name",
                         f"expected: {_short(writer['name'])}")]  # fmt: skip
        pair = (reader["name"], writer["name"])
        if pair in self.seen:
            return []
        self.seen.add(pair)
        w_fields = {f["name"]: f for f in writer["fields"]}
        out: list[str] = []
        for i, field in enumerate(reader["fields"]):
            names = [field["name"], *field.get("aliases", ())]
            w_field = next((w_fields[n] for n in names if n in w_fields), None)
            where = f"{path}/fields/{i}"
            if w_field is not None:
                out += self.check(field["type"], w_field["type"], f"{where}/type")
            elif "default" not in field:
                out.append(_msg("READER_FIELD_MISSING_DEFAULT_VALUE", where,
                                f"{field['name']} has no default value and is missing "
                                "in the writer's schema"))  # fmt: skip
        return out

    def _enum(self, reader: dict[str, Any], writer: dict[str, Any], path: str) -> list[str]:
        if not _same_name(reader, writer):
            return [_msg("NAME_MISMATCH", f"{path}/name", f"expected: {_short(writer['name'])}")]
        missing = [s for s in writer["symbols"] if s not in set(reader["symbols"])]
        if missing and "default" not in reader:
            return [_msg("MISSING_ENUM_SYMBOLS", f"{path}/symbols", f"[{', '.join(missing)}]")]
        return []

    def _fixed(self, reader: dict[str, Any], writer: dict[str, Any], path: str) -> list[str]:
        if not _same_name(reader, writer):
            return [_msg("NAME_MISMATCH", f"{path}/name", f"expected: {_short(writer['name'])}")]
        if reader["size"] != writer["size"]:
            return [_msg("FIXED_SIZE_MISMATCH", f"{path}/size",
                         f"expected: {writer['size']}, found: {reader['size']}")]  # fmt: skip
        return []


def _type(schema: Schema) -> str:
    if isinstance(schema, list):
        return "union"
    if isinstance(schema, dict):
        return str(schema["type"])
    return str(schema)


def _short(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def _same_name(reader: dict[str, Any], writer: dict[str, Any]) -> bool:
    w = writer["name"]
    aliases = {_short(a) for a in reader.get("aliases", ())} | set(reader.get("aliases", ()))
    return _short(reader["name"]) == _short(w) or w in aliases or _short(w) in aliases


def _msg(error_type: str, location: str, description: str) -> str:
    return (f"{{errorType:'{error_type}', description:'{description}', "
            f"location:'{location}'}}")  # fmt: skip
