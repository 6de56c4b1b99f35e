"""Applying the dynamic broker configs live, as Kafka's DynamicBrokerConfig reconfigures its parts.

`DynamicApplier.reload()` runs at start (before the listeners load their TLS) and whenever
coordinator/cluster/broker_configs.py's follower says /config/brokers/<id> or <default> changed:
it reads both (a password decrypted, broker/password_encoder.py), builds the settings in effect
(broker/dynamic_config.py `effective`: per-broker over the cluster default over the file) and,
against the settings in effect until then:

    ctx.config            replaced whole (handlers read it per request: max.connections, ...)
    topic defaults        `set_log_defaults(LogConfig)`: the broker's defaults for new logs and
                          every open log re-given its topic's overrides on top of them (Kafka's
                          DynamicLogConfig), so message.max.bytes or log.retention.ms act now
    log.cleaner.*         LogCleaner.reconfigure (threads added or retired, buffer, I/O rate,
                          backoff), as Kafka's LogCleaner.reconfigure
    unclean.leader.election.enable
                          `set_unclean_default(enabled)`: the controller this broker may run
                          reads it at its next election, and elects the offline partitions at
                          once when it is turned on (Kafka's DynamicLogConfig calling
                          enableDefaultUncleanLeaderElection)
    listener TLS          `reload_tls()`: each TLS listener's context built again from its files,
                          for new connections (those open keep theirs); done whenever this
                          broker's set names a listener's keystore or truststore, so writing the
                          same location again reloads a file renewed in place (Kafka's
                          reloadUpdatedFilesWithoutConfigChange)

A set that does not hold (written past AlterConfigs' checks) changes nothing and is logged.
`check_listener_tls` is AlterConfigs' check that a listener's new keystore and truststore load.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable

from broker.config import BrokerConfig, listener_setting, tls_settings
from broker.context import BrokerContext
from broker.dynamic_config import effective, tls_listeners
from broker.log.cleaner.manager import CleanerSettings, LogCleaner
from broker.log.config import LogConfig
from broker.password_encoder import unseal
from broker.security.tls import listener_tls
from coordinator.cluster.zk_paths import DEFAULT_BROKER
from protocol.errors import InvalidConfigError, OdradekError
from transport.security import uses_sasl, uses_tls

log = logging.getLogger("odradek.broker.dynamic_config")

ReadConfig = Callable[[str], Awaitable[dict[str, str]]]


def cleaner_settings(config: BrokerConfig) -> CleanerSettings:
    """The log cleaner's settings (Kafka's log.cleaner.*) in `config`."""
    return CleanerSettings(
        threads=config.log_cleaner_threads,
        dedupe_buffer_bytes=config.log_cleaner_dedupe_buffer_size,
        io_max_bytes_per_second=config.log_cleaner_io_max_bytes_per_second or None,
        backoff_ms=config.log_cleaner_backoff_ms,
    )


def check_listener_tls(config: BrokerConfig, listeners: Iterable[str]) -> None:
    """InvalidConfigError, with the reason, when a TLS listener named cannot load its keystore
    or truststore as `config` gives them."""
    protocols = {n.name: n.security_protocol
                 for n in (*config.kafka_listeners(), *config.native_listener_list())}  # fmt: skip
    for name in sorted(listeners):
        protocol = protocols.get(name)
        if protocol is None or not uses_tls(protocol):
            continue
        rules = listener_setting(config, name, "ssl_principal_mapping_rules")
        try:
            listener_tls(tls_settings(config, name), rules, uses_sasl(protocol))
        except OdradekError as exc:
            raise InvalidConfigError(f"listener {name}: {exc.message}") from None


class DynamicApplier:
    """Keeps `ctx.config` and the parts built from it in step with the dynamic configs."""

    def __init__(
        self,
        ctx: BrokerContext,
        read: ReadConfig,
        set_log_defaults: Callable[[LogConfig], Awaitable[None]],
        cleaner: LogCleaner | None,
        reload_tls: Callable[[], None],
        set_unclean_default: Callable[[bool], None] = lambda enabled: None,
    ) -> None:
        self.ctx = ctx
        self.read = read
        self.set_log_defaults = set_log_defaults
        self.cleaner = cleaner
        self.reload_tls = reload_tls
        self.set_unclean_default = set_unclean_default
        self.reloads = 0

    async def reload(self) -> None:
        me = str(self.ctx.static_config.broker_id)
        secret = self.ctx.static_config.password_encoder_secret
        cluster, mine = await self.read(DEFAULT_BROKER), await self.read(me)
        mine, unreadable = unseal(mine, secret)
        if unreadable:
            log.error("dynamic broker configs %s left out: not decodable with this broker's "
                      "password.encoder.secret (or none is set)", sorted(unreadable))  # fmt: skip
        try:
            new = effective(self.ctx.static_config, cluster, mine)
        except OdradekError as exc:
            log.warning("dynamic broker configs not applied: %s", exc.message)
            return
        old, self.ctx.config = self.ctx.config, new
        self.reloads += 1
        if new.default_log_config() != old.default_log_config():
            await self.set_log_defaults(new.default_log_config())
        if new.unclean_leader_election_enable != old.unclean_leader_election_enable:
            self.set_unclean_default(new.unclean_leader_election_enable)
        if self.cleaner is not None and cleaner_settings(new) != cleaner_settings(old):
            self.cleaner.reconfigure(cleaner_settings(new))
        if new.listener_settings != old.listener_settings or tls_listeners(mine):
            try:
                self.reload_tls()
            except OdradekError as exc:
                log.warning("listener TLS not reloaded, the old one stays: %s", exc.message)
        if cluster or mine:
            log.info("dynamic broker configs in effect: default %s, broker %s %s",
                     sorted(cluster), me, sorted(mine))  # fmt: skip
