"""Spark reads what Kafka clients wrote: one topic per codec, written by librdkafka
(confluent-kafka) through the Kafka listener, read by the odradek data source in local[2]."""

from __future__ import annotations

from typing import Any

import pytest

from deploy.cluster import LocalCluster
from tests.integration.kafka_clients import CLIENTS, Rec
from tests.spark.conftest import reader

pytestmark = [pytest.mark.spark, pytest.mark.integration]


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_spark_reads_every_codec_a_kafka_client_writes(
    spark: Any, cluster3: LocalCluster, codec: str
) -> None:
    topic = f"spark-codec-{codec}"
    writer = CLIENTS["confluent-kafka"](cluster3.kafka_bootstrap)
    writer.create_topic(topic, 2, 1, {})
    sent = [
        Rec(f"k{i}".encode(), f"value-{i}".encode() * 3, [("i", str(i).encode())], i % 2)
        for i in range(300)
    ]
    where = writer.produce(topic, sent, compression=codec)
    df = reader(spark, cluster3.bootstrap, subscribe=topic, includeHeaders="true").load()
    rows = df.select("key", "value", "partition", "offset", "headers").collect()
    got = {(r.partition, r.offset): r for r in rows}
    assert len(got) == len(sent)
    for rec, (partition, offset) in zip(sent, where, strict=True):
        row = got[(partition, offset)]
        assert (bytes(row.key), bytes(row.value)) == (rec.key, rec.value)
        assert [(h.key, bytes(h.value)) for h in row.headers] == rec.headers
