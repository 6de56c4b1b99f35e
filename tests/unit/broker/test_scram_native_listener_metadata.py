"""The native door's Metadata gives each broker at its listener of the name the client came in
on: a SASL client is not sent to the PLAINTEXT inter-broker listener (where its SaslHandshake
would be ILLEGAL_SASL_STATE)."""

from __future__ import annotations

from broker.operations.metadata import as_seen_on
from protocol.api.metadata import KAFKA_DOOR, NATIVE_DOOR, BrokerInfo, Endpoint

BROKER = BrokerInfo(
    2, "10.0.0.2", 9093,
    endpoints=[
        Endpoint(NATIVE_DOOR, "PLAINTEXT", "10.0.0.2", 9093, "PLAINTEXT"),
        Endpoint(NATIVE_DOOR, "SASL_SSL", "broker2.example.com", 9095, "SASL_SSL"),
        Endpoint(KAFKA_DOOR, "SASL_SSL", "broker2.example.com", 9094, "SASL_SSL"),
    ],
)  # fmt: skip


def test_a_client_on_a_sasl_listener_is_given_that_listener() -> None:
    seen = as_seen_on(BROKER, "SASL_SSL")
    assert (seen.host, seen.port) == ("broker2.example.com", 9095)
    assert seen.endpoints == BROKER.endpoints


def test_the_inter_broker_listener_and_unknown_names_keep_the_inter_broker_address() -> None:
    assert as_seen_on(BROKER, "PLAINTEXT") is BROKER
    assert as_seen_on(BROKER, "CLIENTS") is BROKER
    legacy = BrokerInfo(3, "10.0.0.3", 9093)  # registered before endpoints were listed
    assert as_seen_on(legacy, "SASL_SSL") is legacy
