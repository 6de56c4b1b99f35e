"""Avro schemas as Spark types, the way Spark's Avro support maps them; pure, no I/O.

`spark_type(schema)` follows Spark's `SchemaConverters.toSqlType` (spark-avro, the mapping
`from_avro` and Databricks' `from_avro(..., schemaRegistryAddress)` use):

    null -> void; boolean; int -> int, with logicalType date -> date; long -> bigint, with
    timestamp-millis/-micros -> timestamp, local-timestamp-millis/-micros -> timestamp_ntz;
    float; double; bytes, fixed -> binary, with logicalType decimal -> decimal(p, s);
    string, enum -> string; record -> struct; array -> array; map -> map<string, v>;
    a union with null -> the other branches' type, nullable; [int, long] -> bigint,
    [float, double] -> double, a single branch -> that branch.

A field is nullable only when its Avro type is a union with null (Spark's rule). Two places
where this connector refuses what Spark would map, with one line naming the field:
- a union of several non-null types other than [int, long] or [float, double] (Spark makes it
  a struct of `member0`, `member1`, ...; fastavro hands back the value without saying which
  branch it came from, and per-field work in Python to find out is what this design avoids);
- a recursive type (Spark refuses it too unless told how deep to go).
Logical types Spark does not map (uuid, time-millis, time-micros, duration) are read as their
underlying type: `decoder_schema` removes them from a writer schema so that fastavro hands
back what Arrow takes for that type (a str, an int, bytes), not a UUID or a time.

Schemas are handled after `fastavro.parse_schema`: named types are full names, a type used a
second time is its name (a string), and `named` maps each name to its definition.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    NullType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from protocol.errors import UsageError

DECIMAL_PRECISION_MAX = 38  # Spark's DecimalType.MAX_PRECISION
DEPTH_MAX = 64  # nesting deeper than this is refused (a bound on the walk, not a Spark rule)
# logical types fastavro turns into Python objects that Arrow cannot take for Spark's type
UNMAPPED_LOGICAL = frozenset({"uuid", "time-millis", "time-micros", "duration"})
_PRIMITIVE: dict[str, DataType] = {
    "null": NullType(), "boolean": BooleanType(), "int": IntegerType(), "long": LongType(),
    "float": FloatType(), "double": DoubleType(), "bytes": BinaryType(), "string": StringType(),
}  # fmt: skip
_LOGICAL: dict[tuple[str, str], DataType] = {
    ("int", "date"): DateType(),
    ("long", "timestamp-millis"): TimestampType(),
    ("long", "timestamp-micros"): TimestampType(),
    ("long", "local-timestamp-millis"): TimestampNTZType(),
    ("long", "local-timestamp-micros"): TimestampNTZType(),
}


def spark_type(schema: Any, named: Mapping[str, Any] | None = None) -> DataType:
    """Spark's type for a parsed Avro schema (see the module's docstring)."""
    data_type, _ = _convert(schema, dict(named or {}), (), "the schema")
    return data_type


def _convert(
    schema: Any, named: dict[str, Any], in_progress: tuple[str, ...], where: str
) -> tuple[DataType, bool]:
    """(Spark type, nullable) of `schema`, found at `where` (for messages)."""
    if len(in_progress) > DEPTH_MAX:
        raise UsageError(f"Avro schema nested more than {DEPTH_MAX} levels deep at {where}")
    if isinstance(schema, list):
        return _union(schema, named, in_progress, where)
    if isinstance(schema, str):
        if schema in _PRIMITIVE:
            return _PRIMITIVE[schema], False
        if schema in in_progress:
            raise UsageError(f"Avro schema has a recursive type, {schema}, at {where}: Spark "
                             "cannot hold a recursive type in a column")  # fmt: skip
        if schema not in named:
            raise UsageError(f"Avro schema names an unknown type {schema!r} at {where}")
        return _convert(named[schema], named, in_progress, where)
    if not isinstance(schema, dict):
        raise UsageError(f"Avro schema is not a type at {where}: {schema!r}")
    kind = schema.get("type")
    if kind in ("record", "error", "enum", "fixed") and "name" in schema:
        named.setdefault(schema["name"], schema)  # later uses are by name
    if kind in ("record", "error"):
        return _record(schema, named, in_progress, where), False
    if kind == "enum":
        return StringType(), False
    if kind == "array":
        item, item_null = _convert(schema["items"], named, in_progress, f"{where}[]")
        return ArrayType(item, item_null), False
    if kind == "map":
        value, value_null = _convert(schema["values"], named, in_progress, f"{where}{{}}")
        return MapType(StringType(), value, value_null), False
    logical = schema.get("logicalType")
    if logical == "decimal" and kind in ("bytes", "fixed"):
        return _decimal(schema, where), False
    if kind == "fixed":
        return BinaryType(), False
    mapped = _LOGICAL.get((str(kind), str(logical)))
    if mapped is not None:
        return mapped, False
    return _convert(kind, named, in_progress, where)


def _record(
    schema: dict[str, Any], named: dict[str, Any], in_progress: tuple[str, ...], where: str
) -> StructType:
    inner = (*in_progress, schema.get("name", ""))
    fields = []
    for f in schema["fields"]:
        data_type, nullable = _convert(f["type"], named, inner, f"{where}.{f['name']}")
        fields.append(StructField(f["name"], data_type, nullable))
    return StructType(fields)


def _union(
    branches: list[Any], named: dict[str, Any], in_progress: tuple[str, ...], where: str
) -> tuple[DataType, bool]:
    others = [b for b in branches if b != "null"]
    nullable = len(others) < len(branches)
    if not others:
        return NullType(), True
    if len(others) == 1:
        return _convert(others[0], named, in_progress, where)[0], nullable
    if sorted(map(str, others)) == ["int", "long"]:
        return LongType(), nullable
    if sorted(map(str, others)) == ["double", "float"]:
        return DoubleType(), nullable
    shown = ", ".join(b if isinstance(b, str) else str(b.get("name", b["type"])) for b in others)
    raise UsageError(
        f"Avro union [{shown}] at {where} is not supported: only a union of one type with null, "
        "[int, long] or [float, double] maps to a Spark column here (Spark's member0, member1, "
        "... struct is not made)"
    )


def _decimal(schema: dict[str, Any], where: str) -> DecimalType:
    precision, scale = int(schema.get("precision", 0)), int(schema.get("scale", 0))
    if not 0 < precision <= DECIMAL_PRECISION_MAX or not 0 <= scale <= precision:
        raise UsageError(
            f"Avro decimal({precision}, {scale}) at {where} does not fit Spark's decimal "
            f"(precision 1..{DECIMAL_PRECISION_MAX}, scale 0..precision)"
        )
    return DecimalType(precision, scale)


def decoder_schema(schema: Any) -> Any:
    """A copy of a raw (unparsed) Avro schema without the logical types Spark does not map
    (UNMAPPED_LOGICAL), so that fastavro reads those as their underlying type."""
    if not _has_unmapped(schema):
        return schema
    return _strip(copy.deepcopy(schema))


def _has_unmapped(schema: Any) -> bool:
    if isinstance(schema, list):
        return any(_has_unmapped(b) for b in schema)
    if isinstance(schema, dict):
        return schema.get("logicalType") in UNMAPPED_LOGICAL or any(
            _has_unmapped(v) for v in schema.values() if isinstance(v, dict | list)
        )
    return False


def _strip(schema: Any) -> Any:
    if isinstance(schema, list):
        return [_strip(b) for b in schema]
    if isinstance(schema, dict):
        if schema.get("logicalType") in UNMAPPED_LOGICAL:
            del schema["logicalType"]
        for key, value in schema.items():
            if isinstance(value, dict | list):
                schema[key] = _strip(value)
    return schema
