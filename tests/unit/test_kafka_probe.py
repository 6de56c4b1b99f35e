"""The sentence for a native command pointed at a Kafka listener, with and without the
broker's native listener, and the probe against an in-process broker's Kafka door
(transport/kafka_probe.py; through the CLI against a real broker's Kafka port in
tests/integration/test_cli.py)."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

from broker.metadata_cache import MetadataCache
from protocol.api.controller import UpdateMetadataRequest
from protocol.api.metadata import BrokerInfo
from tests.unit.broker.harness import BROKER_ID, running_broker
from transport.kafka_probe import KafkaListener, plaintext_native, probe, wrong_door


def test_the_sentence_names_the_native_listener_or_how_to_find_it() -> None:
    said = wrong_door(KafkaListener("h:9092", "PLAINTEXT://h:9192"))
    assert said == ("h:9092 is a Kafka listener (it answered Kafka's ApiVersions), not odradek's "
                    "native port that this command speaks: this broker's native listener is "
                    "PLAINTEXT://h:9192")  # fmt: skip
    unknown = wrong_door(KafkaListener("h:9092", None))
    assert unknown.endswith(
        "use the broker's native port (its `port` or `native_listeners` setting; "
        "`odradek cluster status` lists both for a local cluster)"
    )


def test_an_address_that_does_not_answer_in_kafkas_framing_is_not_a_kafka_listener() -> None:
    async def closing_server() -> KafkaListener | None:
        async def close(_r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
            await _r.read(4)
            w.write(b"\x00\x00\x00\x02no")  # a frame too short for Kafka's header
            w.close()

        server = await asyncio.start_server(close, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        async with server:
            return await probe("127.0.0.1", port)

    assert asyncio.run(closing_server()) is None


def test_an_odradek_kafka_listener_is_recognised_and_names_its_native_listener(
    tmp_path: Path,
) -> None:
    """A real broker's Kafka door (in process): ApiVersions answers, Metadata names the live
    brokers (this one registered, as a real broker registers itself), and DescribeConfigs of
    this broker names where the native door is."""
    cache = MetadataCache()
    me = BrokerInfo(BROKER_ID, "127.0.0.1", 1, kafka_host="127.0.0.1", kafka_port=2)
    cache.apply(UpdateMetadataRequest(1, 1, [], [me, dataclasses.replace(me, node_id=7)], []))

    async def run() -> KafkaListener | None:
        async with running_broker(tmp_path, metadata=cache) as broker:
            return await probe("127.0.0.1", broker.kafka_port)

    found = asyncio.run(run())
    assert found is not None and found.address.startswith("127.0.0.1:")
    assert found.native is not None, found
    assert wrong_door(found).endswith(f"this broker's native listener is {found.native}")
    # its config says port 0 (picked at start): no address to give a program; a real broker's
    # (tests/spark/test_standalone.py reads through kafka.bootstrap.servers) says its port
    assert found.native_plaintext is None


def test_the_plaintext_native_address_is_what_that_listener_advertises() -> None:
    """broker/config.py's rule, from the settings the broker describes: its advertised
    listener of that name, else the listener itself, on host.name when bound to every
    interface; only a PLAINTEXT listener (the protocol map's, or the name's)."""
    base: dict[str, str | None] = {
        "host.name": "h", "port": "9192", "native.listeners": None,
        "native.advertised.listeners": None,
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,INNER:SASL_PLAINTEXT",
    }  # fmt: skip
    assert plaintext_native(base) == "h:9192"  # no native_listeners: host and port
    own = {**base, "native.listeners": "SSL://h:1,INNER://h:2,PLAINTEXT://0.0.0.0:3"}
    assert plaintext_native(own) == "h:3"
    adv = {**own, "native.advertised.listeners": "PLAINTEXT://public.example:4"}
    assert plaintext_native(adv) == "public.example:4"
    mapped = {**base, "native.listeners": "SSL://h:1,PLAIN2://x:5",
              "listener.security.protocol.map": "PLAIN2:PLAINTEXT,SSL:SSL"}  # fmt: skip
    assert plaintext_native(mapped) == "x:5"
    assert plaintext_native({**base, "native.listeners": "SSL://h:1,INNER://h:2"}) is None
    assert plaintext_native({**base, "port": "0"}) is None  # picked at start: not said
    assert plaintext_native({}) is None  # a Kafka broker that is not odradek
