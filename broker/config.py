"""The broker's settings: one frozen dataclass, loaded from a TOML file plus overrides.

The dataclass is the one table of settings: a field's annotation is its type (what a file or
flag must give), `positive(...)` marks one that must be above 0, and the comment beside it says
what it does; `load_config` and `__post_init__` read the table, never a list of their own.

A config file uses the field names below at its top level, and a `[topic_defaults]` table of
Kafka topic config names (`retention.ms`, `segment.bytes`, `flush.messages`, ...) that every
topic starts from (a topic's own overrides live in ZooKeeper, `/config/topics/<topic>`):

    broker_id = 1
    port = 9092
    log_dir = "/var/lib/odradek/1"
    zookeeper = "127.0.0.1:2181"

    [topic_defaults]
    "retention.ms" = 604800000

Kafka's dotted names are accepted for the same fields (`"ssl.client.auth" = "required"`), and
Kafka's per-listener prefix for a listener's own ssl.* settings and SASL mechanisms
(`listener.name.mtls.ssl.client.auth = "required"`,
`listener.name.external.plain.sasl.jaas.config = '...'`, quoted or not: `listener_settings`,
read by broker/config_listeners.py).

`load_config(path, **overrides)` merges file and overrides (the CLI's flags; None means "not
given"), checks every name and type, and raises `UsageError` with one clear line on a mistake.
Every queue and buffer the server keeps has its limit here.
"""

from __future__ import annotations

import dataclasses
import tomllib
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from broker.config_listeners import (
    JAAS_SUFFIX,
    LISTENER_PREFIX,
    flatten_listener_table,
    listener_settings,
)
from broker.listeners import Listener, parse_listeners, parse_protocol_map
from broker.log.config import LogConfig
from broker.log.dir_placement import parse_log_dirs
from broker.loggers import parse_logger_levels
from broker.security.sasl import parse_mechanisms, plain_users
from broker.security.tls import TlsSettings
from coordinator.group.group_configs import broker_bounds
from coordinator.group.migration import check_policy
from coordinator.group.share_configs import broker_bounds as share_bounds
from protocol.errors import OdradekError, UsageError
from transport.security import uses_sasl, uses_tls

MiB = 1024 * 1024


def positive(default: int) -> Any:
    """A setting that must be above 0 (BrokerConfig.__post_init__ checks every such field)."""
    return field(default=default, metadata={"positive": True})


def not_negative(default: int) -> Any:
    """A setting that may be 0 but not below (checked as `positive` is)."""
    return field(default=default, metadata={"not_negative": True})


