"""The broker's settings: one frozen dataclass, loaded from a TOML file plus overrides.

A config file uses the field names below at its top level, and a `[topic_defaults]` table of
Kafka topic config names (`retention.ms`, `segment.bytes`, `flush.messages`, ...) that every
topic starts from (a topic's own overrides live in ZooKeeper, `/config/topics/<topic>`):

    broker_id = 1
    port = 9092
    log_dir = "/var/lib/odradek/1"
    zookeeper = "127.0.0.1:2181"

    [topic_defaults]
    "retention.ms" = 604800000

`load_config(path, **overrides)` merges file and overrides (the CLI's flags; None means "not
given"), checks every name and type, and raises `UsageError` with one clear line on a mistake.
Every queue and buffer the server keeps has its limit here.
"""

from __future__ import annotations

import dataclasses
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from broker.log.config import LogConfig
from coordinator.group.consumer_group import ConsumerConfig
from coordinator.group.server_assignors import ASSIGNORS
from protocol.errors import OdradekError, UsageError

MiB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class BrokerConfig:
    broker_id: int
    log_dir: Path
    port: int = 9092
    host: str = "127.0.0.1"
    zookeeper: str = "127.0.0.1:2181"
    zookeeper_session_timeout_ms: int = 6000  # local clusters: a few seconds
    zookeeper_connect_timeout_ms: int = 30_000
    socket_request_max_bytes: int = 100 * MiB
    max_connections: int = 4096
    max_inflight_requests_per_connection: int = 100
    max_inflight_bytes_per_connection: int = 64 * MiB
    connections_max_idle_ms: int = 600_000
    max_delayed_fetches: int = 10_000  # long-polling fetches parked at once, broker-wide
    fetch_max_bytes: int = 55 * MiB  # caps a fetch request's max_bytes (Kafka's fetch.max.bytes)
    # fetch sessions kept at once (KIP-227; Kafka's max.incremental.fetch.session.cache.slots)
    max_incremental_fetch_session_cache_slots: int = 1000
    log_retention_check_interval_ms: int = 300_000  # Kafka's log.retention.check.interval.ms
    # The log cleaner (broker/log/cleaner/), Kafka's log.cleaner.* settings: compacted topics
    # are cleaned by `log_cleaner_threads` threads, each with an offset map of at most
    # dedupe_buffer_size / threads bytes, reading and writing at most io_max_bytes_per_second
    # (0: unthrottled), looking for work every backoff_ms when none was found.
    log_cleaner_enable: bool = True
    log_cleaner_threads: int = 1
    log_cleaner_dedupe_buffer_size: int = 128 * MiB
    log_cleaner_io_max_bytes_per_second: int = 0
    log_cleaner_backoff_ms: int = 15_000
    fetch_use_sendfile: bool = True  # False: always pread + write (for benchmarks)
    num_partitions: int = 1
    default_replication_factor: int = 1
    replica_lag_time_max_ms: int = 10_000  # a follower not caught up this long leaves the ISR
    replica_fetch_max_bytes: int = 1 * MiB  # per partition in a follower's fetch
    replica_fetch_response_max_bytes: int = 10 * MiB  # per follower fetch response
    replica_fetch_wait_max_ms: int = 500  # a follower's fetch long-polls this long at most
    replica_fetch_min_bytes: int = 1
    replica_fetch_backoff_ms: int = 1000  # after a fetch error, before retrying
    # Kafka's replica.high.watermark.checkpoint.interval.ms: how often every partition's high
    # watermark is written to <log_dir>/replication-offset-checkpoint (and at shutdown)
    replica_high_watermark_checkpoint_interval_ms: int = 5000
    offsets_topic_num_partitions: int = 10  # __consumer_offsets (consumer groups)
    offsets_topic_replication_factor: int = 3  # capped at the live brokers when created
    # KIP-211: an empty group's committed offsets expire this long after the later of its
    # last commit and when it became empty (tombstones: compaction then removes them)
    offsets_retention_minutes: int = 10080
    offsets_topic_segment_bytes: int = 100 * MiB  # Kafka's offsets.topic.segment.bytes
    offsets_retention_check_interval_ms: int = 600_000
    # KIP-848 consumer groups (group.protocol=consumer): Kafka's group.consumer.* settings: a
    # member not heard from for the session timeout is fenced; members heartbeat every
    # heartbeat interval; the server assignors offered (the first is the default)
    group_consumer_session_timeout_ms: int = 45_000
    group_consumer_heartbeat_interval_ms: int = 5_000
    group_consumer_max_size: int = 2**31 - 1
    group_consumer_assignors: str = "uniform,range"
    # Transactions (KIP-98): Kafka's transaction.state.log.* for __transaction_state, the
    # longest transaction.timeout.ms a producer may ask for, how long an idle transactional
    # id is kept, how often timed-out transactions are aborted, and KIP-939's two-phase commit
    transaction_state_log_num_partitions: int = 50
    transaction_state_log_replication_factor: int = 3  # capped at the live brokers
    transaction_state_log_segment_bytes: int = 100 * MiB
    transaction_max_timeout_ms: int = 900_000
    transactional_id_expiration_ms: int = 604_800_000
    transaction_abort_timed_out_transaction_cleanup_interval_ms: int = 10_000
    transaction_two_phase_commit_enable: bool = True
    controlled_shutdown_enable: bool = True  # on SIGTERM, ask the controller to move leaders
    controlled_shutdown_max_retries: int = 3
    controlled_shutdown_retry_backoff_ms: int = 200
    auto_leader_rebalance_enable: bool = True  # the controller moves leaders back to replica 0
    leader_imbalance_check_interval_seconds: int = 300
    leader_imbalance_per_broker_percentage: int = 10
    unclean_leader_election_enable: bool = False  # default of the topic config of that name
    # A broker (or the controller) whose every port refuses connections is dead at once, not
    # when its ZooKeeper session expires (coordinator/controller/fast_death.py); False: only
    # the session
    controller_fast_death_detection: bool = True
    # The Kafka-protocol listener, as Kafka's `listeners` / `advertised.listeners`:
    # "PLAINTEXT://host:port" ("" : no Kafka listener; port 0 picks a free one). Advertised
    # defaults to the listener (with the port actually bound).
    listeners: str = ""
    advertised_listeners: str = ""
    auto_create_topics_enable: bool = True  # Kafka's auto.create.topics.enable (Kafka door)
    # Kafka's ACLs (broker/security/authorizer.py): authorizer.class.name turns them on (Kafka's
    # kafka.security.authorizer.AclAuthorizer or org.apache.kafka.metadata.authorizer.
    # StandardAuthorizer; "": no authorizer, everything allowed); super.users
    # ("User:admin;User:broker") may do everything; allow.everyone.if.no.acl.found allows a
    # resource no ACL names. The authorizer log (Kafka's kafka-authorizer.log) goes to
    # authorizer_log_file ("": the broker's own log) at authorizer_log_level (INFO: denials;
    # DEBUG: allows too).
    authorizer_class_name: str = ""
    super_users: str = ""
    allow_everyone_if_no_acl_found: bool = False
    authorizer_log_file: str = ""
    authorizer_log_level: str = "INFO"
    # Prometheus metrics on http://host:metrics_port/metrics (broker/metrics.py); 0: off
    metrics_port: int = 0
    topic_defaults: dict[str, str] = field(default_factory=dict)
    # the settings given in the config file or as flags (load_config fills it; never set from a
    # file): DescribeConfigs calls them STATIC_BROKER_CONFIG, the others DEFAULT_CONFIG
    explicit: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        _check_positive(self, _POSITIVE_FIELDS)
        if not 0 <= self.port <= 65535:
            raise UsageError(f"port {self.port} is not in 0..65535")
        if not 0 <= self.metrics_port <= 65535:
            raise UsageError(f"metrics_port {self.metrics_port} is not in 0..65535 (0: off)")
        if self.broker_id < 0:
            raise UsageError(f"broker_id {self.broker_id} must be >= 0")
        if not 0 <= self.leader_imbalance_per_broker_percentage <= 100:
            raise UsageError("leader_imbalance_per_broker_percentage must be in 0..100")
        self.default_log_config()  # raises UsageError on a bad topic default
        self.kafka_listener()  # raises UsageError on a bad listener
        if self.advertised_listeners:
            parse_listener(self.advertised_listeners, "advertised_listeners")
        _check_authorizer(self)

    def kafka_listener(self) -> tuple[str, int] | None:
        """(host, port) the Kafka door binds, or None when there is no Kafka listener."""
        if not self.listeners:
            return None
        return parse_listener(self.listeners, "listeners")

    def kafka_advertised(self, bound_port: int) -> tuple[str, int]:
        """(host, port) Kafka clients are told to connect to."""
        if self.advertised_listeners:
            return parse_listener(self.advertised_listeners, "advertised_listeners")
        listener = self.kafka_listener()
        assert listener is not None
        host = self.host if listener[0] in ("", "0.0.0.0", "::") else listener[0]
        return host, bound_port

    def default_log_config(self) -> LogConfig:
        """The LogConfig every topic starts from (its ZooKeeper overrides go on top)."""
        try:
            return LogConfig.from_properties(self.topic_defaults)
        except OdradekError as exc:
            raise UsageError(f"[topic_defaults]: {exc.message}") from None


