"""SCRAM credential storage over an in-memory ZooKeeper: Kafka's znode and JSON, other keys of the
node (quotas) kept, a concurrent writer retried, no password stored, and the cache following
change notifications through ConfigChangeListener.subscribe."""

from __future__ import annotations

import asyncio
import json

from coordinator.cluster import zk_paths as paths
from coordinator.cluster.config_changes import ConfigChangeListener
from coordinator.cluster.scram_credentials import (
    CredentialCache,
    alter_credentials,
    read_user_config,
    user_path,
)
from coordinator.cluster.zk import ZkBadVersion, ZkNodeExists, ZkNoNode
from protocol.quota import sanitize
from protocol.scram import ScramCredential, make_credential

ALICE_512 = make_credential("SCRAM-SHA-512", "alice-secret", 8192, salt=b"s" * 16)
ALICE_256 = make_credential("SCRAM-SHA-256", "alice-secret", 4096, salt=b"t" * 16)


class FakeZk:
    """Versioned znodes in a dict: what storage and the listener call."""

    def __init__(self) -> None:
        self.nodes: dict[str, tuple[bytes, int]] = {}
        self.seq = 0
        self.before_set: list[tuple[str, bytes]] = []  # writes another writer makes first

    async def get(self, path: str) -> tuple[bytes, int]:
        if path not in self.nodes:
            raise ZkNoNode(path, path)
        return self.nodes[path]

    async def exists(self, path: str) -> int | None:
        return self.nodes[path][1] if path in self.nodes else None

    async def set(self, path: str, data: bytes, version: int = -1) -> int:
        while self.before_set:
            other_path, other = self.before_set.pop(0)
            self.nodes[other_path] = (other, self.nodes[other_path][1] + 1)
        if path not in self.nodes:
            raise ZkNoNode(path, path)
        if version not in (-1, self.nodes[path][1]):
            raise ZkBadVersion(path, path)
        self.nodes[path] = (data, self.nodes[path][1] + 1)
        return self.nodes[path][1]

    async def create(
        self, path: str, data: bytes = b"", makepath: bool = False, sequence: bool = False
    ) -> str:
        if sequence:
            path = f"{path}{self.seq:010d}"
            self.seq += 1
        if path in self.nodes:
            raise ZkNodeExists(path, path)
        self.nodes[path] = (data, 0)
        return path

    async def ensure_path(self, path: str) -> None:
        self.nodes.setdefault(path, (b"", 0))

    async def get_children(self, path: str) -> list[str]:
        prefix = path + "/"
        return sorted({p[len(prefix) :].split("/")[0] for p in self.nodes if p.startswith(prefix)})

    async def delete(self, path: str) -> None:
        self.nodes.pop(path, None)


def run(coro):  # type: ignore[no-untyped-def]
    return asyncio.run(coro)


def test_znode_is_kafkas_json_and_holds_no_password() -> None:
    zk = FakeZk()
    run(alter_credentials(zk, "alice", {"SCRAM-SHA-512": ALICE_512}))  # type: ignore[arg-type]
    data, _ = zk.nodes["/config/users/alice"]
    assert json.loads(data) == {
        "version": 1,
        "config": {"SCRAM-SHA-512": ALICE_512.to_string()},
    }
    assert b"alice-secret" not in data
    assert ALICE_512.to_string().endswith(",iterations=8192")
    change = [d for p, (d, _) in zk.nodes.items() if p.startswith(paths.CONFIG_CHANGES + "/")]
    assert change == [b'{"entity_path":"users/alice","version":2}']


def test_user_names_are_sanitized_as_kafka() -> None:
    assert sanitize("alice") == "alice"
    assert sanitize("CN=a b,O=x*") == "CN%3Da%20b%2CO%3Dx%2A"
    assert user_path("us/er") == "/config/users/us%2Fer"