@dataclass(frozen=True, slots=True)
class BrokerConfig:
    broker_id: int
    log_dir: Path  # Kafka's log.dir: the one log directory when log_dirs is not given
    # Kafka's log.dirs (JBOD, KIP-112): several log directories, a list of paths or one
    # comma-separated string; takes precedence over log_dir (which is then its first)
    log_dirs: tuple[Path, ...] = ()
    port: int = 9092
    host: str = "127.0.0.1"
    zookeeper: str = "127.0.0.1:2181"
    zookeeper_session_timeout_ms: int = positive(6000)  # local clusters: a few seconds
    zookeeper_connect_timeout_ms: int = positive(30_000)
    socket_request_max_bytes: int = positive(100 * MiB)
    max_connections: int = positive(4096)
    max_inflight_requests_per_connection: int = positive(100)
    max_inflight_bytes_per_connection: int = positive(64 * MiB)
    connections_max_idle_ms: int = positive(600_000)
    # long-polling fetches parked at once, broker-wide
    max_delayed_fetches: int = positive(10_000)
    # caps a fetch request's max_bytes (Kafka's fetch.max.bytes)
    fetch_max_bytes: int = positive(55 * MiB)
    # fetch sessions kept at once (KIP-227; Kafka's max.incremental.fetch.session.cache.slots)
    max_incremental_fetch_session_cache_slots: int = positive(1000)
    # Kafka's log.retention.check.interval.ms
    log_retention_check_interval_ms: int = positive(300_000)
    # The log cleaner (broker/log/cleaner/), Kafka's log.cleaner.* settings: compacted topics
    # are cleaned by `log_cleaner_threads` threads, each with an offset map of at most
    # dedupe_buffer_size / threads bytes, reading and writing at most io_max_bytes_per_second
    # (0: unthrottled), looking for work every backoff_ms when none was found.
    log_cleaner_enable: bool = True
    log_cleaner_threads: int = positive(1)
    log_cleaner_dedupe_buffer_size: int = positive(128 * MiB)
    log_cleaner_io_max_bytes_per_second: int = 0
    log_cleaner_backoff_ms: int = positive(15_000)
    fetch_use_sendfile: bool = True  # False: always pread + write (for benchmarks)
    num_partitions: int = positive(1)
    default_replication_factor: int = positive(1)
    # a follower not caught up this long leaves the ISR
    replica_lag_time_max_ms: int = positive(10_000)
    replica_fetch_max_bytes: int = positive(1 * MiB)  # per partition in a follower's fetch
    replica_fetch_response_max_bytes: int = positive(10 * MiB)  # per follower fetch response
    # a follower's fetch long-polls this long at most
    replica_fetch_wait_max_ms: int = positive(500)
    replica_fetch_min_bytes: int = positive(1)
    replica_fetch_backoff_ms: int = positive(1000)  # after a fetch error, before retrying
    # Kafka's replica.high.watermark.checkpoint.interval.ms: how often every partition's high
    # watermark is written to <log_dir>/replication-offset-checkpoint (and at shutdown)
    replica_high_watermark_checkpoint_interval_ms: int = positive(5000)
    # Kafka's replica.alter.log.dirs.io.max.bytes.per.second: what moving replicas between
    # log directories (AlterReplicaLogDirs) reads and writes at most (0: unthrottled)
    replica_alter_log_dirs_io_max_bytes_per_second: int = not_negative(0)
    offsets_topic_num_partitions: int = positive(10)  # __consumer_offsets (consumer groups)
    offsets_topic_replication_factor: int = positive(3)  # capped at the live brokers when created
    # KIP-211: an empty group's committed offsets expire this long after the later of its
    # last commit and when it became empty (tombstones: compaction then removes them)
    offsets_retention_minutes: int = positive(10080)
    offsets_topic_segment_bytes: int = positive(100 * MiB)  # Kafka's offsets.topic.segment.bytes
    offsets_retention_check_interval_ms: int = positive(600_000)
    # Kafka's group.initial.rebalance.delay.ms: an empty group's first rebalance waits this
    # long (more, up to the rebalance timeout, while members keep joining), so consumers
    # started together share one generation; 0: no wait (`odradek cluster up`'s clusters)
    group_initial_rebalance_delay_ms: int = not_negative(3000)
    # KIP-848 consumer groups (group.protocol=consumer): Kafka's group.consumer.* settings: a
    # member not heard from for the session timeout is fenced; members heartbeat every
    # heartbeat interval (both within their min/max, as group configs); the server assignors
    # offered (the first is the default)
    group_consumer_session_timeout_ms: int = positive(45_000)
    group_consumer_heartbeat_interval_ms: int = positive(5_000)
    group_consumer_min_session_timeout_ms: int = positive(45_000)
    group_consumer_max_session_timeout_ms: int = positive(60_000)
    group_consumer_min_heartbeat_interval_ms: int = positive(5_000)
    group_consumer_max_heartbeat_interval_ms: int = positive(15_000)
    group_consumer_max_size: int = positive(2**31 - 1)
    group_consumer_assignors: str = "uniform,range"
    # Kafka's group.consumer.migration.policy: online conversion of a non-empty group between
    # the classic and the consumer protocol: bidirectional, upgrade, downgrade or disabled
    group_consumer_migration_policy: str = "bidirectional"
    # share groups (KIP-932): Kafka's group.share.* settings (a group's share.* configs over them)
    group_share_session_timeout_ms: int = positive(45_000)
    group_share_heartbeat_interval_ms: int = positive(5_000)
    group_share_max_size: int = positive(200)
    group_share_record_lock_duration_ms: int = positive(30_000)
    group_share_delivery_count_limit: int = positive(5)
    group_share_partition_max_record_locks: int = positive(2_000)
    # the bounds of a share group's share.* configs (and of the settings above they override)
    group_share_min_session_timeout_ms: int = positive(45_000)
    group_share_max_session_timeout_ms: int = positive(60_000)
    group_share_min_heartbeat_interval_ms: int = positive(5_000)
    group_share_max_heartbeat_interval_ms: int = positive(15_000)
    group_share_min_record_lock_duration_ms: int = positive(15_000)
    group_share_max_record_lock_duration_ms: int = positive(60_000)
    group_share_min_delivery_count_limit: int = positive(2)
    group_share_max_delivery_count_limit: int = positive(10)
    # Transactions (KIP-98): Kafka's transaction.state.log.* for __transaction_state, the
    # longest transaction.timeout.ms a producer may ask for, how long an idle transactional
    # id is kept, how often timed-out transactions are aborted, and KIP-939's two-phase commit
    transaction_state_log_num_partitions: int = positive(50)
    transaction_state_log_replication_factor: int = positive(3)  # capped at the live brokers
    transaction_state_log_segment_bytes: int = positive(100 * MiB)
    transaction_max_timeout_ms: int = positive(900_000)
    transactional_id_expiration_ms: int = positive(604_800_000)
    transaction_abort_timed_out_transaction_cleanup_interval_ms: int = positive(10_000)
    transaction_two_phase_commit_enable: bool = True
    # the share coordinator (KIP-932): Kafka's share.coordinator.* for __share_group_state
    # (min ISR capped at the replication factor the topic gets), and a ShareSnapshot after
    # this many ShareUpdates of a share partition (0: a snapshot every write)
    share_coordinator_state_topic_num_partitions: int = positive(50)
    share_coordinator_state_topic_replication_factor: int = positive(3)
    share_coordinator_state_topic_min_isr: int = positive(2)
    share_coordinator_state_topic_segment_bytes: int = positive(100 * MiB)
    share_coordinator_snapshot_update_records_per_snapshot: int = not_negative(500)
    controlled_shutdown_enable: bool = True  # on SIGTERM, ask the controller to move leaders
    controlled_shutdown_max_retries: int = positive(3)
    controlled_shutdown_retry_backoff_ms: int = positive(200)
    auto_leader_rebalance_enable: bool = True  # the controller moves leaders back to replica 0
    leader_imbalance_check_interval_seconds: int = positive(300)
    leader_imbalance_per_broker_percentage: int = 10
    unclean_leader_election_enable: bool = False  # default of the topic config of that name
    # A broker (or the controller) whose every port refuses connections is dead at once, not
    # when its ZooKeeper session expires (coordinator/controller/fast_death.py); False: only
    # the session
    controller_fast_death_detection: bool = True
    # Listeners (Kafka's `listeners` / `advertised.listeners`): comma-separated NAME://host:port
    # for the Kafka door ("": no Kafka listener; port 0 picks a free one; host "" or 0.0.0.0
    # binds every interface and advertises `host`). An advertised listener of the same NAME
    # is what clients coming in on NAME are told (default: the listener, with its bound port).
    listeners: str = ""
    advertised_listeners: str = ""
    # The native (msgpack) door's listeners, same syntax ("": PLAINTEXT://{host}:{port}, so a
    # config with only host and port keeps working), and what each advertises.
    native_listeners: str = ""
    native_advertised_listeners: str = ""
    # Kafka's listener.security.protocol.map, shared by both doors: NAME:PROTOCOL,... with
    # PROTOCOL one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL
    listener_security_protocol_map: str = (
        "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"
    )
    # The listener brokers talk to each other on (replica fetchers, the controller's requests,
    # transaction markers, coordinator peers). Broker-to-broker traffic speaks the NATIVE
    # protocol, so this names a native listener; a broker dials its peers' endpoint of that
    # name ("": the first native listener).
    inter_broker_listener_name: str = ""
    # TLS (Kafka's ssl.* settings) for SSL and SASL_SSL listeners and the broker's own
    # connections to them. Keystore: PEM (one file holding key and certificate chain, or
    # both inline) or PKCS12; JKS must be converted. The key's password is ssl_key_password
    # (PEM) or ssl_keystore_password (PKCS12).
    ssl_keystore_type: str = "PEM"
    ssl_keystore_location: str = ""
    ssl_keystore_password: str = field(default="", repr=False)
    ssl_key_password: str = field(default="", repr=False)
    ssl_keystore_certificate_chain: str = ""  # PEM text of the chain, instead of a file
    ssl_keystore_key: str = field(default="", repr=False)  # PEM text of the key, not a file
    # what client (and peer broker) certificates are checked against: PEM or PKCS12
    ssl_truststore_type: str = "PEM"
    ssl_truststore_location: str = ""
    ssl_truststore_password: str = field(default="", repr=False)
    ssl_truststore_certificates: str = ""  # PEM text of the CA certificates, instead of a file
    # Kafka's password.encoder.secret: encrypts the passwords among the dynamic broker configs
    # in ZooKeeper (broker/password_encoder.py); "": none can be set there
    password_encoder_secret: str = field(default="", repr=False)
    # none | requested | required: whether TLS listeners ask clients for a certificate; with
    # one, the session's principal is User:<subject mapped by ssl_principal_mapping_rules>
    ssl_client_auth: str = "none"
    ssl_principal_mapping_rules: str = "DEFAULT"  # Kafka's RULE:pattern/replacement/[LU],...
    ssl_enabled_protocols: str = "TLSv1.2,TLSv1.3"
    ssl_cipher_suites: str = ""  # OpenSSL cipher names, comma-separated ("": OpenSSL's default)
    # the broker's own TLS connections to peers: "https" checks the peer's certificate names
    # its host, "" does not
    ssl_endpoint_identification_algorithm: str = "https"
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
    # Kafka's log4j logger levels: which of the broker's log lines are written, as
    # "root=WARN,odradek.broker.sasl=DEBUG" (broker/loggers.py; "": root at INFO)
    logger_levels: str = ""
    # SASL on SASL_PLAINTEXT/SASL_SSL listeners (broker/security/sasl.py), Kafka's settings:
    # sasl.enabled.mechanisms, of PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 (Kafka's default,
    # GSSAPI, is not served); sasl.jaas.config, whose PlainLoginModule user_<name>="<password>"
    # options are the PLAIN users (its username/password, or a ScramLoginModule's, are the
    # broker's own for inter-broker SASL; never logged, never described); the mechanism
    # brokers use with each other; connections.max.reauth.ms (KIP-368: a session expires this
    # long after authenticating unless it re-authenticates; 0: never); and
    # connection.failed.authentication.delay.ms (a failed authentication is answered and its
    # connection closed this long after, so a peer cannot hammer)
    sasl_enabled_mechanisms: str = "SCRAM-SHA-256,SCRAM-SHA-512"
    sasl_jaas_config: str = field(default="", repr=False)
    sasl_mechanism_inter_broker_protocol: str = "SCRAM-SHA-512"
    connections_max_reauth_ms: int = 0
    connection_failed_authentication_delay_ms: int = 100
    # Kafka's sasl.server.max.receive.size: the largest frame a SASL listener's connection may
    # send before it has authenticated (SaslHandshake/SaslAuthenticate are small)
    sasl_server_max_receive_size: int = 524_288
    # client quotas (broker/quota/): a client's rates are measured over quota_window_num
    # samples of quota_window_size_seconds each (Kafka's quota.window.num and
    # quota.window.size.seconds); a request quota throttles for at most one sample
    quota_window_num: int = 11
    quota_window_size_seconds: int = positive(1)
    # Prometheus metrics on http://host:metrics_port/metrics (broker/metrics.py); 0: off
    metrics_port: int = 0
    # debug mode: log every event-loop callback or task step that holds the loop longer than
    # this, with its name, its wall and its CPU time, and log the loop's CPU by step name at
    # shutdown (broker/slow_steps.py; it slows the broker down); 0: off
    loop_debug_slow_ms: int = not_negative(0)
    # Confluent's Schema Registry API on http://host:schema_registry_port (broker/registry/,
    # docs/schema-registry.md); 0: off
    schema_registry_port: int = 0
    # the registry's port speaks HTTPS with the broker's ssl_keystore_* (its listeners' own)
    schema_registry_ssl: bool = False
    # "http_basic": every registry request logs in as a SCRAM user of the cluster (Redpanda's
    # schema_registry_api authentication_method); "none": everyone is User:ANONYMOUS
    schema_registry_authentication: str = "none"
    topic_defaults: dict[str, str] = field(default_factory=dict)
    # Kafka's per-listener settings, listener.name.<listener>.<setting>: a TLS listener's own
    # ssl.* settings (and ssl.principal.mapping.rules), over the broker-wide ones, so one
    # broker can have an mTLS listener (ssl.client.auth=required) beside a SASL_SSL one
    # without client certificates. Listener (upper case) -> field -> value; kept out of the
    # repr, as its passwords may be there.
    listener_settings: dict[str, dict[str, str]] = field(default_factory=dict, repr=False)
    # the settings given in the config file or as flags (load_config fills it; never set from a
    # file): DescribeConfigs calls them STATIC_BROKER_CONFIG, the others DEFAULT_CONFIG
    explicit: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            if f.metadata.get("positive") and getattr(self, f.name) <= 0:
                raise UsageError(f"{f.name} must be positive, got {getattr(self, f.name)}")
            if f.metadata.get("not_negative") and getattr(self, f.name) < 0:
                raise UsageError(f"{f.name} must be >= 0, got {getattr(self, f.name)}")
        if not 0 <= self.port <= 65535:
            raise UsageError(f"port {self.port} is not in 0..65535")
        if not 0 <= self.metrics_port <= 65535:
            raise UsageError(f"metrics_port {self.metrics_port} is not in 0..65535 (0: off)")
        if not 0 <= self.schema_registry_port <= 65535:
            raise UsageError(f"schema_registry_port {self.schema_registry_port} is not in "
                             "0..65535 (0: off)")  # fmt: skip
        if self.schema_registry_authentication not in ("none", "http_basic"):
            raise UsageError("schema_registry_authentication must be none or http_basic, got "
                             f"{self.schema_registry_authentication!r}")  # fmt: skip
        if self.broker_id < 0:
            raise UsageError(f"broker_id {self.broker_id} must be >= 0")
        if not 0 <= self.leader_imbalance_per_broker_percentage <= 100:
            raise UsageError("leader_imbalance_per_broker_percentage must be in 0..100")
        if self.quota_window_num < 2:
            raise UsageError(f"quota_window_num {self.quota_window_num} must be >= 2 (Kafka: 11)")
        self.default_log_config()  # raises UsageError on a bad topic default
        broker_bounds({n: getattr(self, n) for n in _FIELDS if n.startswith("group_consumer_")})
        share_bounds({n: getattr(self, n) for n in _FIELDS if n.startswith("group_share_")})
        check_policy(self.group_consumer_migration_policy)
        _check_listeners(self)  # UsageError on a bad listener, map or TLS setting
        _check_authorizer(self)
        _check_sasl(self)
        _check_sasl_limits(self)
        parse_logger_levels(self.logger_levels)

    def protocol_map(self) -> dict[str, str]:
        return parse_protocol_map(self.listener_security_protocol_map)

    def kafka_listeners(self) -> tuple[Listener, ...]:
        """The Kafka door's listeners (none when `listeners` is empty)."""
        return parse_listeners(self.listeners, "listeners", self.protocol_map())

    def native_listener_list(self) -> tuple[Listener, ...]:
        """The native door's listeners (default: PLAINTEXT on host and port)."""
        value = self.native_listeners or f"PLAINTEXT://{self.host}:{self.port}"
        return parse_listeners(value, "native_listeners", self.protocol_map())

    def inter_broker_listener(self) -> Listener:
        """The native listener peers dial (inter_broker_listener_name, or the first)."""
        listeners = self.native_listener_list()
        if not self.inter_broker_listener_name:
            return listeners[0]
        for listener in listeners:
            if listener.name == self.inter_broker_listener_name:
                return listener
        raise UsageError(f"inter_broker_listener_name {self.inter_broker_listener_name!r} "
                         f"is not a native listener ({', '.join(n.name for n in listeners)}): "
                         "brokers talk to each other on the native protocol")  # fmt: skip

    def advertised(self, listener: Listener, bound_port: int, native: bool) -> tuple[str, int]:
        """(host, port) clients coming in on `listener` are told to connect to."""
        value = self.native_advertised_listeners if native else self.advertised_listeners
        setting = "native_advertised_listeners" if native else "advertised_listeners"
        for adv in parse_listeners(value, setting, self.protocol_map()):
            if adv.name == listener.name:
                return adv.host, adv.port
        host = self.host if listener.host in ("", "0.0.0.0", "::") else listener.host
        return host, bound_port

    @property
    def all_log_dirs(self) -> tuple[Path, ...]:
        """The log directories: log_dirs when given, else log_dir alone."""
        return self.log_dirs or (self.log_dir,)

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


