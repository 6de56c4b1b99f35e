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
    /config/changes/config_change_<seq>           ConfigChange
    (coordinator/cluster/config_changes.py)
    /admin/delete_topics/<topic>                  empty
    /latest_producer_id_block                     ProducerIdBlock
    (coordinator/cluster/producer_ids.py)
    /cluster/id                                   ClusterId (coordinator/cluster/cluster_id.py)
    /kafka-acl/<Type>/<name>, /kafka-acl-extended/prefixed/<Type>/<name>, /kafka-acl-changes,
    /kafka-acl-extended-changes                   Kafka's ACLs (coordinator/cluster/acls.py)
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any

from protocol.api.metadata import KAFKA_DOOR, NATIVE_DOOR, Endpoint
from protocol.topic_ids import InvalidTopicIdError, decode_topic_id, encode_topic_id

BROKERS = "/brokers"
BROKER_IDS = "/brokers/ids"
BROKER_TOPICS = "/brokers/topics"
CONTROLLER = "/controller"
CONTROLLER_EPOCH = "/controller_epoch"
CONFIG_TOPICS = "/config/topics"
CONFIG_CHANGES = "/config/changes"
CONFIG_BROKERS = "/config/brokers"  # dynamic broker configs: <broker id>, or DEFAULT_BROKER
DEFAULT_BROKER = "<default>"  # Kafka's name for the cluster default broker config node
CONFIG_CHANGE_PREFIX = "config_change_"  # + the ten digits ZooKeeper's sequential create adds
ADMIN_DELETE_TOPICS = "/admin/delete_topics"
LATEST_PRODUCER_ID_BLOCK = "/latest_producer_id_block"
CLUSTER_ID = "/cluster/id"

# Persistent paths every cluster has; whoever starts first creates them.
PERSISTENT_PATHS = (BROKER_IDS, BROKER_TOPICS, CONFIG_TOPICS, CONFIG_CHANGES, ADMIN_DELETE_TOPICS)

NO_LEADER = -1
NATIVE_LISTENER = "ODRADEK"  # odradek's msgpack protocol (version-4 registrations)
NATIVE_ENDPOINTS = "odradek_endpoints"  # version 5: the native door's listeners
KAFKA_LISTENER = "PLAINTEXT"  # Kafka's wire protocol, named as Kafka names its default


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


def broker_config_path(entity: str) -> str:
    """entity: a broker id ("1") or DEFAULT_BROKER."""
    return f"{CONFIG_BROKERS}/{entity}"


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
    """A broker's endpoints, as Kafka writes them.

    With `listeners` (every advertised listener of both doors), version 5: `endpoints` lists
    the Kafka door's listeners as NAME://host:port, `listener_security_protocol_map` maps
    every name (both doors) to its protocol, `host`/`port` are the endpoint whose protocol is
    PLAINTEXT (null/-1 when none), as Kafka writes them; `odradek_endpoints` lists the native
    door's listeners, the inter-broker one first (it gives `host`/`port` below).
    Without (older writers, tests), version 4: the native listener is the ODRADEK endpoint
    and the Kafka listener PLAINTEXT (a version-1 node has only `host`/`port`)."""

    host: str  # the native (inter-broker) listener
    port: int
    timestamp_ms: int
    kafka_host: str | None = None  # the first Kafka listener, advertised; None: none
    kafka_port: int = -1
    listeners: tuple[Endpoint, ...] = ()

    def encode(self) -> bytes:
        if self.listeners:
            return self._encode_v5()
        endpoints = [f"{NATIVE_LISTENER}://{self.host}:{self.port}"]
        protocols = {NATIVE_LISTENER: "PLAINTEXT"}
        host, port = self.host, self.port
        if self.kafka_host is not None:
            endpoints.insert(0, f"{KAFKA_LISTENER}://{self.kafka_host}:{self.kafka_port}")
            protocols[KAFKA_LISTENER] = "PLAINTEXT"
            host, port = self.kafka_host, self.kafka_port
        return _dump(
            {"host": host, "port": port, "timestamp": str(self.timestamp_ms), "version": 4,
             "endpoints": endpoints, "listener_security_protocol_map": protocols, "jmx_port": -1}
        )  # fmt: skip

    def _encode_v5(self) -> bytes:
        kafka = [e for e in self.listeners if e.door == KAFKA_DOOR]
        native = [e for e in self.listeners if e.door == NATIVE_DOOR]
        plain = next((e for e in kafka if e.security_protocol == "PLAINTEXT"), None)
        protocols = {e.name: e.security_protocol for e in native}
        protocols.update({e.name: e.security_protocol for e in kafka})
        return _dump(
            {"host": plain.host if plain else None, "port": plain.port if plain else -1,
             "timestamp": str(self.timestamp_ms), "version": 5,
             "endpoints": [f"{e.name}://{e.host}:{e.port}" for e in kafka],
             "listener_security_protocol_map": protocols, "jmx_port": -1,
             NATIVE_ENDPOINTS: [f"{e.name}://{e.host}:{e.port}" for e in native]}
        )  # fmt: skip

    @classmethod
    def decode(cls, data: bytes) -> BrokerRegistration:
        obj = _load(data)
        ts = int(obj.get("timestamp", 0))
        endpoints = obj.get("endpoints")
        if not isinstance(endpoints, list):
            return cls(_field(obj, "host", str), _field(obj, "port", int), ts)
        if NATIVE_ENDPOINTS in obj:
            return cls._decode_v5(obj, ts)
        found = {name: (host, port) for name, host, port in map(_endpoint, endpoints)}
        native = found.get(NATIVE_LISTENER)
        if native is None:
            raise ZkDataError(f"no {NATIVE_LISTENER} endpoint in {endpoints!r}")
        kafka = found.get(KAFKA_LISTENER)
        if kafka is None:
            return cls(native[0], native[1], ts)
        return cls(native[0], native[1], ts, kafka[0], kafka[1])

    @classmethod
    def _decode_v5(cls, obj: dict[str, Any], ts: int) -> BrokerRegistration:
        protocols = _field(obj, "listener_security_protocol_map", dict)
        listeners: list[Endpoint] = []
        for door, key in ((NATIVE_DOOR, NATIVE_ENDPOINTS), (KAFKA_DOOR, "endpoints")):
            for name, host, port in map(_endpoint, _field(obj, key, list)):
                protocol = protocols.get(name)
                if not isinstance(protocol, str):
                    raise ZkDataError(f"listener {name} has no security protocol in {protocols}")
                listeners.append(Endpoint(door, name, host, port, protocol))
        native = [e for e in listeners if e.door == NATIVE_DOOR]
        kafka = [e for e in listeners if e.door == KAFKA_DOOR]
        if not native:
            raise ZkDataError(f"no native endpoint in {obj.get(NATIVE_ENDPOINTS)!r}")
        k_host, k_port = (kafka[0].host, kafka[0].port) if kafka else (None, -1)
        return cls(native[0].host, native[0].port, ts, k_host, k_port, tuple(listeners))


