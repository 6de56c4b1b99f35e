"""What `valueFormat=avro` costs a Spark task, in CPU time, beside the binary path.

No cluster and no Spark: the part of a task's read that differs. The binary path is
`records_to_arrow` (fetch.py: the C record walker from the fetched bytes of Kafka record
batches to an Arrow batch); the Avro path is that plus `decode_batches` (avro_values.py), the
values registry-framed. Two schemas: `narrow` (a string, a long, a double) and `wide` (the
tests' Invoice: a timestamp, a date, a decimal, an array, a map, an enum, a nullable
string). Each is decoded with the writer's own id (no resolution) and with an older writer
version (a field added since, resolved writer -> reader). The writer schemas are put in the
decoder's per-process cache first, as a task has them after its first value of each id.
Best of three runs each, `time.process_time()` (one process: the figures are CPU seconds,
not wall clock, so other load on the machine matters less).

    .venv/bin/python bench/bench_spark_avro.py [--records 100000]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import fastavro
import pyarrow as pa

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from protocol.batch import build_batch_from_values
from spark_connector import avro_values
from spark_connector.fetch import records_to_arrow
from spark_connector.registry import AvroValues, Schema

READER_ID, OLD_ID = 2, 1
RECORDS_PER_BATCH = 500


def _schemas(kind: str) -> tuple[list[dict[str, Any]], Callable[[int], dict[str, Any]]]:
    if kind == "narrow":
        fields: list[dict[str, Any]] = [{"name": "user", "type": "string"},
                                        {"name": "n", "type": "long"},
                                        {"name": "score", "type": "double"}]  # fmt: skip
        return fields, lambda i: {"user": f"user-{i % 1000}", "n": i, "score": i / 7}
    fields = [
        {"name": "id", "type": "string"}, {"name": "cents", "type": "long"},
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 9,
                                   "scale": 2}},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "attrs", "type": {"type": "map", "values": "int"}},
        {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["A", "B"]}},
    ]  # fmt: skip
    at = datetime(2026, 1, 2, tzinfo=UTC)
    return fields, lambda i: {"id": f"i-{i}", "cents": i, "at": at, "day": date(2026, 1, 1),
                              "price": Decimal("12.34"), "tags": ["a", "b"],
                              "attrs": {"k": i % 10}, "kind": "AB"[i % 2]}  # fmt: skip


def _text(fields: list[dict[str, Any]]) -> str:
    return json.dumps({"type": "record", "name": "R", "fields": fields})


def _log(writer_text: str, writer_id: int, value: Callable[[int], dict[str, Any]], n: int
         ) -> list[bytes]:  # fmt: skip
    parsed = fastavro.parse_schema(json.loads(writer_text))
    values = []
    for i in range(n):
        out = io.BytesIO()
        out.write(b"\x00" + writer_id.to_bytes(4, "big"))
        fastavro.schemaless_writer(out, parsed, value(i))
        values.append(out.getvalue())
    batches = []
    for start in range(0, n, RECORDS_PER_BATCH):
        batch = bytearray(build_batch_from_values(values[start : start + RECORDS_PER_BATCH], 0))
        batch[0:8] = start.to_bytes(8, "big")  # base offset
        batches.append(bytes(batch))
    return batches


def _arrow(batches: list[bytes], n: int) -> Iterator[pa.RecordBatch]:
    for data in batches:
        arrow, _ = records_to_arrow(data, "t", 0, 0, n, False)
        assert arrow is not None
        yield arrow


def _run(batches: list[bytes], n: int, spec: AvroValues | None) -> float:
    """Best CPU seconds of three reads of `batches`, as one task reads its range."""
    best = float("inf")
    for _ in range(3):
        started = time.process_time()
        arrow = _arrow(batches, n)
        read = arrow if spec is None else avro_values.decode_batches(arrow, spec, "t", 0)
        rows = sum(b.num_rows for b in read)
        assert rows == n
        best = min(best, time.process_time() - started)
    return best


def _with_note(value: Callable[[int], dict[str, Any]]) -> Callable[[int], dict[str, Any]]:
    return lambda i: {**value(i), "note": None}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=100_000)
    n = parser.parse_args().records
    print(f"load average {os.getloadavg()[0]:.1f}; {n} records, batches of {RECORDS_PER_BATCH}")
    for kind in ("narrow", "wide"):
        fields, value = _schemas(kind)
        old_text = _text(fields)
        reader_text = _text([*fields, {"name": "note", "type": ["null", "string"],
                                       "default": None}])  # fmt: skip
        spec = AvroValues(("http://127.0.0.1:1",), (), READER_ID, Schema("AVRO", reader_text))
        avro_values._WRITERS[(spec.urls, OLD_ID)] = fastavro.parse_schema(json.loads(old_text))
        same = _log(reader_text, READER_ID, _with_note(value), n)
        old = _log(old_text, OLD_ID, value, n)
        binary = _run(same, n, None)
        for label, batches in (("reader's id", same), ("older id, resolved", old)):
            avro = _run(batches, n, spec)
            print(
                f"{kind:6} {label:20} binary {n / binary:>12,.0f} rows/s   avro "
                f"{n / avro:>10,.0f} rows/s   ({avro / binary:.0f}x the binary path's CPU)"
            )


if __name__ == "__main__":
    main()
