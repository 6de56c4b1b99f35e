"""deploy/netns.py without touching the network: names, subnets, connect strings, the iptables
rules of each fault, idempotent setup and a teardown that runs every step through fake command
runners, the root and tools checks, and the `cluster up --netns` flag's one-line refusals for a
non-root user and a machine without iptables."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest

from deploy import netns
from deploy.cli import main
from deploy.cluster import ClusterError, LocalCluster
from deploy.netns import (
    IFNAME_MAX,
    LabSpec,
    NeedsRootError,
    NetLab,
    NetLabError,
    fault_from_rules,
    fault_rules,
    lab_id,
    loopback_ports,
    pick_subnet,
    require_tools,
    rewrite_connect,
    routed_networks,
)
from protocol.errors import UsageError


class FakeRunner:
    """Answers commands as a machine where only `existing` things exist; records the rest."""

    def __init__(self, fail: Sequence[str] = ()) -> None:
        self.calls: list[list[str]] = []
        self.fail = list(fail)  # a command containing one of these fails

    def __call__(self, args: Sequence[str]) -> subprocess.CompletedProcess[str]:
        self.calls.append(list(args))
        failed = any(part in " ".join(args) for part in self.fail)
        return subprocess.CompletedProcess(list(args), 1 if failed else 0, "", "nope")

    def commands(self) -> list[str]:
        return [" ".join(c) for c in self.calls]


@pytest.fixture
def as_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(netns.os, "geteuid", lambda: 0)


def spec() -> LabSpec:
    return LabSpec("a1b2c3", "10.231.7", [1, 2, 3], [2181])


def test_names_fit_in_linux_interface_names_and_addresses_follow_the_plan() -> None:
    s = LabSpec(lab_id("/some/dir"), "10.200.0", list(range(0, 241)))
    for b in s.broker_ids:
        assert len(s.veth(b)) <= IFNAME_MAX and len(s.peer(b)) <= IFNAME_MAX
    assert len(s.bridge) <= IFNAME_MAX
    assert s.bridge_ip == "10.200.0.1"
    assert s.broker_ip(3) == "10.200.0.13"
    assert s.namespace(3) == f"od-{s.lab_id}-b3"
    with pytest.raises(NetLabError):
        LabSpec("a1b2c3", "10.200.0", [241])


def test_lab_ids_differ_per_directory_and_are_stable() -> None:
    assert lab_id("/tmp/a") == lab_id("/tmp/a")
    assert lab_id("/tmp/a") != lab_id("/tmp/b")


def test_subnet_avoids_networks_already_routed() -> None:
    ident = "a1b2c3"
    first = pick_subnet(ident, [])
    assert first.startswith("10.2")
    second = pick_subnet(ident, [f"{first}.0/24", "192.0.2.0/24"])
    assert second != first
    assert pick_subnet(ident, [f"{first}.128/25"]) != first  # overlapping counts too


def test_routed_networks_reads_ip_route_output() -> None:
    routes = (
        "default via 192.0.2.1 dev eth0\n"
        "192.0.2.0/24 dev eth0 proto kernel scope link src 192.0.2.2\n"
        "10.231.7.0/24 dev odba1b2c3 proto kernel scope link src 10.231.7.1\n"
        "unreachable 10.9.0.0/16\n"
    )
    assert routed_networks(routes, ignore_device="odba1b2c3") == ["192.0.2.0/24", "10.9.0.0/16"]


def test_connect_strings_for_brokers_in_namespaces() -> None:
    connect = "127.0.0.1:2181,localhost:2182,zk.example:2181/odradek-x"
    assert loopback_ports(connect) == [2181, 2182]
    assert rewrite_connect(connect, "10.231.7.1") == (
        "10.231.7.1:2181,10.231.7.1:2182,zk.example:2181/odradek-x"
    )
    with pytest.raises(NetLabError):
        loopback_ports("nonsense")


def test_fault_rules_drop_like_a_pulled_cable() -> None:
    isolate = fault_rules("isolate", "10.231.7.1", [2181])
    assert ["-A", "ODRADEK-IN", "!", "-i", "lo", "-j", "DROP"] in isolate
    assert ["-A", "ODRADEK-OUT", "!", "-o", "lo", "-j", "DROP"] in isolate
    cut = fault_rules("cut_zookeeper", "10.231.7.1", [2181])
    assert cut == [
        ["-A", "ODRADEK-OUT", "-d", "10.231.7.1", "-p", "tcp", "--dport", "2181", "-j", "DROP"],
        ["-A", "ODRADEK-IN", "-s", "10.231.7.1", "-p", "tcp", "--sport", "2181", "-j", "DROP"],
    ]
    with pytest.raises(NetLabError, match="unknown network fault"):
        fault_rules("flood", "10.231.7.1", [])


def test_which_fault_a_listing_shows() -> None:
    assert fault_from_rules("-N ODRADEK-OUT\n") is None
    assert fault_from_rules("-N ODRADEK-OUT\n-A ODRADEK-OUT ! -o lo -j DROP\n") == "isolate"
    listing = "-A ODRADEK-OUT -d 10.1.1.1/32 -p tcp -m tcp --dport 2181 -j DROP\n"
    assert fault_from_rules(listing) == "cut_zookeeper"


def test_faults_run_inside_the_broker_namespace(as_root: None) -> None:
    run = FakeRunner()
    lab = NetLab(spec(), run)
    lab.cut_zookeeper(2)
    ns = "ip netns exec od-a1b2c3-b2 iptables"
    assert run.commands() == [
        f"{ns} -F ODRADEK-IN",
        f"{ns} -F ODRADEK-OUT",
        f"{ns} -A ODRADEK-OUT -d 10.231.7.1 -p tcp --dport 2181 -j DROP",
        f"{ns} -A ODRADEK-IN -s 10.231.7.1 -p tcp --sport 2181 -j DROP",
    ]
    with pytest.raises(NetLabError, match="no broker 9"):
        lab.isolate(9)
    assert lab.exec_prefix(1) == ["ip", "netns", "exec", "od-a1b2c3-b1"]


def test_setup_creates_only_what_is_missing(as_root: None) -> None:
    present = FakeRunner()  # every check succeeds: everything exists already
    NetLab(spec(), present).setup()
    made = [c for c in present.commands() if " add " in f" {c} " or " -N " in c]
    assert made == ["ip addr add 10.231.7.1/24 dev odba1b2c3"] + [
        f"ip -n od-a1b2c3-b{b} addr add 10.231.7.1{b}/24 dev eth0" for b in (1, 2, 3)
    ]  # the fake's `ip addr show` prints nothing, so addresses look missing

    missing = FakeRunner(fail=["link show", "netns pids", " -S ", " -C "])
    NetLab(spec(), missing).setup()
    cmds = missing.commands()
    assert "ip link add odba1b2c3 type bridge" in cmds
    assert "ip netns add od-a1b2c3-b3" in cmds
    assert "ip link add odva1b2c33 type veth peer name odpa1b2c33" in cmds
    assert "ip -n od-a1b2c3-b3 link set odpa1b2c33 name eth0" in cmds
    assert "ip netns exec od-a1b2c3-b3 iptables -A OUTPUT -j ODRADEK-OUT" in cmds
    assert (
        "iptables -t nat -A PREROUTING -i odba1b2c3 -d 10.231.7.1 -p tcp --dport 2181 "
        "-j DNAT --to-destination 127.0.0.1:2181"
    ) in cmds


class FakeHost:
    """A machine holding `links`, `namespaces` and `dnat` rules (port: how many copies) that
    `ip` and `iptables` see and delete; a delete of a thing in `stuck` fails, and a command in
    `missing` is not installed (raised as run_command raises it)."""

    def __init__(self, links: set[str], namespaces: set[str], dnat: dict[int, int],
                 stuck: Sequence[str] = (), missing: Sequence[str] = ()) -> None:  # fmt: skip
        self.links, self.namespaces, self.dnat = links, namespaces, dnat
        self.stuck, self.missing = set(stuck), set(missing)
        self.calls: list[str] = []

    @classmethod
    def with_lab(cls, **kwargs: Sequence[str]) -> FakeHost:
        s = spec()
        links = {s.bridge, *(s.veth(b) for b in s.broker_ids)}
        return cls(links, {s.namespace(b) for b in s.broker_ids}, {2181: 2}, **kwargs)

    def __call__(self, args: Sequence[str]) -> subprocess.CompletedProcess[str]:
        self.calls.append(" ".join(args))
        if args[0] in self.missing:
            raise NetLabError(f"{args[0]!r} is not installed (the network lab needs it)")
        status = 0 if self._answer(list(args)) else 1
        return subprocess.CompletedProcess(list(args), status, "", "Device or resource busy")

    def _answer(self, args: list[str]) -> bool:
        name = args[-1]
        match args[:3]:
            case ["ip", "link", "show"]:
                return name in self.links
            case ["ip", "netns", "pids"]:
                return name in self.namespaces
            case ["ip", "link", "del"] | ["ip", "netns", "del"] if name in self.stuck:
                return False
            case ["ip", "link", "del"] if name in self.links:
                self.links.remove(name)
                return True
            case ["ip", "netns", "del"] if name in self.namespaces:
                self.namespaces.remove(name)
                return True
            case ["iptables", "-t", "nat"]:
                port = int(args[args.index("--dport") + 1])
                if args[3] == "-D" and self.dnat.get(port):
                    self.dnat[port] -= 1
                    return True
                return args[3] == "-C" and self.dnat.get(port, 0) > 0
        return False

    @property
    def left(self) -> set[str]:
        return self.links | self.namespaces | {f"dnat {p}" for p, n in self.dnat.items() if n}


def test_teardown_deletes_everything_even_duplicated_rules(as_root: None) -> None:
    host = FakeHost.with_lab()
    NetLab(spec(), host).teardown()
    assert host.left == set()
    assert host.calls.count("ip link del odba1b2c3") == 1


def test_teardown_ignores_what_is_gone(as_root: None) -> None:
    host = FakeHost(set(), set(), {})
    NetLab(spec(), host).teardown()
    assert not [c for c in host.calls if " del " in c or " -D " in c]


def test_teardown_without_iptables_still_deletes_namespaces_and_bridge(as_root: None) -> None:
    host = FakeHost.with_lab(missing=["iptables"])
    with pytest.raises(NetLabError) as info:
        NetLab(spec(), host).teardown()
    assert host.left == {"dnat 2181"}
    assert info.value.message.splitlines() == [
        "network lab odba1b2c3 was not wholly torn down:",
        "  the DNAT rule of port 2181: 'iptables' is not installed (the network lab needs it)",
    ]


def test_teardown_reports_each_failed_step_and_runs_the_rest(as_root: None) -> None:
    host = FakeHost.with_lab(stuck=["od-a1b2c3-b2", "odba1b2c3"])
    with pytest.raises(NetLabError) as info:
        NetLab(spec(), host).teardown()
    assert host.left == {"od-a1b2c3-b2", "odba1b2c3"}  # the steps after each failure ran
    assert info.value.message.splitlines()[1:] == [
        "  namespace od-a1b2c3-b2: `ip netns del od-a1b2c3-b2` failed: Device or resource busy",
        "  bridge odba1b2c3: `ip link del odba1b2c3` failed: Device or resource busy",
    ]


def test_a_failed_command_is_one_readable_error(as_root: None) -> None:
    run = FakeRunner(fail=[" -F "])
    with pytest.raises(NetLabError, match="failed: nope"):
        NetLab(spec(), run).heal(1)


def test_non_root_gets_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(netns.os, "geteuid", lambda: 1000)
    with pytest.raises(NeedsRootError) as info:
        NetLab(spec(), FakeRunner()).isolate(1)
    assert info.value.message == "network faults need root: run as root or drop them from --faults"
    assert isinstance(info.value, UsageError)
    with pytest.raises(NeedsRootError):
        LocalCluster("/tmp/never-made", network="netns")
    with pytest.raises(NeedsRootError):
        LocalCluster("/tmp/never-made", tmpfs_mb=16)


def test_cli_refuses_netns_without_root(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: object
) -> None:
    monkeypatch.setattr(netns.os, "geteuid", lambda: 1000)
    assert main(["cluster", "up", "--dir", str(tmp_path), "--netns"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "need root" in err[0]


def test_unknown_network_mode() -> None:
    with pytest.raises(ClusterError, match="network must be one of"):
        LocalCluster("/tmp/never-made", network="wifi")


def test_a_missing_tool_is_one_line_naming_its_package() -> None:
    found = {"ip": "/usr/sbin/ip"}
    with pytest.raises(NetLabError) as info:
        require_tools(found.get)
    assert info.value.message == (
        "the network lab needs iptables: install it with `apt-get install iptables`"
    )
    with pytest.raises(NetLabError) as info:
        require_tools(lambda _tool: None)
    assert info.value.message == (
        "the network lab needs ip and iptables: install it with `apt-get install iproute2 iptables`"
    )
    require_tools(lambda tool: f"/usr/sbin/{tool}")  # both there: nothing to say


def test_cluster_up_netns_without_iptables_stops_at_once(
    as_root: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:  # fmt: skip
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "ip").write_text("#!/bin/sh\nexit 0\n")
    (bin_dir / "ip").chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))  # `ip` and nothing else
    where = tmp_path / "cluster"
    assert main(["cluster", "up", "--dir", str(where), "--netns"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "odradek: error: the network lab needs iptables: install it with `apt-get install iptables`"
    ]
    assert not where.exists()  # before ZooKeeper, the lab or the cluster's directory
