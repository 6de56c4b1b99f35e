"""The group coordinator's settings, from the broker's (broker/config.py): `group_config`
builds coordinator/group's `GroupConfig` from the offsets.*, group.* and group.consumer.*
settings, refusing with one line (UsageError) what a single field cannot check alone: the
KIP-848 server assignors named must exist. `group_configs` is the KIP-848 group configs'
keeper (coordinator/group/group_configs.py) over those settings and their bounds.
"""

from __future__ import annotations

from broker.config import BrokerConfig
from coordinator.group.consumer_group import ConsumerConfig
from coordinator.group.group import GroupLimits
from coordinator.group.group_configs import GroupConfigs, GroupConfigStore, broker_bounds
from coordinator.group.migration import check_policy
from coordinator.group.server_assignors import ASSIGNORS
from coordinator.group.service import GroupConfig
from coordinator.group.share_configs import broker_bounds as share_bounds
from coordinator.group.share_group import ShareConfig
from protocol.errors import UsageError


def group_config(config: BrokerConfig) -> GroupConfig:
    return GroupConfig(
        config.offsets_topic_num_partitions,
        config.offsets_topic_replication_factor,
        offsets_retention_ms=config.offsets_retention_minutes * 60_000,
        offsets_retention_check_interval_ms=config.offsets_retention_check_interval_ms,
        offsets_segment_bytes=config.offsets_topic_segment_bytes,
        limits=GroupLimits(initial_rebalance_delay_ms=config.group_initial_rebalance_delay_ms),
        consumer=consumer_group_config(config),
        share=share_group_config(config),
    )


def share_group_config(config: BrokerConfig) -> ShareConfig:
    """The share groups' settings (KIP-932, group.share.*)."""
    return ShareConfig(
        config.group_share_session_timeout_ms, config.group_share_heartbeat_interval_ms,
        config.group_share_max_size, config.group_share_record_lock_duration_ms,
        config.group_share_delivery_count_limit, config.group_share_partition_max_record_locks,
    )  # fmt: skip


def consumer_group_config(config: BrokerConfig) -> ConsumerConfig:
    """The KIP-848 group coordinator's settings (group.consumer.*)."""
    assignors = tuple(a.strip() for a in config.group_consumer_assignors.split(",") if a.strip())
    unknown = [a for a in assignors if a not in ASSIGNORS]
    if unknown or not assignors:
        raise UsageError(f"group_consumer_assignors: unknown assignor(s) {unknown}; "
                         f"known: {', '.join(ASSIGNORS)}")  # fmt: skip
    return ConsumerConfig(config.group_consumer_session_timeout_ms,
                          config.group_consumer_heartbeat_interval_ms,
                          config.group_consumer_max_size, assignors,
                          check_policy(config.group_consumer_migration_policy))  # fmt: skip


def group_configs(config: BrokerConfig, store: GroupConfigStore) -> GroupConfigs:
    settings = {f: getattr(config, f) for f in config.__slots__ if f.startswith("group_")}
    return GroupConfigs(consumer_group_config(config), broker_bounds(settings), store,
                        share_group_config(config), share_bounds(settings))  # fmt: skip
