"""Dynamic broker configs in ZooKeeper, as Kafka's ZooKeeper-era brokers keep them.

    /config/brokers/<id>          {"version":1,"config":{"log.cleaner.threads":"2"}}
    /config/brokers/<default>     the same shape: the cluster default every broker takes

`write_broker_config` replaces a node's whole set and announces it under /config/changes
with entity_path "brokers/<id>" or "brokers/<default>" (coordinator/cluster/config_changes.py).
Every broker follows them with `BrokerConfigFollower`, subscribed to the ConfigChangeListener's
"brokers" notifications: a notification naming this broker or the default, or a resync (a lost
session, a purged notification), calls `reload()`, which the broker's applier
(broker/dynamic_apply.py) gives: it re-reads both nodes and applies what changed. Which names
may be stored, and which value wins, are broker/dynamic_config.py's (pure) decisions.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import TypeVar

from coordinator.cluster import config_changes
from coordinator.cluster.zk import ZkClient, ZkConnectionLost, ZkError, ZkNoNode
from coordinator.cluster.zk_paths import (
    DEFAULT_BROKER,
    TopicConfig,
    ZkDataError,
    broker_config_path,
)
from protocol.errors import RequestTimedOutError, UnknownServerError

T = TypeVar("T")
log = logging.getLogger("odradek.coordinator.broker_configs")


async def read_broker_config(zk: ZkClient, entity: str) -> dict[str, str]:
    """The node's config ({} when absent or unreadable: a bad node is logged and ignored)."""
    try:
        data, _ = await zk.get(broker_config_path(entity))
    except ZkNoNode:
        return {}
    if not data:
        return {}
    try:
        return TopicConfig.decode(data).config
    except ZkDataError as exc:
        log.warning("ignoring %s: %s", broker_config_path(entity), exc)
        return {}


async def write_broker_config(zk: ZkClient, entity: str, config: Mapping[str, str]) -> None:
    """Replace the node's whole set and tell every broker."""
    path, data = broker_config_path(entity), TopicConfig(dict(config)).encode()
    try:
        await zk.set(path, data)
    except ZkNoNode:
        await zk.create(path, data, makepath=True)
    created = await config_changes.announce_change(zk, f"brokers/{entity}")
    log.info("broker config %s set to %s (%s)", entity, sorted(config), created)


class ZkBrokerConfigStore:
    """broker/context.py's BrokerConfigStore over ZooKeeper; ZooKeeper failures become Kafka's
    errors (REQUEST_TIMED_OUT when unreachable, UNKNOWN_SERVER_ERROR otherwise)."""

    def __init__(self, zk: ZkClient) -> None:
        self.zk = zk

    async def read_broker_config(self, entity: str) -> dict[str, str]:
        return await _mapped(read_broker_config(self.zk, entity))

    async def write_broker_config(self, entity: str, config: Mapping[str, str]) -> None:
        await _mapped(write_broker_config(self.zk, entity, config))


async def _mapped(call: Awaitable[T]) -> T:
    try:
        return await call
    except ZkConnectionLost as exc:
        raise RequestTimedOutError(f"ZooKeeper is not reachable: {exc}") from None
    except ZkError as exc:
        raise UnknownServerError(f"ZooKeeper: {exc}") from None


class BrokerConfigFollower:
    """Calls `reload()` whenever this broker's or the default's dynamic config may have
    changed (see the module docstring)."""

    def __init__(self, broker_id: int, reload: Callable[[], Awaitable[None]]) -> None:
        self.broker_id = broker_id
        self.reload = reload

    def follow(self, listener: config_changes.ConfigChangeListener) -> None:
        listener.subscribe("brokers", self.changed, self.reload)

    async def changed(self, entity: str) -> None:
        if entity in (DEFAULT_BROKER, str(self.broker_id)):
            await self.reload()
