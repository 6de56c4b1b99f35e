"""SCRAM credentials in ZooKeeper, as Kafka's ZooKeeper-mode brokers keep them, and each broker's
cache of them.

One znode per user, its name sanitized as Kafka's `Sanitizer` (URL-encoded; "*" -> "%2A"):

    /config/users/<user>   {"version":1,"config":{"SCRAM-SHA-512":"salt=<b64>,stored_key=<b64>,
                                                   server_key=<b64>,iterations=8192", ...}}

The same node holds the user's client quotas (producer_byte_rate, ...): a writer changes only its
own keys, reading the node and writing it back at the version it read (ZkBadVersion: read again).
After a write, a notification {"version":2,"entity_path":"users/<user>"} under /config/changes
(coordinator/cluster/config_changes.py `announce_change`) tells every broker, whose
`ConfigChangeListener` calls `CredentialCache.refresh(user)`; a LOST session or a purged
notification makes it `reload()` every user. Only salted, iterated keys are stored: a password
never reaches ZooKeeper.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping

from coordinator.cluster.config_changes import ConfigChangeListener, announce_change
from coordinator.cluster.zk import ZkBadVersion, ZkClient, ZkNodeExists, ZkNoNode
from coordinator.cluster.zk_paths import ZkDataError
from protocol.quota import desanitize, sanitize
from protocol.scram import MECHANISMS, ScramCredential

log = logging.getLogger("odradek.coordinator.scram_credentials")

CONFIG_USERS = "/config/users"
ENTITY_TYPE = "users"
WRITE_ATTEMPTS = 20  # read-modify-write retries when another writer changed the node meanwhile


def user_path(user: str) -> str:
    return f"{CONFIG_USERS}/{sanitize(user)}"


def decode_user_config(data: bytes) -> dict[str, str]:
    """A /config/users node's "config" map; ZkDataError for anything else."""
    try:
        obj = json.loads(data)
    except ValueError as exc:
        raise ZkDataError(f"user config is not JSON: {exc}") from None
    config = obj.get("config") if isinstance(obj, dict) else None
    if not isinstance(config, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in config.items()
    ):
        raise ZkDataError("user config has no string map 'config'")
    return dict(config)


def encode_user_config(config: Mapping[str, str]) -> bytes:
    return json.dumps(
        {"version": 1, "config": dict(sorted(config.items()))}, separators=(",", ":")
    ).encode()


def credentials_of(config: Mapping[str, str]) -> dict[str, ScramCredential]:
    """The SCRAM credentials in a user's config (mechanism -> credential); a malformed one is
    logged (without its value) and left out, so that it fails that user's logins only."""
    found: dict[str, ScramCredential] = {}
    for mechanism in MECHANISMS:
        text = config.get(mechanism)
        if text is None:
            continue
        try:
            found[mechanism] = ScramCredential.from_string(text)
        except ValueError:
            log.warning("ignoring a malformed %s credential in ZooKeeper", mechanism)
    return found


async def read_user_config(zk: ZkClient, user: str) -> dict[str, str]:
    """The user's whole config ({} when there is no node)."""
    try:
        data, _ = await zk.get(user_path(user))
    except ZkNoNode:
        return {}
    return decode_user_config(data)


async def alter_credentials(
    zk: ZkClient, user: str, changes: Mapping[str, ScramCredential | None]
) -> None:
    """Set (a credential) or delete (None) the user's credential for each mechanism named in
    `changes`, keeping every other key of the node, then announce the change."""
    path = user_path(user)
    for _ in range(WRITE_ATTEMPTS):
        try:
            data, version = await zk.get(path)
        except ZkNoNode:
            data, version = None, -1
        config = decode_user_config(data) if data is not None else {}
        for mechanism, credential in changes.items():
            if credential is None:
                config.pop(mechanism, None)
            else:
                config[mechanism] = credential.to_string()
        try:
            if data is None:
                await zk.create(path, encode_user_config(config), makepath=True)
            else:
                await zk.set(path, encode_user_config(config), version=version)
        except (ZkBadVersion, ZkNodeExists, ZkNoNode):
            continue  # another writer (quotas, another admin) got there first: read again
        break
    else:
        raise ZkBadVersion(f"{path} kept changing under {WRITE_ATTEMPTS} attempts", path)
    await announce_change(zk, f"{ENTITY_TYPE}/{sanitize(user)}")
    log.info(
        "SCRAM credentials of user %s: %s",
        user,
        ", ".join(f"{m} {'set' if c else 'deleted'}" for m, c in sorted(changes.items())),
    )


async def list_users(zk: ZkClient) -> list[str]:
    try:
        return sorted(desanitize(c) for c in await zk.get_children(CONFIG_USERS))
    except ZkNoNode:
        return []


async def read_all(zk: ZkClient) -> dict[str, dict[str, ScramCredential]]:
    """Every user with at least one SCRAM credential: user -> mechanism -> credential."""
    out: dict[str, dict[str, ScramCredential]] = {}
    for user in await list_users(zk):
        try:
            creds = credentials_of(await read_user_config(zk, user))
        except ZkDataError as exc:
            log.warning("ignoring user %s's config node: %s", user, exc)
            continue
        if creds:
            out[user] = creds
    return out


class CredentialCache:
    """One broker's copy of every SCRAM credential, following /config/users.

    `lookup` is a dictionary read, so the SASL server calls it without I/O."""

    def __init__(self, zk: ZkClient) -> None:
        self.zk = zk
        self._users: dict[str, dict[str, ScramCredential]] = {}

    def lookup(self, mechanism: str, user: str) -> ScramCredential | None:
        return self._users.get(user, {}).get(mechanism)

    def users(self) -> dict[str, dict[str, ScramCredential]]:
        return {u: dict(c) for u, c in self._users.items()}

    async def read_user(self, user: str) -> dict[str, ScramCredential]:
        """The user's credentials as ZooKeeper holds them now (broker/credentials.py's store)."""
        return credentials_of(await read_user_config(self.zk, user))

    async def read_all_users(self) -> dict[str, dict[str, ScramCredential]]:
        return await read_all(self.zk)

    async def alter(self, user: str, changes: Mapping[str, ScramCredential | None]) -> None:
        """Write and announce; this broker's cache takes the change at once (the others when
        their listener sees the notification)."""
        await alter_credentials(self.zk, user, changes)
        await self.refresh(user)

    async def start(self, listener: ConfigChangeListener) -> None:
        """Subscribe to user changes, then load every user (call before the listener starts,
        so that no change falls between the load and the subscription)."""
        listener.subscribe(ENTITY_TYPE, self._on_change, self.reload)
        await self.reload()

    async def reload(self) -> None:
        self._users = await read_all(self.zk)
        log.debug("SCRAM credentials loaded for %d users", len(self._users))

    async def refresh(self, user: str) -> None:
        try:
            creds = credentials_of(await read_user_config(self.zk, user))
        except ZkDataError as exc:
            log.warning("ignoring user %s's config node: %s", user, exc)
            creds = {}
        if creds:
            self._users[user] = creds
        else:
            self._users.pop(user, None)

    async def _on_change(self, rest: str) -> None:
        segment, _, sub = rest.partition("/")
        if not sub:  # "users/<user>/clients/<id>" is a quota; credentials are "users/<user>"
            await self.refresh(desanitize(segment))