def _check_authorizer(config: BrokerConfig) -> None:
    from broker.security.authorizer import AUTHORIZER_CLASS_NAMES, parse_super_users

    name = config.authorizer_class_name
    if name and name not in AUTHORIZER_CLASS_NAMES:
        known = ", ".join(sorted(AUTHORIZER_CLASS_NAMES))
        raise UsageError(f"authorizer_class_name {name!r} is not one of {known} (or empty: none)")
    try:
        parse_super_users(config.super_users)
    except OdradekError as exc:
        raise UsageError(f'super_users: {exc.message} ("User:admin;User:broker")') from None
    if config.authorizer_log_level not in ("INFO", "DEBUG"):
        level = config.authorizer_log_level
        raise UsageError(f"authorizer_log_level {level!r}: INFO (denials) or DEBUG (allows too)")


KAFKA_LISTENER_NAME = "PLAINTEXT"


def parse_listener(value: str, name: str) -> tuple[str, int]:
    """ "PLAINTEXT://host:port" -> (host, port). One listener: odradek has no TLS or SASL."""
    scheme, sep, rest = value.strip().partition("://")
    host, colon, port = rest.rpartition(":")
    if not sep or scheme != KAFKA_LISTENER_NAME or not colon or not port.isdigit():
        raise UsageError(
            f"{name} must be one {KAFKA_LISTENER_NAME}://host:port listener, got {value!r}"
        )
    if not 0 <= int(port) <= 65535:
        raise UsageError(f"{name}: port {port} is not in 0..65535")
    return host.strip("[]"), int(port)


