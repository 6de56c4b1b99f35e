"""The broker's settings turned into each service's own config: pure functions of BrokerConfig.

`sasl_configs` (the broker-wide SaslConfig and those of listeners with SASL settings of their
own), `inter_broker_security` (how the broker's own connections secure themselves on the
inter-broker listener), `controller_config`, `txn_config`, `share_config` and
`replication_settings`. broker/daemon.py calls them while it wires the services; tests call
them without a broker.
"""

from __future__ import annotations

import ssl

from broker.config import BrokerConfig, listener_setting, sasl_listeners
from broker.replica_fetcher import FetcherSettings
from broker.replica_manager import ReplicationSettings
from broker.security.sasl import SaslConfig, sasl_config
from coordinator.controller.elector import ControllerConfig
from coordinator.share.service import ShareCoordinatorConfig
from coordinator.transaction.service import TxnConfig
from protocol.errors import UsageError
from transport.sasl import login_from_jaas
from transport.security import SecurityConfig, uses_sasl


def sasl_configs(config: BrokerConfig) -> tuple[SaslConfig, dict[str, SaslConfig]]:
    """The broker-wide SaslConfig, and those of listeners with sasl settings of their own
    (listener.name.<l>.sasl.enabled.mechanisms, .<mechanism>.sasl.jaas.config)."""

    def of(listener: str | None) -> SaslConfig:
        return sasl_config(listener_setting(config, listener, "sasl_enabled_mechanisms"),
                           listener_setting(config, listener, "sasl_jaas_config"),
                           config.connections_max_reauth_ms,
                           config.connection_failed_authentication_delay_ms)  # fmt: skip

    return of(None), {name: of(name) for name in sasl_listeners(config)}


def inter_broker_security(
    config: BrokerConfig, security_protocol: str, context: ssl.SSLContext | None,
    listener: str | None = None,
) -> SecurityConfig:  # fmt: skip
    """How the broker's own connections (replica fetchers, controller, peers, markers)
    secure themselves on the inter-broker `listener`: its TLS `context`, and on SASL_* Kafka's
    login, the username/password of the listener's sasl_jaas_config's login module for
    sasl_mechanism_inter_broker_protocol (ScramLoginModule, or PlainLoginModule for PLAIN)."""
    if not uses_sasl(security_protocol):
        return SecurityConfig(security_protocol, ssl_context=context)
    mechanism = config.sasl_mechanism_inter_broker_protocol
    login = login_from_jaas(listener_setting(config, listener, "sasl_jaas_config"), mechanism)
    if login is None:
        module = "PlainLoginModule" if mechanism == "PLAIN" else "ScramLoginModule"
        raise UsageError(f"the inter-broker listener is {security_protocol}: sasl_jaas_config "
                         f"needs a {module} entry with username and password "
                         f"(sasl_mechanism_inter_broker_protocol={mechanism})")  # fmt: skip
    return SecurityConfig(security_protocol, ssl_context=context, sasl_mechanism=mechanism,
                          sasl_plain_username=login[0],
                          sasl_plain_password=login[1])  # fmt: skip


def controller_config(config: BrokerConfig) -> ControllerConfig:
    """Issue 4: replicated partitions (ISR = live replicas), the leader rebalance settings."""
    return ControllerConfig(
        replicated=True,
        default_unclean=config.unclean_leader_election_enable,
        auto_leader_rebalance_enable=config.auto_leader_rebalance_enable,
        leader_imbalance_check_interval_s=config.leader_imbalance_check_interval_seconds,
        leader_imbalance_per_broker_percentage=config.leader_imbalance_per_broker_percentage,
        fast_death_detection=config.controller_fast_death_detection,
    )


def txn_config(config: BrokerConfig) -> TxnConfig:
    return TxnConfig(
        config.transaction_state_log_num_partitions,
        config.transaction_state_log_replication_factor,
        config.transaction_state_log_segment_bytes,
        config.transaction_max_timeout_ms,
        config.transactional_id_expiration_ms,
        config.transaction_abort_timed_out_transaction_cleanup_interval_ms,
        config.transaction_two_phase_commit_enable,
    )


def share_config(config: BrokerConfig) -> ShareCoordinatorConfig:
    return ShareCoordinatorConfig(
        config.share_coordinator_state_topic_num_partitions,
        config.share_coordinator_state_topic_replication_factor,
        config.share_coordinator_state_topic_min_isr,
        config.share_coordinator_state_topic_segment_bytes,
        config.share_coordinator_snapshot_update_records_per_snapshot,
    )


def replication_settings(config: BrokerConfig) -> ReplicationSettings:
    fetcher = FetcherSettings(
        fetch_max_bytes=config.replica_fetch_max_bytes,
        response_max_bytes=config.replica_fetch_response_max_bytes,
        wait_max_ms=config.replica_fetch_wait_max_ms,
        min_bytes=config.replica_fetch_min_bytes,
        backoff_ms=config.replica_fetch_backoff_ms,
    )
    return ReplicationSettings(
        config.replica_lag_time_max_ms,
        fetcher,
        hw_checkpoint_interval_ms=config.replica_high_watermark_checkpoint_interval_ms,
        alter_log_dirs_io_max_bytes_per_second=(
            config.replica_alter_log_dirs_io_max_bytes_per_second or None
        ),
    )
