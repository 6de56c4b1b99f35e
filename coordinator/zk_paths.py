"""ZooKeeper paths and the JSON kept in them, in Kafka's layout (docs/design.md).

Each znode kind has a path builder and a frozen dataclass with `encode() -> bytes` and
`decode(bytes)`. Decoding is strict about what it needs (a missing field or a wrong type raises
`ZkDataError`) and ignores fields it does not know, so a newer writer's extra fields do not
break an older reader.

    /brokers/ids/<id>                             BrokerRegistration (ephemeral)
    /controller                                   ControllerInfo (ephemeral)
    /controller_epoch                             the epoch, a decimal string
    /brokers/topics/<topic>                       TopicAssignment
    /brokers/topics/<topic>/partitions/<p>/state  LeaderIsrState
    /config/topics/<topic>                        TopicConfig
    /admin/delete_topics/<topic>                  empty
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

BROKERS = "/brokers"
BROKER_IDS = "/brokers/ids"
BROKER_TOPICS = "/brokers/topics"
CONTROLLER = "/controller"
CONTROLLER_EPOCH = "/controller_epoch"
CONFIG_TOPICS = "/config/topics"
ADMIN_DELETE_TOPICS = "/admin/delete_topics"

# Persistent paths every cluster has; whoever starts first creates them.
PERSISTENT_PATHS = (BROKER_IDS, BROKER_TOPICS, CONFIG_TOPICS, ADMIN_DELETE_TOPICS)

NO_LEADER = -1


class ZkDataError(ValueError):
    """A znode holds data we cannot read (not JSON, or a field missing or of the wrong type)."""


def broker_path(broker_id: int) -> str:
    return f"{BROKER_IDS}/{broker_id}"


def topic_path(topic: str) -> str:
    return f"{BROKER_TOPICS}/{topic}"


def partitions_path(topic: str) -> str:
    return f"{BROKER_TOPICS}/{topic}/partitions"


def partition_path(topic: str, partition: int) -> str:
    return f"{BROKER_TOPICS}/{topic}/partitions/{partition}"


def partition_state_path(topic: str, partition: int) -> str:
    return f"{BROKER_TOPICS}/{topic}/partitions/{partition}/state"


def topic_config_path(topic: str) -> str:
    return f"{CONFIG_TOPICS}/{topic}"


def delete_topic_path(topic: str) -> str:
    return f"{ADMIN_DELETE_TOPICS}/{topic}"


def _load(data: bytes) -> dict[str, Any]:
    try:
        obj = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise ZkDataError(f"not JSON: {data[:80]!r}") from exc
    if not isinstance(obj, dict):
        raise ZkDataError(f"not a JSON object: {data[:80]!r}")
    return obj


def _dump(obj: dict[str, Any]) -> bytes:
    return json.dumps(obj, separators=(",", ":"), sort_keys=True).encode("utf-8")


def _field(obj: dict[str, Any], name: str, kind: type | tuple[type, ...]) -> Any:
    value = obj.get(name)
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
        raise ZkDataError(f"field {name!r} missing or not {kind}: {obj!r}")
    return value


def _int_list(obj: dict[str, Any], name: str) -> list[int]:
    value = _field(obj, name, list)
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise ZkDataError(f"field {name!r} is not a list of integers: {obj!r}")
    return list(value)


@dataclass(frozen=True, slots=True)
class BrokerRegistration:
    host: str
    port: int
    timestamp_ms: int

    def encode(self) -> bytes:
        return _dump(
            {"host": self.host, "port": self.port, "timestamp": str(self.timestamp_ms),
             "version": 1}
        )  # fmt: skip

    @classmethod
    def decode(cls, data: bytes) -> BrokerRegistration:
        obj = _load(data)
        return cls(_field(obj, "host", str), _field(obj, "port", int), int(obj.get("timestamp", 0)))


@dataclass(frozen=True, slots=True)
class ControllerInfo:
    broker_id: int
    timestamp_ms: int

    def encode(self) -> bytes:
        return _dump({"brokerid": self.broker_id, "timestamp": str(self.timestamp_ms),
                      "version": 1})  # fmt: skip

    @classmethod
    def decode(cls, data: bytes) -> ControllerInfo:
        obj = _load(data)
        return cls(_field(obj, "brokerid", int), int(obj.get("timestamp", 0)))


def encode_controller_epoch(epoch: int) -> bytes:
    return str(epoch).encode("ascii")


def decode_controller_epoch(data: bytes) -> int:
    try:
        return int(data.decode("ascii"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise ZkDataError(f"controller epoch is not a number: {data[:40]!r}") from exc


@dataclass(frozen=True, slots=True)
class TopicAssignment:
    """Replica lists by partition; replica 0 of each list is the preferred leader."""

    partitions: dict[int, list[int]]

    def encode(self) -> bytes:
        parts = {str(p): list(r) for p, r in sorted(self.partitions.items())}
        return _dump({"version": 1, "partitions": parts})

    @classmethod
    def decode(cls, data: bytes) -> TopicAssignment:
        obj = _load(data)
        parts = _field(obj, "partitions", dict)
        out: dict[int, list[int]] = {}
        for key, replicas in parts.items():
            try:
                partition = int(key)
            except ValueError as exc:
                raise ZkDataError(f"partition key {key!r} is not a number") from exc
            out[partition] = _int_list({"replicas": replicas}, "replicas")
        return cls(out)


@dataclass(frozen=True, slots=True)
class LeaderIsrState:
    """A partition's leadership, as the controller last wrote it. leader -1: offline."""

    leader: int
    leader_epoch: int
    controller_epoch: int
    isr: list[int]

    def encode(self) -> bytes:
        return _dump(
            {"leader": self.leader, "leader_epoch": self.leader_epoch,
             "controller_epoch": self.controller_epoch, "isr": list(self.isr), "version": 1}
        )  # fmt: skip

    @classmethod
    def decode(cls, data: bytes) -> LeaderIsrState:
        obj = _load(data)
        return cls(
            _field(obj, "leader", int),
            _field(obj, "leader_epoch", int),
            _field(obj, "controller_epoch", int),
            _int_list(obj, "isr"),
        )


@dataclass(frozen=True, slots=True)
class TopicConfig:
    config: dict[str, str]

    def encode(self) -> bytes:
        return _dump({"version": 1, "config": dict(sorted(self.config.items()))})

    @classmethod
    def decode(cls, data: bytes) -> TopicConfig:
        obj = _load(data)
        config = _field(obj, "config", dict)
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in config.items()):
            raise ZkDataError(f"topic config values must be strings: {config!r}")
        return cls(dict(config))
