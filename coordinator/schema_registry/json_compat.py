"""JSON Schema compatibility, by Confluent's rules: a diff of two schemas, judged by a table.

Confluent's registry (its `json.diff` package) walks the writer's schema (`original`) and the
reader's (`update`) side by side, lists every difference as a type (`PROPERTY_ADDED_TO_OPEN_
CONTENT_MODEL` at `#/properties/x`, ...), and calls the pair compatible when each difference
is in its COMPATIBLE_CHANGES set. This module does the same walk over the schemas' JSON, with
the same difference names, and the same set (`COMPATIBLE`): BACKWARD is "the old schema as
writer, the new as reader", FORWARD the other way round (compat.py).

What a node is, as Confluent's JSON Schema library (everit) reads it: `true` or `{}` accepts
anything (EMPTY), `false` nothing (FALSE); `enum` / `const` make an enum; `allOf` / `anyOf` /
`oneOf` a combined schema, and a `type` list an `anyOf` of one schema per type; `not`; else
the `type` (or, without one, `properties` / `items` imply object / array). `$ref` is followed
(`referencing` resolves it: `#/definitions/..`, `$id`s, and a reference's name as its URI).

The rules, in short: under an open content model (no `additionalProperties: false`, no
`patternProperties`, no schema for additional properties) a property may be removed from the
reader but not added to it (old data may hold anything under that name); under a closed one a
property may be added to the reader (optional, or required with a default) but not removed;
a partially open one checks the property against the pattern or additional-properties schema
that covers it. A type may widen (integer to number, X to a union holding X), never narrow or
change; enums may gain values, not lose them; limits (maxLength, maximum, minItems...) may
relax, not tighten; `required` may be dropped, added only with a default.

jsonschema's validator checks each schema against its metaschema first (`parse`): a schema
that is not a valid JSON Schema is refused (42201) with the validator's reason.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import jsonschema
import re2
from referencing import Registry, Resource
from referencing.exceptions import Unresolvable
from referencing.jsonschema import DRAFT7

# Confluent's SchemaDiff.COMPATIBLE_CHANGES; every other difference breaks compatibility
COMPATIBLE = frozenset(
    """
    ID_CHANGED DESCRIPTION_CHANGED TITLE_CHANGED DEFAULT_CHANGED SCHEMA_REMOVED
    TYPE_EXTENDED MAX_LENGTH_INCREASED MAX_LENGTH_REMOVED MIN_LENGTH_DECREASED
    MIN_LENGTH_REMOVED PATTERN_REMOVED MAXIMUM_INCREASED MAXIMUM_REMOVED MINIMUM_DECREASED
    MINIMUM_REMOVED EXCLUSIVE_MAXIMUM_INCREASED EXCLUSIVE_MAXIMUM_REMOVED
    EXCLUSIVE_MINIMUM_DECREASED EXCLUSIVE_MINIMUM_REMOVED MULTIPLE_OF_REDUCED
    MULTIPLE_OF_REMOVED REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED REQUIRED_ATTRIBUTE_REMOVED
    DEPENDENCY_ARRAY_NARROWED DEPENDENCY_ARRAY_REMOVED DEPENDENCY_SCHEMA_REMOVED
    MAX_PROPERTIES_INCREASED MAX_PROPERTIES_REMOVED MIN_PROPERTIES_DECREASED
    MIN_PROPERTIES_REMOVED ADDITIONAL_PROPERTIES_ADDED ADDITIONAL_PROPERTIES_EXTENDED
    PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL
    REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL
    OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL
    PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL
    PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL
    PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL
    PROPERTY_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL MAX_ITEMS_INCREASED
    MAX_ITEMS_REMOVED MIN_ITEMS_DECREASED MIN_ITEMS_REMOVED UNIQUE_ITEMS_REMOVED
    ADDITIONAL_ITEMS_ADDED ADDITIONAL_ITEMS_EXTENDED
    ITEM_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL ITEM_ADDED_TO_CLOSED_CONTENT_MODEL
    ITEM_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL
    ENUM_ARRAY_EXTENDED COMBINED_TYPE_EXTENDED PRODUCT_TYPE_NARROWED SUM_TYPE_EXTENDED
    NOT_TYPE_NARROWED MAX_CONTAINS_INCREASED MAX_CONTAINS_REMOVED MIN_CONTAINS_DECREASED
    MIN_CONTAINS_REMOVED
    """.split()  # noqa: SIM905 (a list of names reads better as words)
)

COMBINERS = ("allOf", "anyOf", "oneOf")
# (keyword, difference stem): e.g. MAX_LENGTH_INCREASED / _DECREASED / _ADDED / _REMOVED
STRING_LIMITS = (("maxLength", "MAX_LENGTH"), ("minLength", "MIN_LENGTH"))
NUMBER_LIMITS = (("maximum", "MAXIMUM"), ("minimum", "MINIMUM"),
                 ("exclusiveMaximum", "EXCLUSIVE_MAXIMUM"),
                 ("exclusiveMinimum", "EXCLUSIVE_MINIMUM"))  # fmt: skip
OBJECT_LIMITS = (("maxProperties", "MAX_PROPERTIES"),
                 ("minProperties", "MIN_PROPERTIES"))  # fmt: skip
ARRAY_LIMITS = (("maxItems", "MAX_ITEMS"), ("minItems", "MIN_ITEMS"),
                ("maxContains", "MAX_CONTAINS"), ("minContains", "MIN_CONTAINS"))  # fmt: skip
# the keywords a node's groups take (`_groups`); the rest stay with its type's group
ANNOTATIONS = ("$id", "title", "description", "default")
CONDITIONAL = ("if", "then", "else")


class Parsed:
    """A JSON Schema (its JSON) and the resolver its `$ref`s are looked up with."""

    def __init__(self, schema: Any, registry: Registry[Any]) -> None:
        self.schema, self.registry = schema, registry


def parse(text: str, references: Sequence[tuple[str, str]] = ()) -> Parsed:
    """Parse a JSON Schema, with its references as (name, text); ValueError for one that is
    not JSON or not a valid JSON Schema (jsonschema's reason)."""
    try:
        schema = json.loads(text)
        docs = [(name, json.loads(ref)) for name, ref in references]
    except ValueError as exc:
        raise ValueError(f"Invalid JSON Schema: not JSON: {exc}") from None
    if not isinstance(schema, dict | bool):
        raise ValueError("Invalid JSON Schema: a schema is a JSON object or a boolean")
    try:
        jsonschema.validators.validator_for(schema, default=jsonschema.Draft7Validator
                                            ).check_schema(schema)  # fmt: skip
    except jsonschema.SchemaError as exc:
        raise ValueError(f"Invalid JSON Schema: {exc.message}") from None
    resources = [(name, _resource(doc)) for name, doc in docs]
    registry: Registry[Any] = Registry().with_resources([*resources, ("", _resource(schema))])
    registry = registry.crawl()
    resolver = registry.resolver()
    for ref in _refs(schema):  # each resolves now, as Confluent's loader does, or 42201
        try:
            resolver.lookup(ref)
        except Unresolvable as exc:
            raise ValueError(f"Invalid JSON Schema: unresolvable $ref: {exc}") from None
    return Parsed(schema, registry)


def _refs(node: Any, root: bool = True) -> Iterator[str]:
    """The `$ref`s of a schema, outside subschemas with an `$id` of their own (whose refs
    are relative to it and resolved when the walk reaches them)."""
    if isinstance(node, dict):
        if not root and "$id" in node:
            return
        if isinstance(node.get("$ref"), str):
            yield node["$ref"]
        for key, value in node.items():
            if key not in ("enum", "const", "default", "examples"):
                yield from _refs(value, False)
    elif isinstance(node, list):
        for item in node:
            yield from _refs(item, False)


def _resource(doc: Any) -> Resource[Any]:
    return Resource.from_contents(doc, default_specification=DRAFT7)


def canonical(text: str) -> str:
    return json.dumps(json.loads(text), separators=(",", ":"), sort_keys=True)


def incompatibilities(reader: Parsed, writer: Parsed) -> list[str]:
    """Why data valid under `writer` may not be valid under `reader` (empty: compatible)."""
    diff = _Diff(writer.registry, reader.registry)
    diff.compare(writer.schema, reader.schema)
    return [_msg(kind, path) for path, kind in diff.found if kind not in COMPATIBLE]


def _msg(kind: str, path: str) -> str:
    return f"{{errorType:'{kind}', description:'{kind.lower().replace('_', ' ')}', " \
           f"location:'{path}'}}"  # fmt: skip


def _groups(schema: dict[str, Any]) -> list[dict[str, Any]]:
    """A node's parts as everit loads them: `enum`, `const`, each combiner, `not`, `if`
    (with `then` / `else`) and the type's keywords each make a schema of its own; a node
    with more than one is their (synthetic) allOf, so a keyword beside `enum` or a combiner
    is compared too, and `if` beside a type is a change of type."""
    keys = {k: v for k, v in schema.items() if k not in ANNOTATIONS}
    parts = [{k: keys.pop(k)} for k in ("enum", "const", *COMBINERS, "not") if k in keys]
    conditional = {k: keys.pop(k) for k in CONDITIONAL if k in keys}
    if "if" in conditional:
        parts.append(conditional)
    if keys and _kind(keys) != "EMPTY":
        parts.append(keys)
    return parts


def _kind(schema: Any) -> str:
    """What a node is, as Confluent's schema library classes tell them apart."""
    if schema is True or schema == {} or schema is None:
        return "EMPTY"
    if schema is False:
        return "FALSE"
    if not isinstance(schema, dict):
        return "EMPTY"
    if "if" in schema and not any(k in schema for k in ("enum", "const", *COMBINERS, "not")):
        return "conditional"  # its branches are not compared (Confluent has no diff for them)
    if "enum" in schema or "const" in schema:
        return "enum"
    if any(k in schema for k in COMBINERS):
        return "combined"
    if "not" in schema:
        return "not"
    t = schema.get("type")
    if isinstance(t, list):
        return "combined" if len(t) != 1 else _kind({**schema, "type": t[0]})
    if t in ("integer", "number"):
        return "number"
    if t is not None:
        return str(t)
    if any(k in schema for k in ("properties", "additionalProperties", "required",
                                 "patternProperties")):  # fmt: skip
        return "object"
    if "items" in schema:
        return "array"
    return "EMPTY"


def _subschemas(schema: dict[str, Any]) -> tuple[str, list[Any]]:
    """A combined node's criterion and parts (a `type` list is an anyOf of its types)."""
    for key in COMBINERS:
        if key in schema:
            return key, list(schema[key])
    rest = {k: v for k, v in schema.items() if k != "type"}
    return "anyOf", [{**rest, "type": t} for t in schema["type"]]


class _Diff:
    """One comparison: the differences found, as (JSON pointer, type)."""

    def __init__(self, original: Registry[Any], update: Registry[Any]) -> None:
        self.resolvers = (original.resolver(), update.resolver())
        self.found: list[tuple[str, str]] = []
        self.path: list[str] = ["#"]
        self.seen: set[tuple[int, int]] = set()
        self.splits: dict[int, tuple[Any, Any]] = {}  # id -> (the node, kept alive; its split)

    @contextmanager
    def at(self, *parts: str) -> Iterator[None]:
        self.path.extend(parts)
        try:
            yield
        finally:
            del self.path[-len(parts) :]

    def add(self, kind: str, *parts: str) -> None:
        self.found.append(("/".join([*self.path, *parts]), kind))

    def compatible(self, original: Any, update: Any) -> tuple[bool, list[tuple[str, str]]]:
        """Compare in a sub-context: (compatible?, its differences), nothing recorded here."""
        saved, self.found = self.found, []
        try:
            self.compare(original, update)
            return all(k in COMPATIBLE for _, k in self.found), self.found
        finally:
            self.found = saved

    def compare(self, original: Any, update: Any) -> None:
        if original is None or update is None:
            if original is not None:
                self.add("SCHEMA_REMOVED")
            elif update is not None:
                self.add("SCHEMA_ADDED")
            return
        original, update = (
            self._split(self._deref(original, 0)),
            self._split(self._deref(update, 1)),
        )
        o_kind, u_kind = _kind(original), _kind(update)
        if o_kind != "combined" and u_kind == "combined" and self._into_union(original, update):
            return
        if o_kind == "combined" and u_kind != "combined":
            _, parts = _subschemas(original)
            if len(parts) == 1 and self._merge_if_compatible(parts[0], update):
                return
        if o_kind != u_kind:
            if o_kind != "FALSE" and u_kind != "EMPTY":
                self.add("TYPE_CHANGED")
            return
        key = (id(original), id(update))
        if key in self.seen:  # a recursive schema met again: already being compared
            return
        self.seen.add(key)
        try:
            self._same_kind(o_kind, original, update)
        finally:
            self.seen.discard(key)

    def _deref(self, schema: Any, side: int) -> Any:
        while isinstance(schema, dict) and "$ref" in schema:
            try:
                resolved = self.resolvers[side].lookup(schema["$ref"])
            except Unresolvable as exc:
                raise ValueError(f"Invalid JSON Schema: unresolvable $ref: {exc}") from None
            schema = resolved.contents
        return schema

    def _split(self, schema: Any) -> Any:
        """The node, or the synthetic allOf of its groups (`_groups`), made once per node so
        a recursive schema meets the same object again."""
        if not isinstance(schema, dict):
            return schema
        found = self.splits.get(id(schema))
        if found is None:
            parts = _groups(schema)
            combined = schema if len(parts) < 2 else {
                **{k: schema[k] for k in ANNOTATIONS if k in schema}, "allOf": parts}  # fmt: skip
            found = self.splits[id(schema)] = (schema, combined)
        return found[1]

    def _into_union(self, original: Any, update: dict[str, Any]) -> bool:
        criterion, parts = _subschemas(update)
        if len(parts) == 1:
            return self._merge_if_compatible(original, parts[0])
        if criterion in ("anyOf", "oneOf"):
            for part in parts:
                ok, diffs = self.compatible(original, part)
                if ok:
                    self.found += diffs
                    self.add("SUM_TYPE_EXTENDED")
                    return True
        return False

    def _merge_if_compatible(self, original: Any, update: Any) -> bool:
        ok, diffs = self.compatible(original, update)
        if ok:
            self.found += diffs
        return ok

    def _same_kind(self, kind: str, original: Any, update: Any) -> None:
        if not isinstance(original, dict) or not isinstance(update, dict):
            return  # EMPTY / FALSE: nothing more to compare
        for key, diff in (("$id", "ID_CHANGED"), ("title", "TITLE_CHANGED"),
                          ("description", "DESCRIPTION_CHANGED"),
                          ("default", "DEFAULT_CHANGED")):  # fmt: skip
            if original.get(key) != update.get(key):
                self.add(diff)
        compare = _BY_KIND.get(kind)
        if compare is not None:
            compare(self, original, update)

    # ----- per kind -------------------------------------------------------------------

    def limits(self, table: Sequence[tuple[str, str]], o: Mapping[str, Any],
               u: Mapping[str, Any]) -> None:  # fmt: skip
        for key, stem in table:
            a, b = o.get(key), u.get(key)
            if a == b or isinstance(a, bool) or isinstance(b, bool):
                continue
            if a is None:
                self.add(f"{stem}_ADDED", key)
            elif b is None:
                self.add(f"{stem}_REMOVED", key)
            else:
                up = b > a
                self.add(f"{stem}_{'INCREASED' if up else 'DECREASED'}", key)

    def string(self, o: dict[str, Any], u: dict[str, Any]) -> None:
        self.limits(STRING_LIMITS, o, u)
        if o.get("pattern") != u.get("pattern"):
            kind = ("PATTERN_ADDED" if "pattern" not in o else
                    "PATTERN_REMOVED" if "pattern" not in u else "PATTERN_CHANGED")  # fmt: skip
            self.add(kind, "pattern")

    def number(self, o: dict[str, Any], u: dict[str, Any]) -> None:
        self.limits(NUMBER_LIMITS, o, u)
        a, b = o.get("multipleOf"), u.get("multipleOf")
        if a != b:
            if a is None:
                self.add("MULTIPLE_OF_ADDED", "multipleOf")
            elif b is None:
                self.add("MULTIPLE_OF_REMOVED", "multipleOf")
            elif b % a == 0:
                self.add("MULTIPLE_OF_EXPANDED", "multipleOf")
            elif a % b == 0:
                self.add("MULTIPLE_OF_REDUCED", "multipleOf")
            else:
                self.add("MULTIPLE_OF_CHANGED", "multipleOf")
        o_int, u_int = o.get("type") == "integer", u.get("type") == "integer"
        if o_int != u_int:
            self.add("TYPE_EXTENDED" if o_int else "TYPE_NARROWED")

    def enum(self, o: dict[str, Any], u: dict[str, Any]) -> None:
        a = [json.dumps(v, sort_keys=True) for v in o.get("enum", [o.get("const")])]
        b = [json.dumps(v, sort_keys=True) for v in u.get("enum", [u.get("const")])]
        if set(a) != set(b):
            kind = (
                "ENUM_ARRAY_EXTENDED"
                if set(a) <= set(b)
                else "ENUM_ARRAY_NARROWED"
                if set(b) <= set(a)
                else "ENUM_ARRAY_CHANGED"
            )
            self.add(kind, "enum")  # fmt: skip

    def not_(self, o: dict[str, Any], u: dict[str, Any]) -> None:
        with self.at("not"):
            ok, _ = self.compatible(u["not"], o["not"])  # what is refused may only grow
            if not ok:
                self.add("NOT_TYPE_EXTENDED")
            elif _kind(u["not"]) != _kind(o["not"]) or o["not"] != u["not"]:
                self.add("NOT_TYPE_NARROWED")

    def combined(self, o: dict[str, Any], u: dict[str, Any]) -> None:
        (oc, o_parts), (uc, u_parts) = _subschemas(o), _subschemas(u)
        if oc != uc:
            if (
                uc == "anyOf"
                or (uc == "oneOf" and len(o_parts) == 1)
                or (uc == "allOf" and len(o_parts) == 1 and len(u_parts) == 1)
            ):
                self.add("COMBINED_TYPE_EXTENDED")
            else:
                self.add("COMBINED_TYPE_CHANGED")
                return
        if len(o_parts) != len(u_parts):
            product, grew = uc == "allOf", len(o_parts) < len(u_parts)
            self.add(f"{'PRODUCT' if product else 'SUM'}_TYPE_{'EXTENDED' if grew else 'NARROWED'}")
        edges: dict[int, dict[int, list[tuple[str, str]]]] = {}
        for i, part in enumerate(o_parts):
            with self.at(oc, str(i)):
                for j, other in enumerate(u_parts):
                    ok, diffs = self.compatible(part, other)
                    if ok:
                        edges.setdefault(i, {})[j] = diffs
        matching = _max_matching(edges)
        for i, j in matching.items():
            self.found += edges[i][j]
        if len(matching) < min(len(o_parts), len(u_parts)):
            self.add("COMBINED_TYPE_SUBSCHEMAS_CHANGED")

    def array(self, o: dict[str, Any], u: dict[str, Any]) -> None:
        self.limits(ARRAY_LIMITS, o, u)
        a, b = bool(o.get("uniqueItems")), bool(u.get("uniqueItems"))
        if a != b:
            self.add("UNIQUE_ITEMS_ADDED" if b else "UNIQUE_ITEMS_REMOVED", "uniqueItems")
        o_items, u_items = o.get("items"), u.get("items")
        if isinstance(o_items, list) or isinstance(u_items, list):
            self._tuple_items(o, u)
            return
        with self.at("items"):
            self.compare(o_items, u_items)

    def _tuple_items(self, o: dict[str, Any], u: dict[str, Any]) -> None:
        o_items: list[Any] = o["items"] if isinstance(o.get("items"), list) else []
        u_items: list[Any] = u["items"] if isinstance(u.get("items"), list) else []
        o_open, u_open = o.get("additionalItems", True) is not False, \
            u.get("additionalItems", True) is not False  # fmt: skip
        for i in range(max(len(o_items), len(u_items))):
            with self.at("items", str(i)):
                if i >= len(u_items):
                    self.add("ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL" if u_open else
                             "ITEM_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL"
                             if o_items[i] is False else
                             "ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL")  # fmt: skip
                elif i >= len(o_items):
                    self.add("ITEM_ADDED_TO_CLOSED_CONTENT_MODEL" if not o_open else
                             "ITEM_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL"
                             if _kind(u_items[i]) == "EMPTY" else
                             "ITEM_ADDED_TO_OPEN_CONTENT_MODEL")  # fmt: skip
                else:
                    self.compare(o_items[i], u_items[i])
        if o_open != u_open:
            self.add("ADDITIONAL_ITEMS_ADDED" if u_open else "ADDITIONAL_ITEMS_REMOVED",
                     "additionalItems")  # fmt: skip

    def object(self, o: dict[str, Any], u: dict[str, Any]) -> None:
        o_props, u_props = o.get("properties", {}), u.get("properties", {})
        o_req, u_req = set(o.get("required", ())), set(u.get("required", ()))
        for name in o_props:
            if name in u_props and (name in o_req) != (name in u_req):
                kind = ("REQUIRED_ATTRIBUTE_REMOVED" if name in o_req else
                        "REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED" if _has_default(u_props[name])
                        else "REQUIRED_ATTRIBUTE_ADDED")  # fmt: skip
                self.add(kind, "required", name)
        with self.at("properties"):
            for name in sorted(set(o_props) | set(u_props)):
                with self.at(name):
                    self._property(name, o, u, o_props.get(name), u_props.get(name))
        self._dependencies(o, u)
        self._additional_properties(o, u)
        self.limits(OBJECT_LIMITS, o, u)

    def _property(self, name: str, o: dict[str, Any], u: dict[str, Any], o_prop: Any,
                  u_prop: Any) -> None:  # fmt: skip
        if u_prop is None:  # removed: only the reader's content model matters
            if _is_open(u):
                self.add("PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL")
            elif (covering := _partially_open(u, name)) is not None:
                ok, diffs = self.compatible(o_prop, covering)
                self.found += diffs
                self.add(
                    "PROPERTY_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"
                    if ok
                    else "PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"
                )
            else:  # fmt: skip
                self.add(
                    "PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL"
                    if o_prop is False
                    else "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL"
                )
        elif o_prop is None:  # added: only the writer's content model matters
            if _is_open(o):
                self.add(
                    "PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL"
                    if _kind(u_prop) == "EMPTY"
                    else "PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL"
                )
                return  # fmt: skip
            if (covering := _partially_open(o, name)) is not None:
                ok, diffs = self.compatible(covering, u_prop)
                self.found += diffs
                self.add(
                    "PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"
                    if ok
                    else "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"
                )
            if name in u.get("required", ()):  # fmt: skip
                self.add("REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL"
                         if _has_default(u_prop) else
                         "REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL")  # fmt: skip
            else:
                self.add("OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL")
        else:
            self.compare(o_prop, u_prop)

    def _dependencies(self, o: dict[str, Any], u: dict[str, Any]) -> None:
        o_deps, u_deps = o.get("dependencies", {}), u.get("dependencies", {})
        for name in sorted(set(o_deps) | set(u_deps)):
            a, b = o_deps.get(name), u_deps.get(name)
            arrays = isinstance(a, list) or isinstance(b, list)
            stem = "DEPENDENCY_ARRAY" if arrays else "DEPENDENCY_SCHEMA"
            with self.at("dependencies", name):
                if b is None:
                    self.add(f"{stem}_REMOVED")
                elif a is None:
                    self.add(f"{stem}_ADDED")
                elif not arrays:
                    self.compare(a, b)
                elif set(a) != set(b):
                    self.add("DEPENDENCY_ARRAY_EXTENDED" if set(a) <= set(b) else
                             "DEPENDENCY_ARRAY_NARROWED" if set(b) <= set(a) else
                             "DEPENDENCY_ARRAY_CHANGED")  # fmt: skip

    def _additional_properties(self, o: dict[str, Any], u: dict[str, Any]) -> None:
        a, b = o.get("additionalProperties", True), u.get("additionalProperties", True)
        with self.at("additionalProperties"):
            if (a is not False) != (b is not False):
                self.add("ADDITIONAL_PROPERTIES_ADDED" if b is not False
                         else "ADDITIONAL_PROPERTIES_REMOVED")  # fmt: skip
            elif isinstance(a, bool) and isinstance(b, dict):
                self.add("ADDITIONAL_PROPERTIES_NARROWED")
            elif isinstance(a, dict) and isinstance(b, bool):
                self.add("ADDITIONAL_PROPERTIES_EXTENDED")
            elif isinstance(a, dict) and isinstance(b, dict):
                self.compare(a, b)


def _has_default(schema: Any) -> bool:
    return isinstance(schema, dict) and "default" in schema


def _is_open(schema: dict[str, Any]) -> bool:
    """Open: any property not named may hold anything."""
    return not schema.get("patternProperties") and schema.get("additionalProperties",
                                                               True) is True  # fmt: skip


def _partially_open(schema: dict[str, Any], name: str) -> Any:
    """The schema a property not named falls under (a pattern's, or additionalProperties'),
    or None (closed)."""
    for pattern, sub in schema.get("patternProperties", {}).items():
        try:
            if re2.search(pattern, name):  # RE2: linear time, on the broker's event loop
                return sub
        except re2.error:
            continue
    extra = schema.get("additionalProperties", True)
    return extra if isinstance(extra, dict) else None


def _max_matching(edges: Mapping[int, Mapping[int, object]]) -> dict[int, int]:
    """A maximum bipartite matching (left -> right) by augmenting paths."""
    right_of: dict[int, int] = {}

    def augment(left: int, seen: set[int]) -> bool:
        for right in edges.get(left, {}):
            if right in seen:
                continue
            seen.add(right)
            if right not in right_of or augment(right_of[right], seen):
                right_of[right] = left
                return True
        return False

    for left in edges:
        augment(left, set())
    return {left: right for right, left in right_of.items()}


_BY_KIND: dict[str, Callable[[_Diff, Any, Any], None]] = {
    "string": _Diff.string, "number": _Diff.number, "enum": _Diff.enum, "not": _Diff.not_,
    "combined": _Diff.combined, "array": _Diff.array, "object": _Diff.object,
}  # fmt: skip
