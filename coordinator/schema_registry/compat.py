"""Compatibility levels: which earlier versions a new schema is checked against, and how.

    BACKWARD            the new schema reads data written with the latest version
    FORWARD             the latest version reads data written with the new schema
    FULL                both
    *_TRANSITIVE        the same against every earlier (not deleted) version, not only the latest
    NONE                nothing is checked

The checks are per format, each its own module with `parse`, `canonical` and
`incompatibilities(reader, writer)`: Avro's avro_compat.py, JSON Schema's json_compat.py,
Protobuf's protobuf_compat.py.
A type without a module is refused by `parse` with a line that says so, so no check of
theirs is ever skipped silently.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Protocol

from coordinator.schema_registry import avro_compat, json_compat, normalize, protobuf_compat
from coordinator.schema_registry.errors import RegistryError
from coordinator.schema_registry.records import AVRO, JSON, PROTOBUF

LEVELS = (
    "BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE",
    "FULL", "FULL_TRANSITIVE", "NONE",
)  # fmt: skip
DEFAULT_LEVEL = "BACKWARD"  # Confluent's default
TOO_DEEP = "Invalid schema: nested too deeply to be checked"
PARSED_CACHE_MAX = 512  # parsed schemas kept: the latest versions of the busiest subjects
TYPES = (AVRO, JSON, PROTOBUF)


@dataclass(frozen=True, slots=True)
class Schema:
    """A schema's type and text, with what it references (resolved, dependencies first) as
    (reference name, text): Avro knows their named types, JSON Schema resolves `$ref`s to
    their names."""

    schema_type: str
    text: str
    references: tuple[tuple[str, str], ...] = ()


class Format(Protocol):
    def parse(self, text: str, references: Sequence[tuple[str, str]]) -> Any: ...
    def canonical(self, text: str) -> str: ...
    def incompatibilities(self, reader: Any, writer: Any) -> list[str]: ...


class _Avro:
    def parse(self, text: str, references: Sequence[tuple[str, str]]) -> Any:
        return avro_compat.parse(text, [ref for _, ref in references])

    canonical = staticmethod(avro_compat.canonical)
    incompatibilities = staticmethod(avro_compat.incompatibilities)


class _Json:
    parse = staticmethod(json_compat.parse)
    canonical = staticmethod(json_compat.canonical)
    incompatibilities = staticmethod(json_compat.incompatibilities)


class _Protobuf:
    parse = staticmethod(protobuf_compat.parse)
    canonical = staticmethod(protobuf_compat.canonical)
    incompatibilities = staticmethod(protobuf_compat.incompatibilities)


FORMATS: dict[str, Format] = {AVRO: _Avro(), JSON: _Json(), PROTOBUF: _Protobuf()}
CHECKED = tuple(FORMATS)  # what /schemas/types lists: the types whose compatibility is checked


def _format(schema_type: str) -> Format:
    found = FORMATS.get(schema_type)
    if found is None:
        raise RegistryError.invalid_schema(
            f"schemaType {schema_type} is not supported yet by odradek's registry: its "
            f"compatibility is not checked, so it is not registered (only {', '.join(CHECKED)})"
        )
    return found


@lru_cache(maxsize=PARSED_CACHE_MAX)
def parse(schema: Schema) -> Any:
    """The parsed schema; RegistryError 42201 for one that does not parse, or of a type whose
    checks are not written yet. Parsed schemas are kept (and never changed by a check): a
    registration compares with every earlier version again, and protoc takes ~10 ms a file."""
    try:
        return _format(schema.schema_type).parse(schema.text, schema.references)
    except ValueError as exc:
        raise RegistryError.invalid_schema(str(exc)) from None
    except RecursionError:
        raise RegistryError.invalid_schema(TOO_DEEP) from None


def serialized(schema: Schema) -> str:
    """A Protobuf schema as a base64 FileDescriptorProto (`?format=serialized`, what
    confluent-kafka's Python serdes read); other types as they are."""
    if schema.schema_type != PROTOBUF:
        return schema.text
    return protobuf_compat.serialized(parse(schema))


def normalized(schema: Schema) -> str:
    """The schema's text in Confluent's normalized form (normalize.py); RegistryError 42201
    for one that does not parse."""
    parse(schema)  # 42201 first, with the format's own reason
    refs = [text for _, text in schema.references]
    try:
        if schema.schema_type == AVRO:
            return normalize.avro(schema.text, refs)
        if schema.schema_type == JSON:
            return normalize.json_schema(schema.text)
        return protobuf_compat.normalized(schema.text, schema.references)
    except (ValueError, TypeError, AttributeError) as exc:
        raise RegistryError.invalid_schema(str(exc)) from None
    except RecursionError:
        raise RegistryError.invalid_schema(TOO_DEEP) from None


def canonical(schema: Schema) -> str:
    """The text the same schema registered twice is told by (ValueError: it does not parse)."""
    try:
        return _format(schema.schema_type).canonical(schema.text)
    except RecursionError:
        raise ValueError(TOO_DEEP) from None


def check(level: str, new: Schema, earlier: Sequence[Schema]) -> list[str]:
    """Why `new` is not compatible under `level` with `earlier` (oldest first, deleted
    versions left out); empty when it is."""
    if level == "NONE" or not earlier:
        return []
    against = earlier if level.endswith("_TRANSITIVE") else earlier[-1:]
    base = level.removesuffix("_TRANSITIVE")
    fmt, parsed_new = _format(new.schema_type), parse(new)
    out: list[str] = []
    for old in reversed(against):  # newest first, as Confluent reports
        parsed_old = parse(old)
        try:
            if base in ("BACKWARD", "FULL"):
                out += fmt.incompatibilities(parsed_new, parsed_old)
            if base in ("FORWARD", "FULL"):
                out += fmt.incompatibilities(parsed_old, parsed_new)
        except ValueError as exc:  # a JSON Schema `$ref` that does not resolve
            raise RegistryError.invalid_schema(str(exc)) from None
        except RecursionError:
            raise RegistryError.invalid_schema(TOO_DEEP) from None
    return out
