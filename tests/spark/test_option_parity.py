"""Option parity with Spark's Kafka source and sink, pure (no cluster, no SparkSession): every
option name is checked (an unknown one names the nearest known), the `kafka.` security options
are read as Spark users write them, the streaming trigger options parse as Spark's do, and the
range decisions behind maxRecordsPerPartition, minOffsetsPerTrigger and the lag figures."""

from __future__ import annotations

import pytest

pytest.importorskip("pyspark")

from protocol.errors import UsageError
from spark_connector.options import parse_read_options, parse_write_options
from spark_connector.ranges import OffsetRange, delay_batch, offsets_behind, split_ranges
from spark_connector.security import client_options, security_props

READ = {"bootstrap": "127.0.0.1:9092", "subscribe": "t"}
JAAS = ('org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" '
        'password="alice-secret";')  # fmt: skip
SECURE = {
    "kafka.security.protocol": "SASL_SSL",
    "kafka.sasl.mechanism": "SCRAM-SHA-512",
    "kafka.sasl.jaas.config": JAAS,
    "kafka.ssl.truststore.location": "/etc/odradek/ca.pem",
    "kafka.ssl.truststore.type": "PEM",
}


@pytest.mark.parametrize(
    ("options", "streaming", "message"),
    [
        ({"subscibe": "t"}, False, "unknown option 'subscibe' \\(did you mean 'subscribe'\\?\\)"),
        ({"startingOffset": "earliest"}, True, "did you mean 'startingOffsets'"),
        ({"maxOfsetsPerTrigger": "5"}, True, "did you mean 'maxOffsetsPerTrigger'"),
        ({"zzz": "1"}, False, ": unknown option 'zzz'$"),
        ({"minOffsetsPerTrigger": "5"}, False, "only applies to streaming queries"),
        ({"endingTimestamp": "5"}, True, "is not allowed in a streaming query"),
        ({"topic": "x"}, False, "'topic' applies to writes, not reads"),
        ({"path": "/x"}, False, "'path' is not supported: the odradek source takes no path"),
        ({"groupIdPrefix": "g"}, False, "'groupIdPrefix' only applies to streaming queries"),
        ({"kafka.group.id": "g"}, False, "'kafka.group.id' only applies to streaming queries"),
        ({"kafka.group.id": " "}, True, "'kafka.group.id' is empty"),
        ({"kafka.auto.offset.reset": "earliest"}, False, "set the option 'startingOffsets'"),
        ({"kafka.sasl.mechansim": "PLAIN"}, False, "did you mean 'kafka.sasl.mechanism'"),
        ({"maxTriggerDelay": "soon"}, True, "a duration like 15m"),
        ({"fetchOffset.numRetries": "-1"}, False, "an integer >= 0"),
        ({"pollTimeoutMs": "5", "kafkaConsumer.pollTimeoutMs": "5"}, False, "not both"),
    ],
)
def test_a_wrong_option_is_one_line_naming_it(
    options: dict[str, str], streaming: bool, message: str
) -> None:
    with pytest.raises(UsageError, match=message) as info:
        parse_read_options({**READ, **options}, streaming)
    assert "\n" not in info.value.message


def test_write_options_are_checked_by_name_too() -> None:
    with pytest.raises(UsageError, match="did you mean 'lingerMs'"):
        parse_write_options({"bootstrap": "h:1", "lingerMS ": "5"})
    with pytest.raises(UsageError, match="'includeHeaders' applies to reads, not writes"):
        parse_write_options({"bootstrap": "h:1", "includeHeaders": "true"})
    with pytest.raises(UsageError, match=r"'kafka\.isolation\.level' applies to reads"):
        parse_write_options({"bootstrap": "h:1", "kafka.isolation.level": "read_committed"})
    with pytest.raises(UsageError, match=r"'kafka\.group\.id' applies to reads"):
        parse_write_options({"bootstrap": "h:1", "kafka.group.id": "g"})
    with pytest.raises(UsageError, match="use the option 'lingerMs'"):
        parse_write_options({"bootstrap": "h:1", "kafka.linger.ms": "5"})
    # Spark's own options, handed to a streaming sink, are not the connector's to refuse
    streaming = parse_write_options(
        {"bootstrap": "h:1", "checkpointlocation": "/c", "queryname": "q", **SECURE}
    )
    assert dict(streaming.security)["sasl.mechanism"] == "SCRAM-SHA-512"


def test_streaming_trigger_options_parse_like_sparks() -> None:
    opts = parse_read_options(
        {**READ, "minOffsetsPerTrigger": "100", "maxTriggerDelay": "30s",
         "maxOffsetsPerTrigger": "1000", "kafkaConsumer.pollTimeoutMs": "5000",
         "maxRecordsPerPartition": "50", "fetchOffset.numRetries": "0",
         "fetchOffset.retryIntervalMs": "20"},
        streaming=True,
    )  # fmt: skip
    assert (opts.min_offsets_per_trigger, opts.max_trigger_delay_ms) == (100, 30_000)
    assert (opts.max_offsets_per_trigger, opts.poll_timeout_ms) == (1000, 5000)
    assert opts.max_records_per_partition == 50
    assert (opts.fetch_offset_retries, opts.fetch_offset_retry_interval_ms) == (0, 20)
    assert parse_read_options(READ, True).max_trigger_delay_ms == 15 * 60 * 1000  # 15m
    for raw, ms in (("500", 500), ("500ms", 500), ("2m", 120_000), ("1h", 3_600_000)):
        assert parse_read_options({**READ, "maxTriggerDelay": raw}, True).max_trigger_delay_ms == ms


