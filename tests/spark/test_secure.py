"""The connector on a secure cluster (TLS + SCRAM-SHA-512 on every listener, the authorizer on:
`odradek cluster up --secure`), with the `kafka.`-prefixed options as a Spark user writes them.

One shared one-broker secure cluster (the pool's). The options are the cluster's own
client.properties, each key prefixed with `kafka.` (Spark's Kafka integration guide,
"Security"), and `kafka.bootstrap.servers` is the Kafka listener's address, as for Spark's own
source: a batch write through the sink, then a batch read of it, with headers; a wrong password
fails the query on the driver at once with the broker's refusal in one line.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from confluent_kafka.serialization import MessageField, SerializationContext

from client import Admin, NewTopic, Producer
from client.command_config import command_config, parse_properties
from deploy.cluster import LocalCluster
from tests.fixtures.cluster import ClusterPool, wait_until

pytestmark = [pytest.mark.spark, pytest.mark.integration]

# a refused login is one round trip, not a retry loop up to the driver's lookup timeout (60 s);
# the rest is Spark planning the query, slow on a loaded 2-core machine
QUICK_S = 50.0


@pytest.fixture(scope="module")
def secure(cluster_pool: ClusterPool) -> LocalCluster:
    return cluster_pool.get(1, secure=True)


def _spark_options(cluster: LocalCluster) -> dict[str, str]:
    """client.properties as Spark options: `kafka.` + each property."""
    assert cluster.client_properties_path is not None
    props = parse_properties(cluster.client_properties_path.read_text())
    assert props["security.protocol"] == "SASL_SSL"
    return {"kafka.bootstrap.servers": cluster.kafka_bootstrap,
            **{f"kafka.{k}": v for k, v in props.items()}}  # fmt: skip


def _create_topic(cluster: LocalCluster, name: str) -> None:
    with Admin(cluster.bootstrap, **cluster.client_options()) as admin:
        admin.create_topics([NewTopic(name, 2, 1, {})])

        def has_leaders() -> bool:
            described = [t for t in admin.describe_topics([name]) if t.name == name]
            return bool(described) and all(p.leader >= 0 for p in described[0].partitions)

        wait_until(has_leaders, f"leaders for {name}", 30.0)


def test_batch_write_and_read_with_the_kafka_security_options(
    spark: Any, secure: LocalCluster
) -> None:
    options = _spark_options(secure)
    _create_topic(secure, "secure-spark")
    rows = [(f"k{i}", f"v{i}", [("n", str(i).encode())]) for i in range(40)]
    frame = spark.createDataFrame(
        rows, "key string, value string, headers array<struct<key string, value binary>>"
    )
    frame.write.format("odradek").options(**options).option("topic", "secure-spark").mode(
        "append"
    ).save()
    read = (
        spark.read.format("odradek").options(**options)
        .option("subscribe", "secure-spark").option("includeHeaders", "true").load()
    )  # fmt: skip
    got = sorted(
        (
            bytes(r.key).decode(),
            bytes(r.value).decode(),
            [(h.key, bytes(h.value)) for h in r.headers],
        )
        for r in read.collect()
    )
    assert got == sorted(rows)


def test_a_wrong_password_fails_at_once_saying_so(spark: Any, secure: LocalCluster) -> None:
    options = _spark_options(secure)
    jaas = options["kafka.sasl.jaas.config"]
    options["kafka.sasl.jaas.config"] = jaas.replace('password="', 'password="wrong-', 1)
    started = time.monotonic()
    with pytest.raises(Exception) as caught:
        spark.read.format("odradek").options(**options).option("subscribe", "x").load().count()
    assert time.monotonic() - started < QUICK_S
    # Spark wraps the driver's Python error with its traceback; the error's own line says it all
    said = [line for line in str(caught.value).splitlines() if line.startswith("protocol.")]
    assert len(said) == 1, str(caught.value)
    assert (
        "SaslAuthenticationFailedError: SASL_AUTHENTICATION_FAILED: kafka.bootstrap.servers: "
        f"{secure.kafka_bootstrap} refused the login: Authentication failed" in said[0]
    ), said
    assert "wrong-" not in said[0], said  # never the password


def test_avro_values_through_the_secure_registry(spark: Any, secure: LocalCluster) -> None:
    """valueFormat=avro on the secure cluster: the registry is found from the brokers (https),
    and asked with the kafka.sasl user as HTTP Basic and the truststore's CA."""
    from tests.spark.test_avro import AvroSerializer, SchemaRegistryClient

    options = _spark_options(secure)
    _create_topic(secure, "secure-avro")
    login = command_config(parse_properties(secure.client_properties_path.read_text()), "test")
    user, password = login.sasl_username, login.sasl_password
    registry = {"url": secure.schema_registry_urls[0], "basic.auth.user.info": f"{user}:{password}",
                "ssl.ca.location": options["kafka.ssl.truststore.location"]}  # fmt: skip
    schema = '{"type": "record", "name": "S", "fields": [{"name": "n", "type": "long"}]}'
    ctx = SerializationContext("secure-avro", MessageField.VALUE)
    with SchemaRegistryClient(registry) as client:
        serialize = AvroSerializer(client, schema)
        values = [serialize({"n": i}, ctx) for i in range(10)]
    with Producer(secure.bootstrap, **secure.client_options()) as producer:
        for value in values:
            producer.send("secure-avro", value, partition=0)
        producer.flush()
    read = (
        spark.read.format("odradek").options(**options)
        .option("subscribe", "secure-avro").option("valueFormat", "avro").load()
    )  # fmt: skip
    assert sorted(r.n for r in read.select("value.n").collect()) == list(range(10))
