"""ZooKeeper paths and JSON (Kafka's layout)."""

from __future__ import annotations

import json

import pytest

from coordinator.cluster import zk_paths as paths
from coordinator.cluster.zk_paths import (
    BrokerRegistration,
    ControllerInfo,
    LeaderIsrState,
    TopicAssignment,
    TopicConfig,
    ZkDataError,
)


def test_paths() -> None:
    assert paths.broker_path(3) == "/brokers/ids/3"
    assert paths.topic_path("t") == "/brokers/topics/t"
    assert paths.partition_state_path("t", 2) == "/brokers/topics/t/partitions/2/state"
    assert paths.topic_config_path("t") == "/config/topics/t"
    assert paths.delete_topic_path("t") == "/admin/delete_topics/t"


def test_broker_registration_json_is_kafkas() -> None:
    reg = BrokerRegistration("127.0.0.1", 9092, 1700000000000, "10.0.0.5", 9093)
    raw = reg.encode()
    assert json.loads(raw) == {
        "host": "10.0.0.5", "port": 9093, "timestamp": "1700000000000", "version": 4,
        "endpoints": ["PLAINTEXT://10.0.0.5:9093", "ODRADEK://127.0.0.1:9092"],
        "listener_security_protocol_map": {"PLAINTEXT": "PLAINTEXT", "ODRADEK": "PLAINTEXT"},
        "jmx_port": -1,
    }  # fmt: skip
    assert BrokerRegistration.decode(raw) == reg


def test_broker_registration_without_a_kafka_listener() -> None:
    reg = BrokerRegistration("127.0.0.1", 9092, 5)
    obj = json.loads(reg.encode())
    assert obj["endpoints"] == ["ODRADEK://127.0.0.1:9092"]
    assert (obj["host"], obj["port"]) == ("127.0.0.1", 9092)
    assert BrokerRegistration.decode(reg.encode()) == reg


def test_broker_registration_of_version_1_and_bad_endpoints() -> None:
    old = b'{"host":"h","port":1,"timestamp":"2","version":1}'
    assert BrokerRegistration.decode(old) == BrokerRegistration("h", 1, 2)
    with pytest.raises(ZkDataError):
        BrokerRegistration.decode(b'{"endpoints":["garbage"],"timestamp":"1"}')
    with pytest.raises(ZkDataError):
        BrokerRegistration.decode(b'{"endpoints":["PLAINTEXT://h:1"],"timestamp":"1"}')


def test_controller_json() -> None:
    raw = ControllerInfo(2, 5).encode()
    assert json.loads(raw) == {"brokerid": 2, "timestamp": "5", "version": 1}
    assert ControllerInfo.decode(raw) == ControllerInfo(2, 5)
    # A Kafka-written node (extra fields, timestamp as string) decodes too.
    assert ControllerInfo.decode(b'{"version":1,"brokerid":7,"timestamp":"1"}').broker_id == 7


def test_controller_epoch() -> None:
    assert paths.encode_controller_epoch(12) == b"12"
    assert paths.decode_controller_epoch(b"12") == 12
    with pytest.raises(ZkDataError):
        paths.decode_controller_epoch(b"x")


def test_topic_assignment_json() -> None:
    raw = TopicAssignment({1: [2, 3], 0: [1, 2]}).encode()
    assert json.loads(raw) == {"version": 1, "partitions": {"0": [1, 2], "1": [2, 3]}}
    assert TopicAssignment.decode(raw).partitions == {0: [1, 2], 1: [2, 3]}


def test_leader_isr_json() -> None:
    state = LeaderIsrState(leader=1, leader_epoch=4, controller_epoch=2, isr=[1, 3])
    assert json.loads(state.encode()) == {
        "leader": 1, "leader_epoch": 4, "controller_epoch": 2, "isr": [1, 3], "version": 1,
    }  # fmt: skip
    assert LeaderIsrState.decode(state.encode()) == state


def test_topic_config_json() -> None:
    raw = TopicConfig({"retention.ms": "1000"}).encode()
    assert json.loads(raw) == {"version": 1, "config": {"retention.ms": "1000"}}
    assert TopicConfig.decode(raw).config == {"retention.ms": "1000"}


@pytest.mark.parametrize(
    "raw",
    [
        b"not json",
        b"[1, 2]",
        b'{"leader": "1", "leader_epoch": 0, "controller_epoch": 1, "isr": [1]}',
        b'{"leader": 1, "leader_epoch": 0, "controller_epoch": 1, "isr": ["1"]}',
        b'{"leader": true, "leader_epoch": 0, "controller_epoch": 1, "isr": [1]}',
        b'{"leader_epoch": 0, "controller_epoch": 1, "isr": [1]}',
    ],
)
def test_bad_leader_isr_is_refused(raw: bytes) -> None:
    with pytest.raises(ZkDataError):
        LeaderIsrState.decode(raw)


def test_bad_assignment_key() -> None:
    with pytest.raises(ZkDataError):
        TopicAssignment.decode(b'{"partitions": {"x": [1]}}')