def _check_listeners(config: BrokerConfig) -> None:
    protocols = config.protocol_map()
    kafka = config.kafka_listeners()
    native = config.native_listener_list()
    for door, listeners, advertised in (
        ("listeners", kafka, config.advertised_listeners),
        ("native_listeners", native, config.native_advertised_listeners),
    ):
        setting = (
            "native_advertised_listeners" if door.startswith("native") else "advertised_listeners"
        )
        names = {listener.name for listener in listeners}
        for adv in parse_listeners(advertised, setting, protocols):
            if adv.name not in names:
                raise UsageError(f"{setting}: {adv.name} is not one of {door} ({', '.join(names)})")
    config.inter_broker_listener()
    tls_settings(config).check()
    everyone = {n.name for n in kafka + native}
    for name in config.listener_settings:
        if name not in everyone:
            raise UsageError(f"{LISTENER_PREFIX}{name.lower()}.*: there is no listener "
                             f"{name} (listeners: {', '.join(sorted(everyone))})")  # fmt: skip
    for listener in kafka + native:
        tls = tls_settings(config, listener.name)
        tls.check()
        if uses_tls(listener.security_protocol) and not tls.has_keystore:
            raise UsageError(
                f"listener {listener.name} uses TLS: set ssl_keystore_location "
                "(or ssl_keystore_certificate_chain and ssl_keystore_key)"
            )


