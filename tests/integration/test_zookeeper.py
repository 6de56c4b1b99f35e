"""ZkClient and deploy/zookeeper.py against a real ZooKeeper server."""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from coordinator.cluster import zk_paths as paths
from coordinator.cluster.registration import BrokerIdInUseError, register_broker
from coordinator.cluster.zk import (
    OpCheck,
    OpSet,
    ZkBadVersion,
    ZkClient,
    ZkNodeExists,
    ZkNoNode,
    ZkNotEmpty,
    split_chroot,
)
from deploy.zookeeper import (
    ZkProcess,
    ZooKeeperError,
    is_alive,
    kill_zookeeper,
    read_state,
    start_zookeeper,
    stop_zookeeper,
)
from tests.fixtures.zk import TcpProxy, free_port, wait_until

pytestmark = pytest.mark.integration

SESSION_MS = 2000


@pytest.fixture
async def zk(zk_chroot: str) -> AsyncIterator[ZkClient]:
    client = ZkClient(zk_chroot, SESSION_MS)
    await client.start(10)
    yield client
    await client.stop()


def test_server_state_file_reattaches(zk_server: ZkProcess) -> None:
    again = read_state(zk_server.data_dir)
    assert again == zk_server
    assert is_alive(zk_server.pid)
    cfg = (zk_server.data_dir / "zoo.cfg").read_text()
    assert "clientPortAddress=127.0.0.1" in cfg
    assert "admin.enableServer=false" in cfg


def test_start_and_stop_by_pid(tmp_path: Path) -> None:
    zk = start_zookeeper(tmp_path / "zk", free_port())
    assert is_alive(zk.pid)
    stop_zookeeper(zk.pid)
    assert not is_alive(zk.pid)
    assert read_state(tmp_path / "zk") is None


async def test_crud_and_errors(zk: ZkClient) -> None:
    assert await zk.create("/a", b"1") == "/a"
    assert await zk.get("/a") == (b"1", 0)
    assert await zk.set("/a", b"2", version=0) == 1
    with pytest.raises(ZkBadVersion):
        await zk.set("/a", b"3", version=0)
    with pytest.raises(ZkNodeExists):
        await zk.create("/a")
    with pytest.raises(ZkNoNode):
        await zk.get("/missing")
    with pytest.raises(ZkNoNode):
        await zk.create("/x/y")
    assert await zk.create("/x/y/z", b"", makepath=True) == "/x/y/z"
    assert await zk.get_children("/x") == ["y"]
    assert await zk.exists("/x/y/z") == 0
    assert await zk.exists("/nope") is None
    with pytest.raises(ZkNotEmpty):
        await zk.delete("/x")
    await zk.delete("/x", recursive=True)
    assert await zk.exists("/x") is None
    with pytest.raises(ZkBadVersion):
        await zk.delete("/a", version=0)
    await zk.delete("/a", version=1)
    await zk.ensure_path("/p/q")
    await zk.ensure_path("/p/q")
    assert await zk.get_children("/p") == ["q"]


async def test_chroot_is_created_and_isolates(zk_server: ZkProcess, zk: ZkClient) -> None:
    await zk.create("/only-here", b"")
    _, chroot = split_chroot(zk.hosts)
    root = ZkClient(zk_server.connect, SESSION_MS)
    await root.start(10)
    try:
        assert await root.exists(chroot + "/only-here") == 0
        assert await root.exists("/only-here") is None
    finally:
        await root.stop()


async def test_transaction_is_atomic(zk: ZkClient) -> None:
    await zk.create("/epoch", b"1")
    await zk.create("/state", b"a")
    await zk.transaction([OpCheck("/epoch", 0), OpSet("/state", b"b", 0)])
    assert await zk.get("/state") == (b"b", 1)
    await zk.set("/epoch", b"2")  # another controller bumped the epoch
    with pytest.raises(ZkBadVersion) as info:
        await zk.transaction([OpCheck("/epoch", 0), OpSet("/state", b"c", 1)])
    assert info.value.path == "/epoch"
    assert await zk.get("/state") == (b"b", 1)  # nothing applied


