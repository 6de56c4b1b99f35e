"""`odradek quotas`' flag parsing (kafka-configs.sh's entity flags), without a broker."""

from __future__ import annotations

import pytest

from deploy.cli import build_parser
from deploy.quotas_cli import describe_lines, parse_add_config, parse_entities
from protocol.errors import UsageError
from protocol.quota import DEFAULT, QuotaEntity


def entities(*argv: str) -> dict[str, str | None]:
    args = build_parser().parse_args(["quotas", "describe", *argv])
    return parse_entities(args.entities)


def test_entity_flags_in_order() -> None:
    assert entities() == {}
    assert entities("--entity-type", "users") == {"user": None}
    assert entities("--entity-type", "users", "--entity-name", "alice") == {"user": "alice"}
    both = entities("--entity-type", "users", "--entity-default", "--entity-type", "clients",
                    "--entity-name", "app")  # fmt: skip
    assert both == {"user": DEFAULT, "client-id": "app"}
    twice = ["--entity-type", "users", "--entity-type", "users"]
    two_names = ["--entity-type", "clients", "--entity-name", "a", "--entity-default"]
    for bad in (["--entity-name", "x"], twice, two_names):
        with pytest.raises(UsageError):
            entities(*bad)


def test_add_config() -> None:
    assert parse_add_config("producer_byte_rate=1024, consumer_byte_rate=2048") == {
        "producer_byte_rate": 1024.0, "consumer_byte_rate": 2048.0,
    }  # fmt: skip
    for bad in ("producer_byte_rate", "=5", "producer_byte_rate=fast"):
        with pytest.raises(UsageError):
            parse_add_config(bad)


def test_describe_lines() -> None:
    values = {"request_percentage": 12.5, "producer_byte_rate": 1024.0}
    lines = describe_lines([(QuotaEntity("alice", DEFAULT), values)])
    assert lines[0].split() == ["ENTITY", "QUOTA", "VALUE"]
    assert "user alice, default client-id" in lines[1] and lines[1].endswith("1024")
    assert lines[2].endswith("12.5")
