"""`valueFormat=avro`: values written by confluent-kafka's AvroSerializer through the brokers'
schema registry, read by the Spark source into typed columns (spark_connector/avro_values.py).

First the pure parts (the Avro -> Spark type mapping, the option checks; milliseconds), then
batch and streaming reads on the shared three-broker cluster and the run's one SparkSession.
"""

from __future__ import annotations

import json
import re
import uuid
import warnings
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.serialization import MessageField, SerializationContext

from deploy.cluster import LocalCluster
from protocol.errors import UsageError
from spark_connector.avro_types import decoder_schema, spark_type
from spark_connector.options import parse_read_options
from tests.spark.conftest import create_topic, reader, wait_for

with warnings.catch_warnings():  # authlib warns at import (see test_schema_registry.py)
    import authlib.deprecate  # noqa: F401

    warnings.simplefilter("ignore")
    from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroSerializer

pytestmark = [pytest.mark.spark, pytest.mark.integration]

QUERY_TIMEOUT_S = 120
V1_FIELDS: list[dict[str, Any]] = [
    {"name": "id", "type": "string"},
    {"name": "cents", "type": "long"},
    {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "day", "type": {"type": "int", "logicalType": "date"}},
    {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 9,
                               "scale": 2}},
    {"name": "tags", "type": {"type": "array", "items": "string"}},
    {"name": "attrs", "type": {"type": "map", "values": "int"}},
    {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["A", "B"]}},
]  # fmt: skip
NOTE = {"name": "note", "type": ["null", "string"], "default": None}  # v2: added, with a default
VALUE_TYPE = (
    "struct<id:string,cents:bigint,at:timestamp,day:date,price:decimal(9,2),"
    "tags:array<string>,attrs:map<string,int>,kind:string,note:string>"
)


def _record(fields: list[dict[str, Any]]) -> str:
    return json.dumps({"type": "record", "name": "Invoice", "namespace": "sparkavro",
                       "fields": fields})  # fmt: skip


# ----- pure: the type mapping and the options ----------------------------------------------


def test_avro_types_map_as_sparks_avro_source_maps_them() -> None:
    import fastavro

    parsed = fastavro.parse_schema(json.loads(_record([*V1_FIELDS, NOTE])))
    assert spark_type(parsed).simpleString() == VALUE_TYPE
    nested = {"type": "record", "name": "R", "fields": [
        {"name": "both", "type": ["int", "long"]},
        {"name": "real", "type": ["null", "float", "double"]},
        {"name": "fx", "type": {"type": "fixed", "name": "F", "size": 2}},
        {"name": "again", "type": "F"},
        {"name": "local", "type": {"type": "long", "logicalType": "local-timestamp-micros"}},
        {"name": "inner", "type": {"type": "array", "items": ["null", {
            "type": "record", "name": "In", "fields": [{"name": "b", "type": "boolean"}]}]}},
    ]}  # fmt: skip
    got = spark_type(fastavro.parse_schema(nested))
    assert got.simpleString() == (
        "struct<both:bigint,real:double,fx:binary,again:binary,local:timestamp_ntz,"
        "inner:array<struct<b:boolean>>>"
    )
    assert [f.nullable for f in got.fields] == [False, True, False, False, False, False]
    assert got["inner"].dataType.containsNull  # type: ignore[attr-defined]
    assert spark_type("string").simpleString() == "string"


@pytest.mark.parametrize(
    "schema, message",
    [
        ({"type": "record", "name": "N", "fields": [{"name": "next", "type": ["null", "N"]}]},
         "recursive type, N, at the schema.next"),
        ({"type": "record", "name": "U", "fields": [{"name": "u", "type": ["int", "string"]}]},
         "union [int, string] at the schema.u is not supported"),
        ({"type": "bytes", "logicalType": "decimal", "precision": 40, "scale": 2},
         "decimal(40, 2) at the schema does not fit"),
    ],
)  # fmt: skip
def test_types_spark_cannot_hold_are_refused_in_one_line(schema: Any, message: str) -> None:
    import fastavro

    with pytest.raises(UsageError, match=re.escape(message)):
        spark_type(fastavro.parse_schema(schema))


