"""Batch reads and writes through a real local SparkSession against a real 3-broker cluster."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from client.partitioner import partition_for_key
from deploy.cluster import LocalCluster
from spark_connector.ranges import OffsetRange, split_ranges
from tests.spark.conftest import create_topic, produce, reader

pytestmark = [pytest.mark.spark, pytest.mark.integration]

KAFKA_SCHEMA = (
    "struct<key:binary,value:binary,topic:string,partition:int,offset:bigint,"
    "timestamp:timestamp,timestampType:int>"
)
HEADERS = ",headers:array<struct<key:string,value:binary>>>"


def _offsets(df: Any) -> list[tuple[int, int, str]]:
    rows = df.select("partition", "offset", "value").collect()
    return sorted((r.partition, r.offset, bytes(r.value).decode()) for r in rows)


def test_schema_is_sparks_kafka_schema(spark: Any, cluster3: LocalCluster) -> None:
    create_topic(cluster3.bootstrap, "schema", 1)
    plain = reader(spark, cluster3.bootstrap, subscribe="schema").load()
    assert plain.schema.simpleString() == KAFKA_SCHEMA
    with_headers = reader(spark, cluster3.bootstrap, subscribe="schema", includeHeaders="true")
    assert with_headers.load().schema.simpleString() == KAFKA_SCHEMA[:-1] + HEADERS
    assert plain.count() == 0


def test_exact_offset_ranges(spark: Any, cluster3: LocalCluster) -> None:
    boot = cluster3.bootstrap
    create_topic(boot, "exact", 2)
    produce(boot, "exact", 100, partition=0)
    produce(boot, "exact", 60, partition=1)
    df = reader(
        spark, boot, subscribe="exact",
        startingOffsets=json.dumps({"exact": {"0": 10, "1": -2}}),
        endingOffsets=json.dumps({"exact": {"0": 25, "1": -1}}),
    ).load()  # fmt: skip
    want = [(0, i, f"v{i}") for i in range(10, 25)] + [(1, i, f"v{i}") for i in range(60)]
    assert _offsets(df) == want
    row = df.where("partition = 0 and offset = 10").collect()[0]
    assert (row.topic, bytes(row.key), row.timestampType) == ("exact", b"k0", 0)
    # the default batch range is earliest..latest; assign reads only the partitions named
    assigned = reader(spark, boot, assign=json.dumps({"exact": [1]})).load()
    assert _offsets(assigned) == [(1, i, f"v{i}") for i in range(60)]


def test_min_partitions_splits_ranges_like_spark(spark: Any, cluster3: LocalCluster) -> None:
    boot = cluster3.bootstrap
    create_topic(boot, "split", 2)
    produce(boot, "split", 90, partition=0)
    produce(boot, "split", 10, partition=1)
    df = reader(spark, boot, subscribe="split", minPartitions="5").load()
    expected = split_ranges([OffsetRange("split", 0, 0, 90), OffsetRange("split", 1, 0, 10)], 5)
    assert [(r.partition, r.from_offset, r.until_offset) for r in expected] == [
        (0, 0, 22), (0, 22, 44), (0, 44, 67), (0, 67, 90), (1, 0, 10),
    ]  # fmt: skip
    assert df.rdd.getNumPartitions() == len(expected)
    from pyspark.sql import functions as F

    tasks = (
        df.groupBy(F.spark_partition_id().alias("task"), "partition")
        .agg(F.min("offset").alias("lo"), F.max("offset").alias("hi"), F.count("*").alias("n"))
        .collect()
    )
    got = sorted((r.partition, r.lo, r.hi + 1) for r in tasks)
    assert got == [(r.partition, r.from_offset, r.until_offset) for r in expected]
    assert all(r.n == r.hi - r.lo + 1 for r in tasks)
    assert len(_offsets(df)) == 100


def test_headers(spark: Any, cluster3: LocalCluster) -> None:
    boot = cluster3.bootstrap
    create_topic(boot, "hdrs", 1)
    produce(boot, "hdrs", 30, headers=True)
    rows = reader(spark, boot, subscribe="hdrs", includeHeaders="true").load().collect()
    assert len(rows) == 30
    for r in rows:
        i = int(bytes(r.value).decode()[1:])
        if i % 3 == 0:
            assert [(h.key, None if h.value is None else bytes(h.value)) for h in r.headers] == [
                ("i", str(i).encode()), ("none", None),
            ]  # fmt: skip
        else:
            assert r.headers is None


def test_timestamps(spark: Any, cluster3: LocalCluster) -> None:
    boot = cluster3.bootstrap
    base_ms = 1_700_000_000_000
    create_topic(boot, "times", 1)
    produce(boot, "times", 40, timestamp_ms=lambda i: base_ms + i * 1000)
    df = reader(
        spark, boot, subscribe="times",
        startingTimestamp=str(base_ms + 10_000), endingTimestamp=str(base_ms + 19_500),
    ).load()  # fmt: skip
    rows = sorted(df.select("offset", "timestamp").collect())
    assert [r.offset for r in rows] == list(range(10, 20))
    assert rows[0].timestamp == datetime.fromtimestamp((base_ms + 10_000) / 1000, UTC).replace(
        tzinfo=None
    )
    by_partition = reader(
        spark, boot, subscribe="times",
        startingOffsetsByTimestamp=json.dumps({"times": {"0": base_ms + 35_000}}),
    ).load()  # fmt: skip
    assert sorted(r.offset for r in by_partition.select("offset").collect()) == list(range(35, 40))
    past_end = reader(spark, boot, subscribe="times", startingTimestamp=str(base_ms + 10**9))
    with pytest.raises(Exception, match="no record in times/0 has a timestamp"):
        past_end.load().count()
    latest = past_end.option("startingOffsetsByTimestampStrategy", "latest").load()
    assert latest.count() == 0


def test_pattern_subscription(spark: Any, cluster3: LocalCluster) -> None:
    boot = cluster3.bootstrap
    # on the session's shared cluster: names no other test's pattern (test_groups: pat-.*) takes
    for name in ("spark-pat-a", "spark-pat-b", "xspark-pat-c"):
        create_topic(boot, name, 2)
        produce(boot, name, 10, prefix=name)
    df = reader(spark, boot, subscribePattern="spark-pat-.*").load()
    counts = {r.topic: r["count"] for r in df.groupBy("topic").count().collect()}
    assert counts == {"spark-pat-a": 10, "spark-pat-b": 10}


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"subscribe": "x", "startingOffsets": "latest"},
            "startingOffsets 'latest' is not allowed",
        ),
        (
            {"subscribe": "x", "endingOffsets": "earliest"},
            "endingOffsets 'earliest' is not allowed",
        ),
        ({"subscribe": "x", "subscribePattern": "x.*"}, "only one of the options"),
        ({"startingOffsets": "earliest"}, "one of the options 'subscribe'"),
        ({"subscribe": "x", "startingOffsets": '{"x": {"0": -1}}'}, "can't be latest"),
        ({"subscribe": "x", "minPartitions": "0"}, "'minPartitions' must be a positive"),
    ],
)
def test_bad_options_fail_in_one_line(spark: Any, options: dict[str, str], message: str) -> None:
    # options are checked on the driver before any broker is contacted: no cluster needed
    with pytest.raises(Exception, match=message):
        reader(spark, "127.0.0.1:9", **options).load().collect()


def test_write_then_read_back(spark: Any, cluster3: LocalCluster) -> None:
    boot = cluster3.bootstrap
    create_topic(boot, "written", 3)
    rows = [
        (f"key{i}".encode(), f"value{i}", i % 3, [("n", str(i).encode())] if i % 2 else None)
        for i in range(300)
    ]
    df = spark.createDataFrame(
        rows,
        "key binary, value string, partition int, headers array<struct<key:string,value:binary>>",
    )
    # Python data sources take "append" (Spark's Kafka sink also takes the default mode)
    df.write.format("odradek").mode("append").option("bootstrap", boot).option(
        "topic", "written"
    ).save()
    back = reader(spark, boot, subscribe="written", includeHeaders="true").load().collect()
    got = sorted(
        (bytes(r.key), bytes(r.value).decode(), r.partition,
         None if r.headers is None else [(h.key, bytes(h.value)) for h in r.headers])
        for r in back
    )  # fmt: skip
    assert got == sorted(rows)
    # a topic column routes each row; the bad-schema check is one line
    spark.createDataFrame([("written", "x")], "topic string, value string").write.format(
        "odradek"
    ).mode("append").option("bootstrap", boot).save()
    assert reader(spark, boot, subscribe="written").load().count() == 301
    with pytest.raises(Exception, match="a 'value' column"):
        spark.createDataFrame([("a",)], "key string").write.format("odradek").mode("append").option(
            "bootstrap", boot
        ).option("topic", "written").save()


def test_write_partitions_by_key_as_kafka_does_in_row_order(
    spark: Any, cluster3: LocalCluster
) -> None:
    """The Arrow sink (spark_connector/arrow_sink.py): a keyed row without a partition goes
    where Kafka's partitioner puts its key; within a partition, rows keep their order; the
    key-less rows of one Arrow batch share a partition."""
    boot = cluster3.bootstrap
    create_topic(boot, "keyed", 3)
    rows = [(None if i % 10 == 0 else f"key{i % 17}", f"v{i:03d}") for i in range(200)]
    spark.createDataFrame(rows, "key string, value string").coalesce(1).write.format(
        "odradek"
    ).mode("append").option("bootstrap", boot).option("topic", "keyed").save()
    back = reader(spark, boot, subscribe="keyed").load().collect()
    assert len(back) == 200
    by_partition: dict[int, list[tuple[int, str]]] = {}
    for r in back:
        key = None if r.key is None else bytes(r.key)
        if key is not None:
            assert r.partition == partition_for_key(key, 3), key
        by_partition.setdefault(r.partition, []).append((r.offset, bytes(r.value).decode()))
    for records in by_partition.values():
        values = [v for _, v in sorted(records)]
        assert values == sorted(values), "a partition's rows keep their order"
    keyless = {r.partition for r in back if r.key is None}
    assert len(keyless) == 1
