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


def test_find_coordinator_names_the_coordinator_on_the_clients_listener() -> None:
    from types import SimpleNamespace

    from broker.handlers.find_coordinator import on_listener
    from broker.session import Session
    from protocol.api.group import FindCoordinatorResponse

    ctx = SimpleNamespace(metadata=SimpleNamespace(brokers={2: BROKER}))
    found = FindCoordinatorResponse(0, None, 2, "10.0.0.2", 9093)
    on_sasl = on_listener(ctx, Session(listener="SASL_SSL"), found)  # type: ignore[arg-type]
    assert (on_sasl.node_id, on_sasl.host, on_sasl.port) == (2, "broker2.example.com", 9095)
    assert on_listener(ctx, Session(listener="PLAINTEXT"), found) == found  # type: ignore[arg-type]
    failed = FindCoordinatorResponse(15, "loading", -1, "", 0)
    assert on_listener(ctx, Session(listener="SASL_SSL"), failed) is failed  # type: ignore[arg-type]