def test_unmapped_logical_types_are_read_as_their_type() -> None:
    raw = {"type": "record", "name": "R", "fields": [
        {"name": "u", "type": {"type": "string", "logicalType": "uuid"}},
        {"name": "t", "type": ["null", {"type": "int", "logicalType": "time-millis"}]},
    ]}  # fmt: skip
    stripped = decoder_schema(raw)
    assert stripped["fields"][0]["type"] == {"type": "string"}
    assert stripped["fields"][1]["type"] == ["null", {"type": "int"}]
    assert raw["fields"][0]["type"]["logicalType"] == "uuid"  # a copy: the input is kept


@pytest.mark.parametrize(
    "options, message",
    [
        ({"valueFormat": "json"}, "valueFormat=json is not supported"),
        ({"valueFormat": "xml"}, "must be binary or avro"),
        ({"subject": "s"}, "option 'subject' needs valueFormat=avro"),
        ({"valueFormat": "avro", "mode": "drop"}, "must be FAILFAST or PERMISSIVE"),
        ({"valueFormat": "avro", "schemaVersion": "0"}, "latest or a version number"),
        ({"valueFormat": "avro", "schemaRegistryAddress": "localhost:8081"}, "http(s)://"),
        ({"valueFormat": "avro", "subscribe": "a,b"}, "needs option 'subject'"),
        ({"valueFormat": "avro", "valueformt": "x"}, "did you mean 'valueFormat'"),
    ],
)
def test_value_options_are_checked(options: dict[str, str], message: str) -> None:
    given = {"bootstrap": "127.0.0.1:9092", "subscribe": "t", **options}
    with pytest.raises(UsageError, match=re.escape(message)):
        parse_read_options(given, False)


def test_value_options_defaults() -> None:
    opts = parse_read_options({"bootstrap": "b:1", "assign": '{"orders": [0]}',
                               "valueFormat": "AVRO", "mode": "permissive"}, True)  # fmt: skip
    assert (opts.values.kind, opts.values.subject, opts.values.version, opts.values.mode) == (
        "avro", "orders-value", "latest", "PERMISSIVE")  # fmt: skip
    assert opts.values.registry_urls == ()  # found from the brokers at planning


def _framed(schema_id: int, text: str, value: Any) -> bytes:
    import io

    import fastavro

    out = io.BytesIO(b"\x00" + schema_id.to_bytes(4, "big"))
    out.seek(5)
    fastavro.schemaless_writer(out, fastavro.parse_schema(json.loads(text)), value)
    return out.getvalue()


@pytest.mark.parametrize("mode", ["FAILFAST", "PERMISSIVE"])
def test_decoding_checks_each_frame_without_a_registry(mode: str) -> None:
    """The reader's own id needs no registry; a cut body followed by another value reads on
    into it and is caught by its end."""
    import pyarrow as pa

    from spark_connector.avro_values import AvroDecodeError, decode_batches
    from spark_connector.registry import AvroValues
    from spark_connector.registry import Schema as Registered
    from spark_connector.schema import ARROW_SCHEMA

    text = json.dumps({"type": "record", "name": "P", "fields": [{"name": "s", "type": "string"}]})
    good = _framed(9, text, {"s": "hello"})
    values = [good, None, b"plain", good[:-2], good]
    n = len(values)
    batch = pa.RecordBatch.from_arrays(
        [pa.nulls(n, pa.binary()), pa.array(values, pa.binary()), pa.array(["t"] * n),
         pa.array([0] * n, pa.int32()), pa.array(range(10, 10 + n), pa.int64()),
         pa.array([0] * n, pa.timestamp("us", tz="UTC")), pa.array([0] * n, pa.int32())],
        schema=ARROW_SCHEMA,
    )  # fmt: skip
    spec = AvroValues(("http://127.0.0.1:1",), (), 9, Registered("AVRO", text), mode)
    decoded = decode_batches(iter([batch.slice(0)]), spec, "t", 3)
    if mode == "FAILFAST":
        with pytest.raises(AvroDecodeError, match="t/3 offset 12: value not framed by a schema"):
            list(decoded)
        return
    (out,) = list(decoded)
    assert out.column("value").to_pylist() == [{"s": "hello"}, None, None, None, {"s": "hello"}]
    assert out.column("offset").to_pylist() == list(range(10, 15))