async def test_watches_run_on_the_loop(zk: ZkClient) -> None:
    loop_thread = threading.get_ident()
    seen_children: list[list[str]] = []
    seen_data: list[tuple[bytes | None, int | None]] = []
    threads: set[int] = set()
    await zk.ensure_path("/w")

    def on_children(children: list[str]) -> None:
        threads.add(threading.get_ident())
        seen_children.append(children)

    def on_data(data: bytes | None, version: int | None) -> None:
        threads.add(threading.get_ident())
        seen_data.append((data, version))

    children_watch = await zk.watch_children("/w", on_children)
    await zk.watch_data("/w/node", on_data)
    await wait_until(lambda: seen_children == [[]] and seen_data == [(None, None)], 5)
    await zk.create("/w/node", b"v0")
    await wait_until(lambda: seen_children[-1] == ["node"], 5, "child added")
    await wait_until(lambda: seen_data[-1] == (b"v0", 0), 5, "data created")
    await zk.set("/w/node", b"v1")
    await wait_until(lambda: seen_data[-1] == (b"v1", 1), 5, "data changed")
    await zk.delete("/w/node")
    await wait_until(lambda: seen_children[-1] == [] and seen_data[-1] == (None, None), 5)
    assert threads == {loop_thread}
    children_watch.cancel()
    count = len(seen_children)
    await zk.create("/w/other")
    await asyncio.sleep(0.3)
    assert len(seen_children) == count
    with pytest.raises(ZkNoNode):
        await zk.watch_children("/not-there", on_children)


async def test_ephemeral_goes_with_its_session(zk_chroot: str, zk: ZkClient) -> None:
    other = ZkClient(zk_chroot, SESSION_MS)
    await other.start(10)
    await other.create("/eph", b"x", ephemeral=True)
    stat = await zk.stat("/eph")
    assert stat is not None and stat.ephemeral_owner == other.session_id
    gone = asyncio.Event()
    await zk.watch_data("/eph", lambda data, _v: gone.set() if data is None else None)
    await other.stop()
    await asyncio.wait_for(gone.wait(), 5)
    assert await zk.exists("/eph") is None


async def test_session_expiry_is_lost_then_reregistered(zk: ZkClient) -> None:
    states: list[str] = []
    zk.add_state_listener(states.append)
    registration = await register_broker(zk, 1, "127.0.0.1", 9001)
    old_session = zk.session_id
    await zk.expire_session()
    await wait_until(lambda: "LOST" in states, 10, "LOST")
    await wait_until(lambda: states[-1] == "CONNECTED", 10, "reconnect")
    assert zk.session_id != old_session

    # The registration came back on the new session (its ephemeral went with the old one).
    await assert_registered_on_session(zk, 1)
    await registration.close()


async def assert_registered_on_session(zk: ZkClient, broker_id: int) -> None:
    """Within 100 polls 50 ms apart, the broker's znode is owned by `zk`'s current session."""

    async def registered() -> bool:
        stat = await zk.stat(paths.broker_path(broker_id))
        return stat is not None and stat.ephemeral_owner == zk.session_id

    for _ in range(100):
        if await registered():
            break
        await asyncio.sleep(0.05)
    assert await registered()


async def test_register_waits_for_own_stale_session(zk_chroot: str) -> None:
    old = ZkClient(zk_chroot, SESSION_MS)
    await old.start(10)
    # The old incarnation is "killed": it will not re-register once its session is gone.
    await (await register_broker(old, 5, "127.0.0.1", 9005)).close()
    new = ZkClient(zk_chroot, SESSION_MS)
    await new.start(10)
    try:
        # Another broker (different address) claiming id 5 fails at once.
        with pytest.raises(BrokerIdInUseError, match=r"127\.0\.0\.1:9005"):
            await register_broker(new, 5, "127.0.0.1", 9999)
        # Our own restart waits until the old session's node is gone.
        task = asyncio.create_task(register_broker(new, 5, "127.0.0.1", 9005))
        await asyncio.sleep(0.5)
        assert not task.done()
        await old.expire_session()  # the killed broker's session expires
        registration = await asyncio.wait_for(task, 10)
        stat = await new.stat(paths.broker_path(5))
        assert stat is not None and stat.ephemeral_owner == new.session_id
        await registration.close()
    finally:
        await old.stop()
        await new.stop()


async def test_register_gives_up_after_bound(zk_chroot: str) -> None:
    old = ZkClient(zk_chroot, SESSION_MS)
    await old.start(10)
    new = ZkClient(zk_chroot, SESSION_MS)
    await new.start(10)
    try:
        await register_broker(old, 6, "127.0.0.1", 9006)
        with pytest.raises(BrokerIdInUseError, match="still registered"):
            await register_broker(new, 6, "127.0.0.1", 9006, wait_ms=300)
    finally:
        await old.stop()
        await new.stop()


