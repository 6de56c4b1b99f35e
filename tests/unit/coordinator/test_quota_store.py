"""Client quota storage over an in-memory ZooKeeper: Kafka's znodes and JSON for each entity
kind, SCRAM keys of a user's node kept (also when written between our read and our write), a
change notification per write, describe filters, and the follower applying one entity on a
notification and every entity on a resync."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any

import pytest

from coordinator.cluster.quotas import (
    QuotaFollower,
    alter_quotas,
    describe_quotas,
    read_all_quotas,
)
from protocol import quota as q
from protocol.errors import InvalidRequestError
from protocol.quota import DEFAULT, QuotaEntity
from tests.unit.coordinator.test_scram_credentials import FakeZk


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def changes(zk: FakeZk) -> list[str]:
    return [
        json.loads(data)["entity_path"]
        for path, (data, _) in sorted(zk.nodes.items())
        if path.startswith("/config/changes/config_change_")
    ]


def test_each_entity_kind_is_kafkas_znode_with_a_notification() -> None:
    zk: Any = FakeZk()
    run(alter_quotas(zk, QuotaEntity("alice"), [(q.PRODUCER_BYTE_RATE, 1024.0)]))
    run(alter_quotas(zk, QuotaEntity("a b", DEFAULT), [(q.REQUEST_PERCENTAGE, 12.5)]))
    run(alter_quotas(zk, QuotaEntity(None, "app"), [(q.CONSUMER_BYTE_RATE, 2048.0)]))
    assert json.loads(zk.nodes["/config/users/alice"][0]) == {
        "version": 1, "config": {"producer_byte_rate": "1024"},
    }  # fmt: skip
    assert json.loads(zk.nodes["/config/users/a%20b/clients/<default>"][0])["config"] == {
        "request_percentage": "12.5"
    }
    assert json.loads(zk.nodes["/config/clients/app"][0])["config"] == {
        "consumer_byte_rate": "2048"
    }
    assert changes(zk) == ["users/alice", "users/a%20b/clients/<default>", "clients/app"]
    assert run(read_all_quotas(zk)) == {
        QuotaEntity("alice"): {q.PRODUCER_BYTE_RATE: 1024.0},
        QuotaEntity("a b", DEFAULT): {q.REQUEST_PERCENTAGE: 12.5},
        QuotaEntity(None, "app"): {q.CONSUMER_BYTE_RATE: 2048.0},
    }


def test_scram_keys_survive_and_a_concurrent_write_is_retried() -> None:
    zk: Any = FakeZk()
    zk.nodes["/config/users/alice"] = (b'{"version":1,"config":{"SCRAM-SHA-512":"x"}}', 0)
    other = b'{"version":1,"config":{"SCRAM-SHA-512":"x","SCRAM-SHA-256":"y"}}'
    zk.before_set.append(("/config/users/alice", other))  # lands between our read and write
    run(alter_quotas(zk, QuotaEntity("alice"), [(q.CONSUMER_BYTE_RATE, 10.0)]))
    config = json.loads(zk.nodes["/config/users/alice"][0])["config"]
    assert config == {"SCRAM-SHA-512": "x", "SCRAM-SHA-256": "y", "consumer_byte_rate": "10"}
    run(alter_quotas(zk, QuotaEntity("alice"), [(q.CONSUMER_BYTE_RATE, None)]))
    config = json.loads(zk.nodes["/config/users/alice"][0])["config"]
    assert config == {"SCRAM-SHA-512": "x", "SCRAM-SHA-256": "y"}
    assert run(read_all_quotas(zk)) == {}  # a node with only credentials is no quota entity


def test_validate_only_and_bad_ops_write_nothing() -> None:
    zk: Any = FakeZk()
    run(alter_quotas(zk, QuotaEntity("bob"), [(q.PRODUCER_BYTE_RATE, 5.0)], validate_only=True))
    with pytest.raises(InvalidRequestError):
        run(alter_quotas(zk, QuotaEntity("bob"), [(q.PRODUCER_BYTE_RATE, 5.5)]))
    assert "/config/users/bob" not in zk.nodes and changes(zk) == []


def test_describe_filters() -> None:
    zk: Any = FakeZk()
    for entity in (QuotaEntity("alice"), QuotaEntity("alice", "app"), QuotaEntity(None, "app")):
        run(alter_quotas(zk, entity, [(q.PRODUCER_BYTE_RATE, 1.0)]))
    alice = q.FilterComponent(q.USER, q.MATCH_EXACT, "alice")
    assert set(run(describe_quotas(zk, [alice], True))) == {QuotaEntity("alice")}
    assert set(run(describe_quotas(zk, [alice], False))) == {
        QuotaEntity("alice"),
        QuotaEntity("alice", "app"),
    }
    with pytest.raises(InvalidRequestError):
        run(describe_quotas(zk, [q.FilterComponent("group", 2)], False))


def test_follower_applies_a_change_and_reloads_everything() -> None:
    zk: Any = FakeZk()
    applied: list[tuple[QuotaEntity, Mapping[str, float]]] = []
    replaced: list[Mapping[QuotaEntity, Mapping[str, float]]] = []
    follower = QuotaFollower(zk, lambda e, v: applied.append((e, v)), replaced.append)
    run(alter_quotas(zk, QuotaEntity("alice", "app"), [(q.PRODUCER_BYTE_RATE, 7.0)]))
    run(follower.changed("users/alice/clients/app"))
    run(follower.changed("topics/t"))  # not a quota entity: nothing
    assert applied == [(QuotaEntity("alice", "app"), {q.PRODUCER_BYTE_RATE: 7.0})]
    run(follower.changed("clients/gone"))  # no node: its quotas are removed
    assert applied[-1] == (QuotaEntity(None, "gone"), {})
    run(follower.reload())
    assert replaced == [{QuotaEntity("alice", "app"): {q.PRODUCER_BYTE_RATE: 7.0}}]
