"""Group configs (KIP-848) in ZooKeeper, in the shape Kafka gives every entity config:

    /config/groups/<group>    {"version":1,"config":{"consumer.session.timeout.ms":"50000"}}

The node name is the group id sanitized as Kafka's Sanitizer does (a group id may hold a "/").
A write replaces the group's whole override set (an empty set deletes the node) and announces
it under /config/changes with entity_path "groups/<sanitized group>" (coordinator/cluster/
config_changes.py writes and purges the notifications).

Every broker follows them with `GroupConfigFollower`, subscribed to the ConfigChangeListener's
"groups" notifications: `changed(name)` re-reads the one group a notification names and hands
its overrides to `apply(group, overrides)`; `reload()` reads every group (at start, and after a
lost session or a purged notification) and hands the whole set to `replace(configs)`.
`ZkGroupConfigStore` is what the DescribeConfigs / AlterConfigs operations write through.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Mapping

from coordinator.cluster import config_changes
from coordinator.cluster.zk import ZkClient, ZkConnectionLost, ZkError, ZkNoNode
from coordinator.cluster.zk_paths import TopicConfig, ZkDataError
from protocol.errors import RequestTimedOutError, UnknownServerError
from protocol.quota import desanitize, sanitize

log = logging.getLogger("odradek.coordinator.group_configs")

CONFIG_GROUPS = "/config/groups"
ENTITY_TYPE = "groups"


def group_config_path(group_id: str) -> str:
    return f"{CONFIG_GROUPS}/{sanitize(group_id)}"


async def read_group_config(zk: ZkClient, group_id: str) -> dict[str, str]:
    """The group's overrides ({} when it has none)."""
    try:
        data, _ = await zk.get(group_config_path(group_id))
    except ZkNoNode:
        return {}
    return TopicConfig.decode(data).config if data else {}


async def write_group_config(zk: ZkClient, group_id: str, config: Mapping[str, str]) -> None:
    """Replace the group's overrides (none: delete its node) and announce the change."""
    path = group_config_path(group_id)
    if config:
        data = TopicConfig(dict(config)).encode()
        try:
            await zk.set(path, data)
        except ZkNoNode:
            await zk.create(path, data, makepath=True)
    else:
        with contextlib.suppress(ZkNoNode):  # had none
            await zk.delete(path)
    created = await config_changes.announce_change(zk, f"{ENTITY_TYPE}/{sanitize(group_id)}")
    log.info("group %s config set to %s (%s)", group_id, dict(config), created)


async def read_all_group_configs(zk: ZkClient) -> dict[str, dict[str, str]]:
    try:
        names = await zk.get_children(CONFIG_GROUPS)
    except ZkNoNode:
        return {}
    out = {}
    for name in names:
        group_id = desanitize(name)
        try:
            out[group_id] = await read_group_config(zk, group_id)
        except ZkDataError as exc:
            log.warning("ignoring the config of group %s: %s", group_id, exc)
    return out


class GroupConfigFollower:
    """Keeps a broker's group configs in step with ZooKeeper (see the module docstring)."""

    def __init__(
        self,
        zk: ZkClient,
        apply: Callable[[str, Mapping[str, str]], object],
        replace: Callable[[Mapping[str, Mapping[str, str]]], object],
    ) -> None:
        self.zk = zk
        self.apply = apply
        self.replace = replace

    def follow(self, listener: config_changes.ConfigChangeListener) -> None:
        listener.subscribe(ENTITY_TYPE, self.changed, self.reload)

    async def changed(self, name: str) -> None:
        group_id = desanitize(name)
        try:
            self.apply(group_id, await read_group_config(self.zk, group_id))
        except ZkDataError as exc:
            log.warning("ignoring the config of group %s: %s", group_id, exc)

    async def reload(self) -> None:
        self.replace(await read_all_group_configs(self.zk))


class ZkGroupConfigStore:
    """Reads and writes group configs; ZooKeeper failures become Kafka's errors
    (REQUEST_TIMED_OUT when unreachable, UNKNOWN_SERVER_ERROR otherwise)."""

    def __init__(self, zk: ZkClient) -> None:
        self.zk = zk

    async def read(self, group_id: str) -> dict[str, str]:
        try:
            return await read_group_config(self.zk, group_id)
        except ZkConnectionLost as exc:
            raise RequestTimedOutError(f"ZooKeeper is not reachable: {exc}") from None
        except (ZkError, ZkDataError) as exc:
            raise UnknownServerError(f"ZooKeeper: {exc}") from None

    async def write(self, group_id: str, config: Mapping[str, str]) -> None:
        try:
            await write_group_config(self.zk, group_id, config)
        except ZkConnectionLost as exc:
            raise RequestTimedOutError(f"ZooKeeper is not reachable: {exc}") from None
        except (ZkError, ZkDataError) as exc:
            raise UnknownServerError(f"ZooKeeper: {exc}") from None