def _endpoint(text: object) -> tuple[str, str, int]:
    """ "NAME://host:port" -> (NAME, host, port)."""
    name, sep, rest = str(text).partition("://")
    host, colon, port = rest.rpartition(":")
    if not sep or not colon or not port.isdigit():
        raise ZkDataError(f"endpoint {text!r} is not NAME://host:port")
    return name, host.strip("[]"), int(port)


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
    """Replica lists by partition; replica 0 of each list is the preferred leader.

    With a topic id (KIP-516) it is written as Kafka 2.8+ writes it, version 3 with
    `"topic_id"` (url-safe base64, protocol/topic_ids.py) and empty `adding_replicas` /
    `removing_replicas` (odradek keeps reassignments in /admin/reassign_partitions); without
    one (a topic from before ids, until the controller backfills it) as version 1."""

    partitions: dict[int, list[int]]
    topic_id: uuid.UUID | None = None

    def encode(self) -> bytes:
        parts = {str(p): list(r) for p, r in sorted(self.partitions.items())}
        if self.topic_id is None:
            return _dump({"version": 1, "partitions": parts})
        return _dump(
            {"version": 3, "topic_id": encode_topic_id(self.topic_id), "partitions": parts,
             "adding_replicas": {}, "removing_replicas": {}}
        )  # fmt: skip

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
        topic_id = None
        if obj.get("topic_id") is not None:
            try:
                topic_id = decode_topic_id(_field(obj, "topic_id", str))
            except InvalidTopicIdError as exc:
                raise ZkDataError(f"topic_id: {exc}") from exc
        return cls(out, topic_id)


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


@dataclass(frozen=True, slots=True)
class ConfigChange:
    """A config change notification, as Kafka writes it: {"version":2,"entity_path":
    "topics/<topic>"}. `entity_path` is "<entity type>/<name>"; Kafka also writes "brokers/..",
    "clients/..", "users/..", which `topic` answers None for."""

    entity_path: str

    @classmethod
    def for_topic(cls, topic: str) -> ConfigChange:
        return cls(f"topics/{topic}")

    @property
    def topic(self) -> str | None:
        kind, sep, name = self.entity_path.partition("/")
        return name if kind == "topics" and sep and name and "/" not in name else None

    def encode(self) -> bytes:
        return _dump({"version": 2, "entity_path": self.entity_path})

    @classmethod
    def decode(cls, data: bytes) -> ConfigChange:
        return cls(_field(_load(data), "entity_path", str))


@dataclass(frozen=True, slots=True)
class ProducerIdBlock:
    """The producer ids [start, end] (both inclusive) last claimed, and by which broker.

    Kafka's JSON, ids as decimal strings as Kafka writes them:
    {"version":1,"broker":1,"block_start":"0","block_end":"999"}."""

    broker_id: int
    start: int
    end: int

    def __post_init__(self) -> None:
        if not 0 <= self.start <= self.end:
            raise ZkDataError(f"producer id block [{self.start}, {self.end}] is not a range")

    def encode(self) -> bytes:
        return _dump({"version": 1, "broker": self.broker_id, "block_start": str(self.start),
                      "block_end": str(self.end)})  # fmt: skip

    @classmethod
    def decode(cls, data: bytes) -> ProducerIdBlock:
        obj = _load(data)
        start, end = _field(obj, "block_start", str), _field(obj, "block_end", str)
        try:
            return cls(_field(obj, "broker", int), int(start), int(end))
        except ValueError as exc:  # int() of a non-number; ZkDataError is a ValueError too
            raise ZkDataError(f"bad producer id block {obj!r}: {exc}") from None


@dataclass(frozen=True, slots=True)
class ClusterId:
    """The cluster's id, as Kafka writes it: {"version":"1","id":"<22 characters>"} (the
    version is a string in Kafka's JSON)."""

    id: str

    def encode(self) -> bytes:
        return _dump({"version": "1", "id": self.id})

    @classmethod
    def decode(cls, data: bytes) -> ClusterId:
        cluster_id = _field(_load(data), "id", str)
        if not cluster_id:
            raise ZkDataError("the cluster id is empty")
        return cls(cluster_id)