def test_other_keys_of_the_node_are_kept_and_a_deletion_removes_one_mechanism() -> None:
    zk = FakeZk()
    zk.nodes["/config/users/alice"] = (
        b'{"version":1,"config":{"producer_byte_rate":"1024"}}',
        3,
    )
    changes = {"SCRAM-SHA-512": ALICE_512, "SCRAM-SHA-256": ALICE_256}
    run(alter_credentials(zk, "alice", changes))  # type: ignore[arg-type]
    run(alter_credentials(zk, "alice", {"SCRAM-SHA-256": None}))  # type: ignore[arg-type]
    config = run(read_user_config(zk, "alice"))  # type: ignore[arg-type]
    assert config == {"producer_byte_rate": "1024", "SCRAM-SHA-512": ALICE_512.to_string()}


def test_a_concurrent_quota_write_is_not_lost() -> None:
    zk = FakeZk()
    zk.nodes["/config/users/alice"] = (b'{"version":1,"config":{}}', 0)
    quota = b'{"version":1,"config":{"consumer_byte_rate":"2048"}}'
    zk.before_set.append(("/config/users/alice", quota))  # lands between our read and write
    run(alter_credentials(zk, "alice", {"SCRAM-SHA-512": ALICE_512}))  # type: ignore[arg-type]
    config = run(read_user_config(zk, "alice"))  # type: ignore[arg-type]
    assert config == {"consumer_byte_rate": "2048", "SCRAM-SHA-512": ALICE_512.to_string()}


def test_cache_follows_notifications_and_resyncs() -> None:
    async def scenario() -> None:
        zk = FakeZk()
        await alter_credentials(zk, "bob", {"SCRAM-SHA-256": ALICE_256})  # type: ignore[arg-type]
        listener = ConfigChangeListener(zk, lambda t, o: None, set)  # type: ignore[arg-type]
        cache = CredentialCache(zk)  # type: ignore[arg-type]
        await cache.start(listener)
        assert cache.lookup("SCRAM-SHA-256", "bob") == ALICE_256
        assert cache.lookup("SCRAM-SHA-512", "bob") is None
        await listener.process(await zk.get_children(paths.CONFIG_CHANGES))

        await alter_credentials(zk, "a,b", {"SCRAM-SHA-512": ALICE_512})  # type: ignore[arg-type]
        await listener.process(await zk.get_children(paths.CONFIG_CHANGES))
        assert cache.lookup("SCRAM-SHA-512", "a,b") == ALICE_512

        await alter_credentials(zk, "bob", {"SCRAM-SHA-256": None})  # type: ignore[arg-type]
        await listener.process(await zk.get_children(paths.CONFIG_CHANGES))
        assert cache.lookup("SCRAM-SHA-256", "bob") is None

        # A change made while notifications were purged: the listener resyncs everything.
        zk.nodes["/config/users/carol"] = (
            json.dumps({"version": 1, "config": {"SCRAM-SHA-256": ALICE_256.to_string()}}).encode(),
            0,
        )
        gone = f"{paths.CONFIG_CHANGES}/{paths.CONFIG_CHANGE_PREFIX}{zk.seq:010d}"
        zk.seq += 1
        children = [gone.rsplit("/", 1)[1]]  # named by the watch, deleted before it is read
        await listener.process(children)
        assert cache.lookup("SCRAM-SHA-256", "carol") == ALICE_256

    asyncio.run(scenario())


def test_a_malformed_credential_fails_only_that_mechanism() -> None:
    async def scenario() -> None:
        zk = FakeZk()
        config = {"SCRAM-SHA-256": "garbage", "SCRAM-SHA-512": ALICE_512.to_string()}
        zk.nodes["/config/users/dave"] = (json.dumps({"version": 1, "config": config}).encode(), 0)
        cache = CredentialCache(zk)  # type: ignore[arg-type]
        await cache.reload()
        assert cache.lookup("SCRAM-SHA-256", "dave") is None
        assert isinstance(cache.lookup("SCRAM-SHA-512", "dave"), ScramCredential)

    asyncio.run(scenario())