def listener_setting(config: BrokerConfig, listener: str | None, name: str) -> Any:
    """Setting `name` as `listener` sees it: its listener.name.<listener>.* value, else the
    broker-wide one (None: the broker-wide one)."""
    own = config.listener_settings.get(listener.upper(), {}) if listener else {}
    return own[name] if name in own else getattr(config, name)


def tls_settings(config: BrokerConfig, listener: str | None = None) -> TlsSettings:
    """The ssl.* settings of `listener` (its own over the broker's; None: the broker's) for
    broker/security/tls.py: each TlsSettings field is the setting ssl_<field>, except that the
    broker's own connections check peer names one way for every listener."""
    return TlsSettings(**{
        f.name: listener_setting(config, listener, f"ssl_{f.name}")
        for f in dataclasses.fields(TlsSettings) if f.name != "endpoint_identification_algorithm"
    }, endpoint_identification_algorithm=config.ssl_endpoint_identification_algorithm)  # fmt: skip


def _check_sasl(config: BrokerConfig) -> None:
    """UsageError on a SASL setting the broker could not honour."""
    _check_mechanisms(config, None)
    protocols = {n.name: n.security_protocol
                 for n in (*config.kafka_listeners(), *config.native_listener_list())}  # fmt: skip
    for listener in sasl_listeners(config):
        if not uses_sasl(protocols[listener]):
            raise UsageError(f"{LISTENER_PREFIX}{listener.lower()}.sasl.*: listener "
                             f"{listener} is {protocols[listener]}, which does not use "
                             "SASL")  # fmt: skip
        _check_mechanisms(config, listener)
    mechanism = config.sasl_mechanism_inter_broker_protocol
    parse_mechanisms(mechanism, "sasl_mechanism_inter_broker_protocol")
    inter_broker = config.inter_broker_listener()
    enabled = listener_setting(config, inter_broker.name, "sasl_enabled_mechanisms")
    if uses_sasl(inter_broker.security_protocol) and mechanism.upper() not in parse_mechanisms(
        enabled
    ):
        raise UsageError(f"sasl_mechanism_inter_broker_protocol {mechanism} must be one of the "
                         f"inter-broker listener {inter_broker.name}'s sasl_enabled_mechanisms "
                         f"({enabled}): it is {inter_broker.security_protocol}")  # fmt: skip