async def test_suspended_then_reconnected_keeps_session(zk_server: ZkProcess) -> None:
    proxy = TcpProxy(zk_server.port)
    await proxy.start()
    client = ZkClient(proxy.connect + "/suspend-" + uuid.uuid4().hex[:8], 4000)
    states: list[str] = []
    client.add_state_listener(states.append)
    try:
        await client.start(10)
        await client.create("/eph", b"", ephemeral=True)
        session = client.session_id
        proxy.cut()  # the network fails; the server keeps the session for 4 s
        await wait_until(lambda: "SUSPENDED" in states, 10, "SUSPENDED")
        await asyncio.sleep(0.5)
        proxy.heal()
        await wait_until(lambda: states[-1] == "CONNECTED", 10, "CONNECTED again")
        assert states == ["CONNECTED", "SUSPENDED", "CONNECTED"]
        assert client.session_id == session
        assert await client.exists("/eph") == 0  # the ephemeral survived the suspension
    finally:
        await client.stop()
        await proxy.stop()


async def test_server_crash_and_restart(tmp_path: Path) -> None:
    # After a crash and restart of the server the client gets back either its own session
    # (SUSPENDED -> CONNECTED) or, if the restart outlasted it, a new one (LOST -> CONNECTED)
    # on which its broker registration is made again. Either way it ends up registered.
    port = free_port()
    server = start_zookeeper(tmp_path / "zk", port)
    client = ZkClient(server.connect, 3000)
    states: list[str] = []
    client.add_state_listener(states.append)
    try:
        await client.start(10)
        registration = await register_broker(client, 3, "127.0.0.1", 9003)
        kill_zookeeper(server.pid)
        await wait_until(lambda: "SUSPENDED" in states, 10, "SUSPENDED")
        server = start_zookeeper(tmp_path / "zk", port)
        await wait_until(lambda: states[-1] == "CONNECTED", 20, "CONNECTED again")
        await assert_registered_on_session(client, 3)
        await registration.close()
    finally:
        await client.stop()
        stop_zookeeper(server.pid)


def test_port_in_use_is_refused(zk_server: ZkProcess, tmp_path: Path) -> None:
    with pytest.raises(ZooKeeperError, match="already in use"):
        start_zookeeper(tmp_path / "zk", zk_server.port)


async def test_a_dead_controllers_node_is_deleted_only_while_no_successor_was_elected(
    zk: ZkClient,
) -> None:
    """Two brokers judge the same dead controller. The first deletes its /controller and wins
    the election between the second's read and delete; the second must not delete the
    winner's node, though it has the same version (0) as the one it judged."""
    from coordinator.cluster.zk_paths import ControllerInfo
    from coordinator.controller.fast_death import _delete_controller

    await zk.create(paths.CONTROLLER_EPOCH, paths.encode_controller_epoch(1))
    await zk.create(paths.CONTROLLER, ControllerInfo(1, 0).encode())
    _, judged = await zk.get_with_stat(paths.CONTROLLER)
    read = zk.get_with_stat

    async def successor_wins_meanwhile(path: str) -> tuple[bytes, object]:
        answer = await read(path)
        if path == paths.CONTROLLER:  # the other broker: delete, create, bump the epoch
            await zk.delete(paths.CONTROLLER)
            await zk.create(paths.CONTROLLER, ControllerInfo(3, 0).encode())
            await zk.set(paths.CONTROLLER_EPOCH, paths.encode_controller_epoch(2), version=0)
        return answer

    zk.get_with_stat = successor_wins_meanwhile  # type: ignore[method-assign]
    try:
        assert not await _delete_controller(zk, 1, judged.czxid)
    finally:
        zk.get_with_stat = read  # type: ignore[method-assign]
    data, _ = await zk.get(paths.CONTROLLER)
    assert ControllerInfo.decode(data).broker_id == 3  # the winner's node stands
    # with no successor, the judged node is deleted
    await zk.delete(paths.CONTROLLER)
    await zk.create(paths.CONTROLLER, ControllerInfo(1, 0).encode())
    _, judged = await zk.get_with_stat(paths.CONTROLLER)
    assert await _delete_controller(zk, 1, judged.czxid)
    assert await zk.exists(paths.CONTROLLER) is None