def test_an_unknown_id_is_asked_once_per_task() -> None:
    """A registry answering 40403 (a real HTTP server on loopback): each task asks once for
    the id, whatever the number of its values, and the next task asks again (the id may have
    been registered on another broker since)."""
    import http.server
    import threading

    import pyarrow as pa

    from spark_connector.avro_values import decode_batches
    from spark_connector.registry import AvroValues
    from spark_connector.registry import Schema as Registered
    from spark_connector.schema import ARROW_SCHEMA

    asked: list[str] = []

    class NotFound(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            asked.append(self.path)
            body = json.dumps({"error_code": 40403, "message": "Schema not found"}).encode()
            self.send_response(404)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), NotFound)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        text = json.dumps({"type": "record", "name": "Q", "fields": [{"name": "n", "type": "int"}]})
        unknown = _framed(77, text, {"n": 1})
        n = 3
        batch = pa.RecordBatch.from_arrays(
            [pa.nulls(n, pa.binary()), pa.array([unknown] * n, pa.binary()),
             pa.array(["t"] * n), pa.array([0] * n, pa.int32()), pa.array(range(n), pa.int64()),
             pa.array([0] * n, pa.timestamp("us", tz="UTC")), pa.array([0] * n, pa.int32())],
            schema=ARROW_SCHEMA,
        )  # fmt: skip
        url = f"http://127.0.0.1:{server.server_address[1]}"
        spec = AvroValues((url,), (), 5, Registered("AVRO", text), "PERMISSIVE")
        for task in (1, 2):
            (out,) = list(decode_batches(iter([batch]), spec, "t", 0))
            assert out.column("value").to_pylist() == [None] * n
            assert asked == ["/schemas/ids/77"] * task
    finally:
        server.shutdown()
        server.server_close()


# ----- on the cluster ---------------------------------------------------------------------------


@pytest.fixture
def avro_topic(cluster3: LocalCluster) -> str:
    """A topic holding three records written with schema v1, then three with v2 (a field added
    with a default), by confluent-kafka's AvroSerializer with its defaults."""
    topic = f"avro-{uuid.uuid4().hex[:8]}"
    create_topic(cluster3.bootstrap, topic, 1)
    ctx = SerializationContext(topic, MessageField.VALUE)
    producer = Producer({"bootstrap.servers": cluster3.kafka_bootstrap})
    with SchemaRegistryClient({"url": cluster3.schema_registry_urls[0]}) as client:
        for version, fields in ((1, V1_FIELDS), (2, [*V1_FIELDS, NOTE])):
            serialize = AvroSerializer(client, _record(fields))  # auto.register.schemas
            for i in range(3):
                value = {"id": f"v{version}-{i}", "cents": 100 * i + version,
                         "at": datetime(2026, 1, 2, 3, 4, 5, 6000 * i, tzinfo=UTC),
                         "day": date(2026, 2, 1 + i), "price": Decimal(f"{i}.5{version}"),
                         "tags": ["x"] * i, "attrs": {"n": i}, "kind": "AB"[i % 2]}  # fmt: skip
                if version == 2:
                    value["note"] = f"note{i}" if i else None
                producer.produce(topic, value=serialize(value, ctx))
        assert producer.flush(30) == 0
        assert client.get_versions(f"{topic}-value") == [1, 2]
    return topic


def _expected() -> list[tuple[Any, ...]]:
    rows = []
    for version in (1, 2):
        for i in range(3):
            note = (f"note{i}" if i else None) if version == 2 else None
            at = datetime(2026, 1, 2, 3, 4, 5, 6000 * i)
            price = Decimal(f"{i}.5{version}")
            rows.append((f"v{version}-{i}", 100 * i + version, at, date(2026, 2, 1 + i),
                         price, ["x"] * i, {"n": i}, "AB"[i % 2], note))  # fmt: skip
    return rows


def test_batch_read_decodes_both_writer_versions_into_typed_columns(
    spark: Any, cluster3: LocalCluster, avro_topic: str
) -> None:
    # no schemaRegistryAddress: the brokers' registry is found from the cluster
    df = reader(spark, cluster3.bootstrap, subscribe=avro_topic, valueFormat="avro").load()
    assert df.schema["value"].dataType.simpleString() == VALUE_TYPE
    rows = df.select("offset", "value.*").orderBy("offset").collect()
    got = [tuple(r)[1:] for r in rows]
    assert [(*g[:2], g[2].replace(tzinfo=None), *g[3:]) for g in got] == _expected()

    # the reader schema pinned to version 1: v2's records resolved to it (note dropped)
    v1 = reader(
        spark,
        cluster3.bootstrap,
        subscribe=avro_topic,
        valueFormat="avro",
        schemaVersion="1",
        schemaRegistryAddress=cluster3.schema_registry_urls[1],
    )
    assert [r.id for r in v1.load().select("value.id").collect()] == [e[0] for e in _expected()]
    assert "note" not in v1.load().schema["value"].dataType.fieldNames()  # fmt: skip