SASL_PER_LISTENER = frozenset({"sasl_enabled_mechanisms", "sasl_jaas_config"})


def sasl_listeners(config: BrokerConfig) -> list[str]:
    """The listeners with sasl settings of their own (listener.name.<l>.sasl...)."""
    return [name for name, own in config.listener_settings.items()
            if own.keys() & SASL_PER_LISTENER]  # fmt: skip


def _check_mechanisms(config: BrokerConfig, listener: str | None) -> None:
    """`listener`'s (None: the broker-wide) mechanisms and PLAIN users agree."""
    prefix = "" if listener is None else f"{LISTENER_PREFIX}{listener.lower()}."
    named, jaas = (("sasl_enabled_mechanisms", "sasl_jaas_config") if listener is None else
                   (f"{prefix}sasl.enabled.mechanisms", f"{prefix}plain{JAAS_SUFFIX}"))  # fmt: skip
    mechanisms = listener_setting(config, listener, "sasl_enabled_mechanisms")
    enabled = parse_mechanisms(mechanisms, named)
    users = plain_users(listener_setting(config, listener, "sasl_jaas_config"))
    if "PLAIN" in enabled and not users:
        raise UsageError(f"{named} has PLAIN but {jaas} names no PLAIN user "
                         '(PlainLoginModule required user_<name>="<password>";)')  # fmt: skip
    own_jaas = listener is None or "sasl_jaas_config" in config.listener_settings[listener]
    if users and own_jaas and "PLAIN" not in enabled:  # an inherited JAAS may serve others
        raise UsageError(f"{jaas} names PLAIN users but {named} ({mechanisms}) does not have "
                         "PLAIN")  # fmt: skip