def test_security_options_as_spark_users_write_them() -> None:
    props = dict(security_props({k.lower(): v for k, v in SECURE.items()}))
    assert props == {k.removeprefix("kafka."): v for k, v in SECURE.items()}
    read = parse_read_options({**READ, **SECURE}, streaming=False)
    assert dict(read.security) == props and client_options(()) == {}


def test_librdkafka_names_become_the_java_clients() -> None:
    """PySpark users coming from confluent-kafka write ssl.ca.location and sasl.username /
    sasl.password: they become the truststore and a JAAS value, so they are honoured too."""
    props = dict(security_props({
        "kafka.security.protocol": "SASL_SSL", "kafka.sasl.mechanism": "SCRAM-SHA-256",
        "kafka.ssl.ca.location": "/ca.pem", "kafka.sasl.username": "bob",
        "kafka.sasl.password": 'p"w',
    }))  # fmt: skip
    assert props["ssl.truststore.location"] == "/ca.pem" and props["ssl.truststore.type"] == "PEM"
    assert props["sasl.jaas.config"] == (
        'org.apache.kafka.common.security.scram.ScramLoginModule required username="bob" '
        'password="p\\"w";'
    )


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"kafka.security.protocol": "SASL_SSL", "kafka.sasl.mechanism": "SCRAM-SHA-512"},
         "needs sasl.jaas.config"),
        ({"kafka.ssl.truststore.location": "/ca.pem"}, "needs security.protocol SSL or SASL_SSL"),
        ({"kafka.security.protocol": "SASL_SSL", "kafka.sasl.mechanism": "GSSAPI",
          "kafka.sasl.jaas.config": JAAS}, "GSSAPI is not supported"),
        ({"kafka.security.protocol": "SSL", "kafka.ssl.protocol": "TLSv1.2"},
         "'kafka.ssl.protocol' is not supported"),
        ({"kafka.security.protocol": "SASL_SSL", "kafka.sasl.username": "bob"},
         "go together"),
        ({"kafka.security.protocol": "SSL", "kafka.ssl.truststore.type": "JKS"},
         "JKS is not supported"),
    ],
)  # fmt: skip
def test_security_options_that_cannot_work_are_refused(
    options: dict[str, str], message: str
) -> None:
    with pytest.raises(UsageError, match=message) as info:
        parse_read_options({**READ, **options}, streaming=False)
    assert "\n" not in info.value.message and "alice-secret" not in info.value.message


def test_max_records_per_partition_cuts_ranges_before_min_partitions() -> None:
    ranges = [OffsetRange("t", 0, 0, 100), OffsetRange("t", 1, 10, 15)]
    cut = split_ranges(ranges, None, 30)
    assert [(r.partition, r.from_offset, r.until_offset) for r in cut] == [
        (0, 0, 25), (0, 25, 50), (0, 50, 75), (0, 75, 100), (1, 10, 15),
    ]  # fmt: skip
    # then minPartitions over the pieces: 8 wanted, the four big pieces are halved
    both = split_ranges(ranges, 8, 30)
    assert len(both) >= 8 and sum(r.size for r in both) == 105
    assert all(r.size <= 30 for r in both)


def test_delay_batch_waits_for_min_offsets_up_to_the_delay() -> None:
    start, until = {("t", 0): 10}, {("t", 0): 15, ("t", 1): 3}  # 5 + 3 (new, from 0) new
    assert delay_batch(9, start, until, since_last_batch_ms=0, max_delay_ms=1000)
    assert not delay_batch(8, start, until, since_last_batch_ms=0, max_delay_ms=1000)
    assert not delay_batch(9, start, until, since_last_batch_ms=1000, max_delay_ms=1000)


def test_offsets_behind_are_sparks_kafka_source_metrics() -> None:
    end = {("t", 0): 10, ("t", 1): 40, ("u", 0): 7}
    latest = {("t", 0): 30, ("t", 1): 40, ("u", 0): 17}
    assert offsets_behind(end, latest) == {
        "minOffsetsBehindLatest": "0",
        "maxOffsetsBehindLatest": "20",
        "avgOffsetsBehindLatest": "10.0",
    }
    assert offsets_behind({}, latest) == {}


def test_a_streaming_query_names_the_group_its_progress_goes_to() -> None:
    """kafka.group.id as given; else none here, and the reader makes groupIdPrefix-<uuid>."""
    named = parse_read_options({**READ, "kafka.group.id": "etl-lag"}, streaming=True)
    assert (named.group_id, named.group_id_prefix) == ("etl-lag", "spark-kafka-source")
    prefixed = parse_read_options({**READ, "groupIdPrefix": "etl"}, streaming=True)
    assert (prefixed.group_id, prefixed.group_id_prefix) == (None, "etl")