_POSITIVE_FIELDS = (
    "zookeeper_session_timeout_ms",
    "zookeeper_connect_timeout_ms",
    "socket_request_max_bytes",
    "max_connections",
    "max_inflight_requests_per_connection",
    "max_inflight_bytes_per_connection",
    "connections_max_idle_ms",
    "max_delayed_fetches",
    "fetch_max_bytes",
    "max_incremental_fetch_session_cache_slots",
    "log_retention_check_interval_ms",
    "log_cleaner_threads",
    "log_cleaner_dedupe_buffer_size",
    "log_cleaner_backoff_ms",
    "num_partitions",
    "default_replication_factor",
    "replica_lag_time_max_ms",
    "replica_fetch_max_bytes",
    "replica_fetch_response_max_bytes",
    "replica_fetch_wait_max_ms",
    "replica_fetch_min_bytes",
    "replica_fetch_backoff_ms",
    "replica_high_watermark_checkpoint_interval_ms",
    "controlled_shutdown_max_retries",
    "controlled_shutdown_retry_backoff_ms",
    "leader_imbalance_check_interval_seconds",
    "offsets_topic_num_partitions",
    "offsets_topic_replication_factor",
    "offsets_retention_minutes",
    "offsets_topic_segment_bytes",
    "offsets_retention_check_interval_ms",
    "group_consumer_session_timeout_ms",
    "group_consumer_heartbeat_interval_ms",
    "group_consumer_max_size",
    "transaction_state_log_num_partitions",
    "transaction_state_log_replication_factor",
    "transaction_state_log_segment_bytes",
    "transaction_max_timeout_ms",
    "transactional_id_expiration_ms",
    "transaction_abort_timed_out_transaction_cleanup_interval_ms",
)