def _check_sasl_limits(config: BrokerConfig) -> None:
    for name in ("connections_max_reauth_ms", "connection_failed_authentication_delay_ms"):
        if getattr(config, name) < 0:
            raise UsageError(f"{name} must be >= 0, got {getattr(config, name)}")
    if config.sasl_server_max_receive_size <= 0:
        raise UsageError("sasl_server_max_receive_size must be positive, got "
                         f"{config.sasl_server_max_receive_size}")  # fmt: skip
    if config.connection_failed_authentication_delay_ms >= config.connections_max_idle_ms:
        raise UsageError("connection_failed_authentication_delay_ms must be below "
                         "connections_max_idle_ms")  # fmt: skip


_FIELDS = {f.name: f for f in dataclasses.fields(BrokerConfig) if f.name != "explicit"}
# each setting's type, from the dataclass's own annotations (the table above): Path, bool, str,
# dict (tables) or int
_TYPES: dict[str, type] = {
    name: typing.get_origin(hint) or hint
    for name, hint in typing.get_type_hints(BrokerConfig).items()
    if name in _FIELDS
}


# what may be set per listener: the TLS of its connections, and its SASL mechanisms with their
# JAAS (Kafka's listener.name.<l>.<mechanism>.sasl.jaas.config; one value for the listener)
PER_LISTENER = (
    frozenset(
        name
        for name in _FIELDS
        if name.startswith("ssl_") and name != "ssl_endpoint_identification_algorithm"
    )
    | SASL_PER_LISTENER
)


