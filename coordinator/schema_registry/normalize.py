"""`normalize=true`: a schema rewritten in one spelling, as Confluent's `ParsedSchema.normalize()`.

With `?normalize=true` on a registration or lookup, or `normalize: true` in the subject's (else
the global) config, the schema is rewritten before it is matched and stored, so two spellings of
one schema get one id (writes.py). The rewrites follow Confluent's:

- **Avro** (`AvroSchemaUtils.toNormalizedString`, adapted from Avro's SchemaNormalization): the
  JSON written compactly in a fixed key order. A named type is `{"name": full name, "type",
  then symbols / size / fields, doc, aliases (full names, sorted), an enum's default, then its
  other properties sorted}` on its first appearance and its quoted full name after (namespaces
  folded into the names, so `"namespace": "a", "name": "R"` and `"name": "a.R"` are one);
  a field is `{"name", "type", "order" (only when given), "doc", "aliases" (sorted),
  "default", then its other properties sorted}`; a primitive with no properties is its name
  (`{"type": "int"}` is `"int"`), one with a logical type `{"type", "logicalType", "precision"
  and "scale" (0 left out) for a decimal, then its other properties sorted}`. Named types of
  the references are known by their full names.
- **JSON Schema** (`JsonSchema.normalize()`): the JSON written compactly with every object's
  keys sorted.
- **Protobuf** (`ProtobufSchema.normalize()`): the descriptor printed as `.proto` text in one
  layout (protobuf_text.py), so `.proto` text and a base64 descriptor of one file match.
- **References**, for every type: sorted (by name, subject, version) and each once.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from coordinator.schema_registry.records import Reference

PRIMITIVES = frozenset(("null", "boolean", "int", "long", "float", "double", "bytes", "string"))
NAMED = frozenset(("record", "error", "enum", "fixed"))
# keys a named type, a field or a primitive writes in its fixed place (never among "others")
_TYPE_KEYS = frozenset(("type", "name", "namespace", "fields", "symbols", "size", "doc",
                        "aliases", "default", "items", "values"))  # fmt: skip
_FIELD_KEYS = frozenset(("name", "type", "order", "doc", "aliases", "default"))
_LOGICAL_KEYS = frozenset(("logicalType", "precision", "scale"))


def references(refs: Sequence[Reference]) -> tuple[Reference, ...]:
    """The references sorted, each once (Confluent's `references.stream().sorted().distinct()`)."""
    return tuple(sorted(set(refs), key=lambda r: (r.name, r.subject, r.version)))


def json_schema(text: str) -> str:
    """A JSON Schema compact, every object's keys sorted (ValueError: not JSON)."""
    return json.dumps(json.loads(text), separators=(",", ":"), sort_keys=True,
                      ensure_ascii=False)  # fmt: skip


def avro(text: str, referenced: Sequence[str] = ()) -> str:
    """An Avro schema in Confluent's normalized form; `referenced` are the texts of its
    references, whose named types it then names by their full names (ValueError: not JSON)."""
    known: set[str] = set()
    for ref in referenced:
        _Avro(set()).named_types(json.loads(ref), "", known)
    return _Avro(known).build(json.loads(text), "")


def _dump(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)


def _full_name(name: str, namespace: str) -> str:
    return name if "." in name or not namespace else f"{namespace}.{name}"


class _Avro:
    def __init__(self, known: set[str]) -> None:
        self.known = known  # full names already written (after their first appearance)

    def named_types(self, node: Any, namespace: str, into: set[str]) -> None:
        """Every named type's full name a referenced schema defines."""
        if isinstance(node, list):
            for branch in node:
                self.named_types(branch, namespace, into)
        elif isinstance(node, dict):
            kind = node.get("type")
            if kind in NAMED and isinstance(node.get("name"), str):
                full = _full_name(node["name"], node.get("namespace", namespace) or "")
                into.add(full)
                namespace = full.rpartition(".")[0]
            for key in ("fields", "items", "values"):
                if key in node:
                    self.named_types(node[key], namespace, into)
            if isinstance(kind, dict | list):
                self.named_types(kind, namespace, into)
            if "name" in node and "type" in node and kind not in NAMED:  # a field
                self.named_types(kind, namespace, into)

    def build(self, node: Any, namespace: str) -> str:
        if isinstance(node, str):
            return _dump(node if node in PRIMITIVES else _full_name(node, namespace))
        if isinstance(node, list):
            return "[" + ",".join(self.build(b, namespace) for b in node) + "]"
        if not isinstance(node, dict):
            raise ValueError(f"Invalid Avro schema: {node!r} is not a schema")
        kind = node.get("type")
        if isinstance(kind, dict | list):  # {"type": {...}}: the inner schema
            return self.build(kind, namespace)
        if kind in ("array", "map"):
            inner = "items" if kind == "array" else "values"
            out = f'{{"type":"{kind}","{inner}":{self.build(node.get(inner), namespace)}'
            return out + self._others(node, _TYPE_KEYS) + "}"
        if kind in NAMED:
            return self._named(node, kind, namespace)
        if isinstance(kind, str) and kind not in PRIMITIVES:  # {"type": "a.Named"}
            return self.build(kind, namespace)
        return self._primitive(node, kind)

    def _named(self, node: dict[str, Any], kind: str, namespace: str) -> str:
        name = node.get("name")
        if not isinstance(name, str):
            raise ValueError(f"Invalid Avro schema: a {kind} needs a name")
        full = _full_name(name, node.get("namespace", namespace) or "")
        if full in self.known:
            return _dump(full)
        self.known.add(full)
        inner_ns = full.rpartition(".")[0]
        out = f'{{"name":{_dump(full)},"type":"{kind}"'
        if kind == "enum":
            out += f',"symbols":{_dump(node.get("symbols", []))}'
        elif kind == "fixed":
            out += f',"size":{_dump(node.get("size"))}' + self._logical(node)
        else:
            fields = [self._field(f, inner_ns) for f in node.get("fields", [])]
            out += ',"fields":[' + ",".join(fields) + "]"
        if node.get("doc"):
            out += f',"doc":{_dump(node["doc"])}'
        if node.get("aliases"):
            out += f',"aliases":{_dump(sorted(_full_name(a, inner_ns) for a in node["aliases"]))}'
        if kind == "enum" and "default" in node:
            out += f',"default":{_dump(node["default"])}'
        skip = _TYPE_KEYS | (_LOGICAL_KEYS if kind == "fixed" else frozenset())
        return out + self._others(node, skip) + "}"

    def _field(self, f: Any, namespace: str) -> str:
        if not isinstance(f, dict) or not isinstance(f.get("name"), str):
            raise ValueError("Invalid Avro schema: a field needs a name")
        out = f'{{"name":{_dump(f["name"])},"type":{self.build(f.get("type"), namespace)}'
        if "order" in f:
            out += f',"order":{_dump(f["order"])}'
        if "doc" in f:
            out += f',"doc":{_dump(f["doc"])}'
        if f.get("aliases"):
            out += f',"aliases":{_dump(sorted(f["aliases"]))}'
        if "default" in f:
            out += f',"default":{_dump(f["default"])}'
        return out + self._others(f, _FIELD_KEYS) + "}"

    def _primitive(self, node: dict[str, Any], kind: Any) -> str:
        if kind not in PRIMITIVES:
            raise ValueError(f"Invalid Avro schema: unknown type {kind!r}")
        if "logicalType" in node:
            return f'{{"type":"{kind}"' + self._logical(node) + self._others(
                node, _TYPE_KEYS | _LOGICAL_KEYS) + "}"  # fmt: skip
        others = self._others(node, _TYPE_KEYS)
        return f'{{"type":"{kind}"{others}}}' if others else f'"{kind}"'

    @staticmethod
    def _logical(node: dict[str, Any]) -> str:
        if "logicalType" not in node:
            return ""
        out = f',"logicalType":{_dump(node["logicalType"])}'
        if node["logicalType"] == "decimal":
            out += f',"precision":{_dump(node.get("precision"))}'
            if node.get("scale", 0) != 0:
                out += f',"scale":{_dump(node["scale"])}'
        return out

    @staticmethod
    def _others(node: dict[str, Any], skip: frozenset[str]) -> str:
        return "".join(f",{_dump(k)}:{_dump(node[k])}" for k in sorted(node) if k not in skip)
