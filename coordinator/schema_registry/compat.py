"""Compatibility levels: which earlier versions a new schema is checked against, and how.

    BACKWARD            the new schema reads data written with the latest version
    FORWARD             the latest version reads data written with the new schema
    FULL                both
    *_TRANSITIVE        the same against every earlier (not deleted) version, not only the latest
    NONE                nothing is checked

The checks are per format: Avro's are avro_compat.py's. JSON Schema and Protobuf schemas are
not accepted yet (`parse` refuses them with a line that says so), so no check of theirs is
ever skipped silently.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from coordinator.schema_registry import avro_compat
from coordinator.schema_registry.errors import RegistryError
from coordinator.schema_registry.records import AVRO, JSON, PROTOBUF

LEVELS = (
    "BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE",
    "FULL", "FULL_TRANSITIVE", "NONE",
)  # fmt: skip
DEFAULT_LEVEL = "BACKWARD"  # Confluent's default
TYPES = (AVRO, JSON, PROTOBUF)


@dataclass(frozen=True, slots=True)
class Schema:
    """A schema's type and text, with the texts of what it references (resolved)."""

    schema_type: str
    text: str
    references: tuple[str, ...] = ()


def parse(schema: Schema) -> avro_compat.Parsed:
    """The parsed schema; RegistryError 42201 for one that does not parse, or of a type whose
    checks are not written yet."""
    if schema.schema_type != AVRO:
        raise RegistryError.invalid_schema(
            f"schemaType {schema.schema_type} is not supported yet by odradek's registry: "
            "its compatibility is not checked, so it is not registered (only AVRO is)"
        )
    try:
        return avro_compat.parse(schema.text, schema.references)
    except ValueError as exc:
        raise RegistryError.invalid_schema(str(exc)) from None


def canonical(schema: Schema) -> str:
    return avro_compat.canonical(schema.text)


def check(level: str, new: Schema, earlier: Sequence[Schema]) -> list[str]:
    """Why `new` is not compatible under `level` with `earlier` (oldest first, deleted
    versions left out); empty when it is."""
    if level == "NONE" or not earlier:
        return []
    against = earlier if level.endswith("_TRANSITIVE") else earlier[-1:]
    base = level.removesuffix("_TRANSITIVE")
    parsed_new = parse(new)
    out: list[str] = []
    for old in reversed(against):  # newest first, as Confluent reports
        parsed_old = parse(old)
        if base in ("BACKWARD", "FULL"):
            out += avro_compat.incompatibilities(parsed_new, parsed_old)
        if base in ("FORWARD", "FULL"):
            out += avro_compat.incompatibilities(parsed_old, parsed_new)
    return out