def _check_positive(config: BrokerConfig, names: tuple[str, ...]) -> None:
    for name in names:
        value = getattr(config, name)
        if value <= 0:
            raise UsageError(f"{name} must be positive, got {value}")


_FIELDS = {f.name: f for f in dataclasses.fields(BrokerConfig) if f.name != "explicit"}
_TYPES: dict[str, type] = {
    "broker_id": int,
    "log_dir": Path,
    "port": int,
    "host": str,
    "zookeeper": str,
    "log_cleaner_enable": bool,
    "fetch_use_sendfile": bool,
    "controlled_shutdown_enable": bool,
    "auto_leader_rebalance_enable": bool,
    "unclean_leader_election_enable": bool,
    "auto_create_topics_enable": bool,
    "controller_fast_death_detection": bool,
    "transaction_two_phase_commit_enable": bool,
    "listeners": str,
    "authorizer_class_name": str,
    "super_users": str,
    "allow_everyone_if_no_acl_found": bool,
    "authorizer_log_file": str,
    "authorizer_log_level": str,
    "advertised_listeners": str,
    "topic_defaults": dict,
}


def _coerce(name: str, value: Any, where: str) -> Any:
    want = _TYPES.get(name, int)
    if want is Path:
        if not isinstance(value, str | Path):
            raise UsageError(f"{where}: {name} must be a path string, got {value!r}")
        return Path(value)
    if want is dict:
        if not isinstance(value, Mapping):
            raise UsageError(f"{where}: {name} must be a table of topic configs")
        return {str(k): _config_string(v) for k, v in value.items()}
    if want is int and (type(value) is not int):
        raise UsageError(f"{where}: {name} must be an integer, got {value!r}")
    if want is not int and type(value) is not want:
        raise UsageError(f"{where}: {name} must be a {want.__name__}, got {value!r}")
    return value


def _config_string(value: Any) -> str:
    """TOML gives ints and bools; topic configs are Kafka-style strings."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def load_config(path: Path | None = None, **overrides: Any) -> BrokerConfig:
    """Read `path` (TOML) if given, apply the non-None `overrides`, validate, build."""
    values: dict[str, Any] = {}
    if path is not None:
        values.update(_read_toml(path))
    for name, value in overrides.items():
        if value is None:
            continue
        if name not in _FIELDS:
            raise UsageError(f"unknown broker setting {name!r}")
        if name == "topic_defaults":
            merged = dict(values.get("topic_defaults", {}))
            merged.update(_coerce(name, value, "override"))
            values[name] = merged
        else:
            values[name] = _coerce(name, value, "override")
    for required in ("broker_id", "log_dir"):
        if required not in values:
            raise UsageError(f"the broker needs {required} (in the config file or as a flag)")
    return BrokerConfig(**values, explicit=frozenset(values))


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with open(path, "rb") as f:
            raw = tomllib.load(f)
    except OSError as exc:
        raise UsageError(f"cannot read config file {path}: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"config file {path} is not valid TOML: {exc}") from None
    values: dict[str, Any] = {}
    for name, value in raw.items():
        if name not in _FIELDS:
            raise UsageError(f"config file {path}: unknown setting {name!r}")
        values[name] = _coerce(name, value, f"config file {path}")
    return values


def consumer_group_config(config: BrokerConfig) -> ConsumerConfig:
    """The KIP-848 group coordinator's settings (group.consumer.*)."""
    assignors = tuple(a.strip() for a in config.group_consumer_assignors.split(",") if a.strip())
    unknown = [a for a in assignors if a not in ASSIGNORS]
    if unknown or not assignors:
        raise UsageError(f"group_consumer_assignors: unknown assignor(s) {unknown}; "
                         f"known: {', '.join(ASSIGNORS)}")  # fmt: skip
    return ConsumerConfig(config.group_consumer_session_timeout_ms,
                          config.group_consumer_heartbeat_interval_ms,
                          config.group_consumer_max_size, assignors)  # fmt: skip
