"""Client quotas in ZooKeeper, as Kafka's ZooKeeper-era brokers keep them (KIP-55, KIP-257).

Each quota entity has a config node (protocol/quota.py names them):

    /config/users/<user>                    {"version":1,"config":{"producer_byte_rate":"1024"}}
    /config/users/<user>/clients/<client>   the same shape
    /config/clients/<client>                the same shape

The user node is shared with SCRAM credentials (coordinator/cluster/ keeps those under their
mechanism names, e.g. "SCRAM-SHA-512"): `alter_quotas` is a read-modify-write with the node's
version (retried on a concurrent write) that changes quota keys only. After a write it announces
the change under /config/changes with entity_path "users/alice", "users/alice/clients/app" or
"clients/app" (coordinator/cluster/config_changes.py writes and purges those notifications).

Every broker follows them with `QuotaFollower`, subscribed to the ConfigChangeListener's
"users" and "clients" notifications (`follow`): `changed(entity_path)` re-reads the one entity
a notification names and hands its quota values to `apply(entity, values)`; `reload()` reads
every entity (at start, and after a lost session or a purged notification) and hands the whole
set to `replace(configs)`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping

from coordinator.cluster import config_changes
from coordinator.cluster.zk import (
    ZkBadVersion,
    ZkClient,
    ZkConnectionLost,
    ZkError,
    ZkNodeExists,
    ZkNoNode,
)
from coordinator.cluster.zk_paths import TopicConfig, ZkDataError
from protocol import quota as q
from protocol.errors import RequestTimedOutError, UnknownServerError
from protocol.quota import QuotaEntity

log = logging.getLogger("odradek.coordinator.quotas")

CONFIG_USERS = "/config/users"
CONFIG_CLIENTS = "/config/clients"
WRITE_ATTEMPTS = 10  # read-modify-write retries against concurrent writers of the same node

Values = dict[str, float]


async def read_entity_config(zk: ZkClient, entity: QuotaEntity) -> tuple[dict[str, str], int]:
    """The entity's whole config node ({} when absent) and its version (-1: absent)."""
    try:
        data, version = await zk.get(entity.config_path)
    except ZkNoNode:
        return {}, -1
    if not data:
        return {}, version
    return TopicConfig.decode(data).config, version


async def alter_quotas(
    zk: ZkClient, entity: QuotaEntity, ops: Iterable[tuple[str, float | None]],
    validate_only: bool = False,
) -> dict[str, str]:  # fmt: skip
    """Apply AlterClientQuotas' ops to `entity` ((key, value) sets, (key, None) removes) and
    announce it; the node's new config. InvalidRequestError for a bad key or value."""
    ops = list(ops)
    for _ in range(WRITE_ATTEMPTS):
        current, version = await read_entity_config(zk, entity)
        updated = q.apply_ops(current, ops)
        if validate_only:
            return updated
        data = TopicConfig(updated).encode()
        try:
            if version < 0:
                await zk.create(entity.config_path, data, makepath=True)
            else:
                await zk.set(entity.config_path, data, version)
        except (ZkBadVersion, ZkNodeExists, ZkNoNode):
            continue  # another writer (SCRAM credentials, another admin) came first
        await config_changes.announce_change(zk, entity.entity_path)
        log.info("quotas of %s set to %s", entity, q.quota_values(updated))
        return updated
    raise RequestTimedOutError(
        f"quotas of {entity} not written: {WRITE_ATTEMPTS} concurrent changes in a row"
    )


async def _children(zk: ZkClient, path: str) -> list[str]:
    try:
        return await zk.get_children(path)
    except ZkNoNode:
        return []


async def read_all_quotas(zk: ZkClient) -> dict[QuotaEntity, Values]:
    """Every entity with at least one quota key set, and its quota values."""
    paths: list[str] = []
    for user in await _children(zk, CONFIG_USERS):
        paths.append(f"users/{user}")
        for client in await _children(zk, f"{CONFIG_USERS}/{user}/clients"):
            paths.append(f"users/{user}/clients/{client}")
    paths.extend(f"clients/{c}" for c in await _children(zk, CONFIG_CLIENTS))
    out: dict[QuotaEntity, Values] = {}
    for path in paths:
        entity = QuotaEntity.from_entity_path(path)
        if entity is None:
            continue
        values = await _read_values(zk, entity)
        if values:
            out[entity] = values
    return out


async def _read_values(zk: ZkClient, entity: QuotaEntity) -> Values:
    try:
        config, _ = await read_entity_config(zk, entity)
    except ZkDataError as exc:
        log.warning("ignoring the config of %s: %s", entity, exc)
        return {}
    return q.quota_values(config)


async def describe_quotas(
    zk: ZkClient, components: Iterable[q.FilterComponent], strict: bool
) -> dict[QuotaEntity, Values]:
    """DescribeClientQuotas: the entities the filter selects (InvalidRequestError for a bad
    filter), with their quota values."""
    by_type = q.check_filter(components)
    found = await read_all_quotas(zk)
    return {e: v for e, v in found.items() if q.filter_matches(by_type, strict, e)}


class QuotaFollower:
    """Keeps a broker's quotas in step with ZooKeeper (see the module docstring)."""

    def __init__(
        self,
        zk: ZkClient,
        apply: Callable[[QuotaEntity, Mapping[str, float]], object],
        replace: Callable[[Mapping[QuotaEntity, Mapping[str, float]]], object],
    ) -> None:
        self.zk = zk
        self.apply = apply
        self.replace = replace

    def follow(self, listener: config_changes.ConfigChangeListener) -> None:
        """Subscribe to the listener's "users" and "clients" notifications (one resync)."""
        listener.subscribe("users", lambda rest: self.changed(f"users/{rest}"), self.reload)
        listener.subscribe("clients", lambda rest: self.changed(f"clients/{rest}"), _nothing)

    async def changed(self, entity_path: str) -> None:
        entity = QuotaEntity.from_entity_path(entity_path)
        if entity is None:
            return  # a topic's, a broker's: not ours
        self.apply(entity, await _read_values(self.zk, entity))

    async def reload(self) -> None:
        self.replace(await read_all_quotas(self.zk))


async def _nothing() -> None:
    return None


class ZkQuotaStore:
    """broker/quota/store.py's QuotaStore over ZooKeeper; ZooKeeper failures become Kafka's
    errors (REQUEST_TIMED_OUT when unreachable, UNKNOWN_SERVER_ERROR otherwise)."""

    def __init__(self, zk: ZkClient) -> None:
        self.zk = zk

    async def alter(
        self, entity: QuotaEntity, ops: list[tuple[str, float | None]], validate_only: bool
    ) -> None:
        try:
            await alter_quotas(self.zk, entity, ops, validate_only)
        except ZkConnectionLost as exc:
            raise RequestTimedOutError(f"ZooKeeper is not reachable: {exc}") from None
        except (ZkError, ZkDataError) as exc:
            raise UnknownServerError(f"ZooKeeper: {exc}") from None

    async def describe(
        self, components: Iterable[q.FilterComponent], strict: bool
    ) -> dict[QuotaEntity, Values]:
        try:
            return await describe_quotas(self.zk, components, strict)
        except ZkConnectionLost as exc:
            raise RequestTimedOutError(f"ZooKeeper is not reachable: {exc}") from None
        except ZkError as exc:
            raise UnknownServerError(f"ZooKeeper: {exc}") from None