def _listener_settings(value: Any, where: str) -> dict[str, dict[str, str]]:
    return listener_settings(value, where, _coerce, PER_LISTENER)


def _coerce(name: str, value: Any, where: str) -> Any:
    want = _TYPES[name]
    if want is Path:
        if not isinstance(value, str | Path):
            raise UsageError(f"{where}: {name} must be a path string, got {value!r}")
        return Path(value)
    if name == "listener_settings":
        return _listener_settings(value, where)
    if name == "log_dirs":
        try:
            return parse_log_dirs(value)
        except UsageError as exc:
            raise UsageError(f"{where}: {exc.message}") from None
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
        if name.startswith(LISTENER_PREFIX):
            merged_settings = dict(values.get("listener_settings", {}))
            for listener, fields in _listener_settings({name: value}, "override").items():
                merged_settings[listener] = {**merged_settings.get(listener, {}), **fields}
            values["listener_settings"] = merged_settings
            continue
        name = _field_name(name)
        if name not in _FIELDS:
            raise UsageError(f"unknown broker setting {name!r}")
        if name == "topic_defaults":
            merged = dict(values.get("topic_defaults", {}))
            merged.update(_coerce(name, value, "override"))
            values[name] = merged
        else:
            values[name] = _coerce(name, value, "override")
    if values.get("log_dirs"):
        values["log_dir"] = values["log_dirs"][0]  # log.dirs takes precedence, as in Kafka
    for required in ("broker_id", "log_dir"):
        if required not in values:
            raise UsageError(f"the broker needs {required} (in the config file or as a flag)")
    return BrokerConfig(**values, explicit=frozenset(values))


def _field_name(name: str) -> str:
    """Kafka's dotted name ("listener.security.protocol.map") is the field of that name."""
    dotted = name.replace(".", "_")
    return dotted if "." in name and dotted in _FIELDS else name


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with open(path, "rb") as f:
            raw = tomllib.load(f)
    except OSError as exc:
        raise UsageError(f"cannot read config file {path}: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"config file {path} is not valid TOML: {exc}") from None
    values: dict[str, Any] = {}
    per_listener: dict[str, Any] = {}
    for name, value in flatten_listener_table(raw).items():
        if name.startswith(LISTENER_PREFIX):
            per_listener[name] = value
            continue
        name = _field_name(name)
        if name not in _FIELDS:
            raise UsageError(f"config file {path}: unknown setting {name!r}")
        values[name] = _coerce(name, value, f"config file {path}")
    if per_listener:
        values["listener_settings"] = _listener_settings(per_listener, f"config file {path}")
    return values