def _bad_topic(cluster3: LocalCluster) -> str:
    """offset 0 good; 1 an id the registry does not know; 2 not framed; 3 a tombstone;
    4 a body cut short (the last value: fastavro meets the end of the data; a cut body
    followed by another value reads on into it, and the end is checked after)."""
    topic = f"avro-bad-{uuid.uuid4().hex[:8]}"
    create_topic(cluster3.bootstrap, topic, 1)
    schema = json.dumps({"type": "record", "name": "Bad", "fields": [
        {"name": "s", "type": "string"}]})  # fmt: skip
    with SchemaRegistryClient({"url": cluster3.schema_registry_urls[0]}) as client:
        schema_id = client.register_schema(f"{topic}-value", Schema(schema, "AVRO"))
    good = b"\x00" + schema_id.to_bytes(4, "big") + b"\x04ok"
    producer = Producer({"bootstrap.servers": cluster3.kafka_bootstrap})
    for value in (good, b"\x00" + (2**31 - 7).to_bytes(4, "big") + b"\x04ok", b"plain text",
                  None, good[:-1]):  # fmt: skip
        producer.produce(topic, value=value)
    assert producer.flush(30) == 0
    return topic


def test_bad_values_fail_the_task_or_read_as_null(spark: Any, cluster3: LocalCluster) -> None:
    topic = _bad_topic(cluster3)
    failfast = reader(spark, cluster3.bootstrap, subscribe=topic, valueFormat="avro",
                      endingOffsets=json.dumps({topic: {"0": 2}})).load()  # fmt: skip
    with pytest.raises(Exception, match=f"{topic}/0 offset 1: value schema id 2147483641 is "
                       "unknown to the registry"):  # fmt: skip
        failfast.collect()
    permissive = reader(spark, cluster3.bootstrap, subscribe=topic, valueFormat="avro",
                        mode="PERMISSIVE").load()  # fmt: skip
    got = [(r.offset, r.value and r.value.s) for r in permissive.orderBy("offset").collect()]
    assert got == [(0, "ok"), (1, None), (2, None), (3, None), (4, None)]
    for end, why in ((3, "not framed by a schema registry"), (5, "undecodable with schema id")):
        ranged = json.dumps({topic: {"0": end}})
        start = json.dumps({topic: {"0": end - 1}})
        df = reader(spark, cluster3.bootstrap, subscribe=topic, valueFormat="avro",
                    startingOffsets=start, endingOffsets=ranged).load()  # fmt: skip
        with pytest.raises(Exception, match=f"offset {end - 1}: value .*{why}"):
            df.collect()


def test_unknown_subject_fails_on_the_driver(spark: Any, cluster3: LocalCluster) -> None:
    with pytest.raises(Exception, match=r"subject 'nothing-here-value'.*40401"):
        reader(spark, cluster3.bootstrap, subscribe="nothing-here", valueFormat="avro").load()


def test_streaming_read_decodes_values(spark: Any, cluster3: LocalCluster, avro_topic: str) -> None:
    query = (
        spark.readStream.format("odradek")
        .option("bootstrap", cluster3.bootstrap)
        .option("subscribe", avro_topic)
        .option("startingOffsets", "earliest")
        .option("valueFormat", "avro")
        .load()
        .select("value.id", "value.note")
        .writeStream.format("memory")
        .queryName("avro_sink")
        .trigger(availableNow=True)
        .start()
    )
    try:
        query.awaitTermination(QUERY_TIMEOUT_S)
        assert query.exception() is None
        wait_for(lambda: not query.isActive, QUERY_TIMEOUT_S, "the availableNow query to end")
        got = sorted(tuple(r) for r in spark.sql("SELECT * FROM avro_sink").collect())
        assert got == sorted((e[0], e[-1]) for e in _expected())
    finally:
        query.stop()
