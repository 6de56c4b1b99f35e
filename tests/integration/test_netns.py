"""deploy/netns.py on real namespaces, without a cluster: a forwarded loopback "ZooKeeper" port
and a listener inside a broker's namespace, reached or not as the faults say; connections under
a fault time out (packets dropped) rather than being refused; teardown leaves nothing behind,
and without iptables still removes the namespaces, veths and bridge."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from deploy.netns import NetLab, NetLabError
from tests.fixtures.zk import free_port

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces and iptables need root"),
]

SERVE = (
    "import socket, sys\n"
    "s = socket.create_server((sys.argv[1], int(sys.argv[2])))\n"
    "while True:\n"
    "    c, _ = s.accept(); c.sendall(b'hi'); c.close()\n"
)


def _reach(lab: NetLab, inside: int | None, host: str, port: int) -> str:
    """ "ok", "timeout" or "refused": a connection from broker `inside`'s namespace (None: the
    root namespace) to host:port."""
    code = (
        "import socket, sys\n"
        "try:\n"
        f"    socket.create_connection(({host!r}, {port}), timeout=1.0).recv(2); print('ok')\n"
        "except TimeoutError: print('timeout')\n"
        "except OSError: print('refused')\n"
    )
    prefix = [] if inside is None else lab.exec_prefix(inside)
    done = subprocess.run([*prefix, sys.executable, "-c", code], capture_output=True, text=True)
    return done.stdout.strip()


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[tuple[NetLab, int, int]]:
    zk_port, peer_port = free_port(), free_port()
    lab = NetLab.plan(str(tmp_path), [1, 2], [zk_port])
    lab.setup()
    lab.setup()  # idempotent
    ip2 = lab.spec.broker_ip(2)
    servers = [
        subprocess.Popen([sys.executable, "-c", SERVE, "127.0.0.1", str(zk_port)]),
        subprocess.Popen([*lab.exec_prefix(2), sys.executable, "-c", SERVE, ip2, str(peer_port)]),
    ]
    try:
        deadline = time.monotonic() + 10
        while _reach(lab, None, ip2, peer_port) != "ok" and time.monotonic() < deadline:
            time.sleep(0.1)
        yield lab, zk_port, peer_port
    finally:
        for server in servers:
            server.kill()
            server.wait()
        lab.teardown()


def test_faults_drop_packets_and_heal(lab: tuple[NetLab, int, int]) -> None:
    net, zk_port, peer_port = lab
    bridge, ip2 = net.spec.bridge_ip, net.spec.broker_ip(2)
    assert _reach(net, 1, bridge, zk_port) == "ok"  # ZooKeeper on loopback, forwarded
    assert _reach(net, 1, ip2, peer_port) == "ok"  # peer to peer
    assert _reach(net, None, ip2, peer_port) == "ok"  # client in the root namespace

    net.cut_zookeeper(1)
    assert _reach(net, 1, bridge, zk_port) == "timeout"
    assert _reach(net, 1, ip2, peer_port) == "ok"
    net.cut_zookeeper(2)
    assert _reach(net, None, ip2, peer_port) == "ok"  # clients still reach it

    net.isolate(2)
    assert net.fault(2) == "isolate"
    assert _reach(net, None, ip2, peer_port) == "timeout"
    assert _reach(net, 1, ip2, peer_port) == "timeout"
    assert _reach(net, 2, bridge, zk_port) == "timeout"

    net.heal(1)
    net.heal(2)
    net.heal(2)  # idempotent
    assert _reach(net, 1, bridge, zk_port) == "ok"
    assert _reach(net, None, ip2, peer_port) == "ok"


def test_teardown_leaves_nothing(tmp_path: Path) -> None:
    lab = NetLab.plan(str(tmp_path), [1, 2], [free_port()])
    lab.setup()
    assert lab.exists()
    lab.teardown()
    lab.teardown()
    assert not lab.exists()
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    assert lab.spec.lab_id not in links
    spaces = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert lab.spec.lab_id not in spaces
    nat = subprocess.run(["iptables", "-t", "nat", "-S"], capture_output=True, text=True).stdout
    assert lab.spec.bridge not in nat


def test_teardown_without_iptables_still_removes_namespaces_and_bridge(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A machine whose `iptables` went away: every other step still runs, and the one error
    names the DNAT rule left behind; with iptables back, a second teardown removes it."""
    lab = NetLab.plan(str(tmp_path), [1, 2], [free_port()])
    lab.setup()
    only_ip = tmp_path / "bin"
    only_ip.mkdir()
    ip = shutil.which("ip")
    assert ip is not None
    (only_ip / "ip").symlink_to(ip)
    try:
        with monkeypatch.context() as m:
            m.setenv("PATH", str(only_ip))
            with pytest.raises(NetLabError) as info:
                lab.teardown()
        assert info.value.message.splitlines()[1:] == [
            f"  the DNAT rule of port {lab.spec.zookeeper_ports[0]}: 'iptables' is not "
            "installed (the network lab needs it)"
        ]
        assert not lab.exists()
        links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
        spaces = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        assert lab.spec.lab_id not in links and lab.spec.lab_id not in spaces
    finally:
        lab.teardown()  # iptables on the PATH again: the DNAT rule goes too
    nat = subprocess.run(["iptables", "-t", "nat", "-S"], capture_output=True, text=True).stdout
    assert lab.spec.bridge not in nat
