"""A network lab for a local cluster: each broker in its own network namespace, faults by iptables.

How it works: `NetLab` puts broker N of a cluster in namespace `od-<id>-b<N>`, linked by a veth
pair (`odv<id><N>` in the root namespace, `eth0` inside) to a bridge `odb<id>` in the root
namespace. `<id>` is six hex digits of a hash of the cluster's directory, so parallel clusters
do not collide (interface names stay within Linux's 15 characters). Each cluster has a private
subnet 10.<x>.<y>.0/24 (also from the hash, moved on if something on this machine already
routes it): the bridge is .1, broker N is .(10+N), with a default route through the bridge.
Clients in the root namespace reach brokers at their namespace addresses through the bridge.

ZooKeeper runs in the root namespace on 127.0.0.1. Brokers reach it at the bridge address: a
DNAT rule in the root namespace's nat table (`-i <bridge> -d <bridge ip> --dport P` to
127.0.0.1:P, with route_localnet on our bridge only) forwards each ZooKeeper port the lab is
given (`zookeeper_ports`); `broker_connect()` rewrites a loopback connect string to match.

Faults are iptables rules inside the broker's namespace, in two chains of its filter table
(ODRADEK-IN from INPUT, ODRADEK-OUT from OUTPUT), so packets vanish and connections hang as
with a pulled cable (DROP, not REJECT):
- `isolate(b)`: drop everything not on loopback (`! -i lo` / `! -o lo`): cut from the other
  brokers, ZooKeeper and clients.
- `cut_zookeeper(b)`: drop TCP to the bridge address's ZooKeeper ports and from them; the broker
  still reaches its peers and clients.
- `heal(b)`: flush both chains. A new fault replaces the broker's previous one.

Setup and teardown are idempotent (each step checks what exists); teardown deletes the DNAT
rules, namespaces, veths and the bridge, every step whatever the others did (a missing `iptables`
must not leave the namespaces behind), then raises one NetLabError naming each step that failed,
a line each. All of it needs root: `require_root()` raises `NeedsRootError`, a UsageError the
CLI prints as one line; `require_tools()` names the Debian package of a missing `ip` or
`iptables` before anything is made. Commands run through an injected `Runner`, so unit tests
check the commands without touching the network.
"""

from __future__ import annotations

import hashlib
import ipaddress
import os
import shutil
import subprocess
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from protocol.errors import UsageError

ROOT_MESSAGE = "network faults need root: run as root or drop them from --faults"
IFNAME_MAX = 15
BROKER_HOST_OFFSET = 10  # broker N is .(10 + N)
MAX_BROKER_ID = 240
CHAIN_IN = "ODRADEK-IN"
CHAIN_OUT = "ODRADEK-OUT"
FAULTS = ("isolate", "cut_zookeeper")
COMMAND_TIMEOUT_S = 20.0
# a crashed setup may have added a DNAT rule more than once; teardown deletes at most this many
DNAT_DUPLICATES_MAX = 16
TOOLS = {"ip": "iproute2", "iptables": "iptables"}  # the commands the lab runs: their packages


class NetLabError(UsageError):
    """The network lab could not do what was asked (a command failed, an unknown broker...)."""

    name = "NETLAB_ERROR"


class NeedsRootError(NetLabError):
    """Namespaces, veths and iptables need root."""

    name = "NEEDS_ROOT"


def require_root(message: str = ROOT_MESSAGE) -> None:
    if os.geteuid() != 0:
        raise NeedsRootError(message)


def require_tools(which: Callable[[str], str | None] = shutil.which) -> None:
    """Raise one line naming the packages to install when `ip` or `iptables` is missing."""
    missing = [tool for tool in TOOLS if which(tool) is None]
    if missing:
        packages = " ".join(TOOLS[tool] for tool in missing)
        raise NetLabError(f"the network lab needs {' and '.join(missing)}: install it with "
                          f"`apt-get install {packages}`")  # fmt: skip


Runner = Callable[[Sequence[str]], "subprocess.CompletedProcess[str]"]


def run_command(args: Sequence[str]) -> subprocess.CompletedProcess[str]:
    """Run one command (no shell), capturing its output; never raises on a failed status."""
    try:
        return subprocess.run(
            list(args), capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S, check=False
        )
    except FileNotFoundError:
        raise NetLabError(f"{args[0]!r} is not installed (the network lab needs it)") from None


# ----- names and addresses (pure) ---------------------------------------------------------------


def lab_id(key: str) -> str:
    """Six hex digits naming one cluster's lab, from a stable key (the cluster directory)."""
    return hashlib.sha1(key.encode()).hexdigest()[:6]


def subnet_candidates(lab: str) -> Iterable[str]:
    """Prefixes "10.x.y" to try for a lab, its own first: 10.200-249.*, then onwards."""
    start = int(lab, 16) % (50 * 256)
    for i in range(50 * 256):
        n = (start + i) % (50 * 256)
        yield f"10.{200 + n // 256}.{n % 256}"


def pick_subnet(lab: str, routed: Iterable[str]) -> str:
    """The first candidate prefix whose /24 overlaps no network already routed here."""
    nets = [ipaddress.ip_network(r, strict=False) for r in routed]
    for prefix in subnet_candidates(lab):
        mine = ipaddress.ip_network(f"{prefix}.0/24")
        if not any(mine.overlaps(n) for n in nets if n.version == 4 and n.prefixlen > 0):
            return prefix
    raise NetLabError("no free 10.200-249.x.0/24 subnet for the network lab")


def routed_networks(routes: str, ignore_device: str = "") -> list[str]:
    """The networks `ip -4 -o route show` lists (not default, not through `ignore_device`)."""
    out = []
    for line in routes.splitlines():
        fields = line.split()
        if not fields or fields[0] == "default" or f"dev {ignore_device} " in f"{line} ":
            continue
        target = fields[1] if fields[0] in ("unreachable", "blackhole", "prohibit") else fields[0]
        try:
            ipaddress.ip_network(target, strict=False)
        except ValueError:
            continue
        out.append(target)
    return out


def fault_rules(fault: str, bridge_ip: str, zookeeper_ports: Sequence[int]) -> list[list[str]]:
    """iptables arguments (after `iptables`) that apply a fault inside a broker's namespace."""
    if fault == "isolate":
        return [["-A", CHAIN_IN, "!", "-i", "lo", "-j", "DROP"],
                ["-A", CHAIN_OUT, "!", "-o", "lo", "-j", "DROP"]]  # fmt: skip
    if fault == "cut_zookeeper":
        rules = []
        for port in zookeeper_ports:
            rules.append(["-A", CHAIN_OUT, "-d", bridge_ip, "-p", "tcp", "--dport", str(port),
                          "-j", "DROP"])  # fmt: skip
            rules.append(["-A", CHAIN_IN, "-s", bridge_ip, "-p", "tcp", "--sport", str(port),
                          "-j", "DROP"])  # fmt: skip
        return rules
    raise NetLabError(f"unknown network fault {fault!r} (choose from {', '.join(FAULTS)})")


def fault_from_rules(listing: str) -> str | None:
    """Which fault `iptables -S ODRADEK-OUT` shows (None: healed)."""
    lines = [line for line in listing.splitlines() if line.startswith(f"-A {CHAIN_OUT}")]
    if not lines:
        return None
    return "isolate" if any("! -o lo" in line for line in lines) else "cut_zookeeper"


def split_connect(connect: str) -> tuple[list[tuple[str, int]], str]:
    """'h1:p1,h2:p2/chroot' -> ([(h1, p1), (h2, p2)], '/chroot')."""
    hosts, slash, chroot = connect.partition("/")
    out = []
    for item in hosts.split(","):
        host, sep, port = item.strip().rpartition(":")
        if not sep or not host or not port.isdigit():
            raise NetLabError(f"ZooKeeper address {item!r} is not HOST:PORT")
        out.append((host, int(port)))
    return out, slash + chroot


def is_loopback(host: str) -> bool:
    """Whether `host` is this machine's loopback (by name or address)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def loopback_ports(connect: str) -> list[int]:
    """The ports of a connect string's loopback servers (the ones the lab must forward)."""
    return [port for host, port in split_connect(connect)[0] if is_loopback(host)]


def rewrite_connect(connect: str, bridge_ip: str) -> str:
    """The connect string as brokers in namespaces use it: loopback hosts become the bridge."""
    servers, chroot = split_connect(connect)
    hosts = [f"{bridge_ip if is_loopback(h) else h}:{p}" for h, p in servers]
    return ",".join(hosts) + chroot


# ----- the lab ---------------------------------------------------------------------------------


@dataclass(slots=True)
class LabSpec:
    """Everything needed to rebuild or tear down a lab (kept in the cluster's state file)."""

    lab_id: str
    subnet: str  # "10.x.y": the lab's /24
    broker_ids: list[int]
    zookeeper_ports: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        assert len(self.lab_id) == 6, self.lab_id
        for b in self.broker_ids:
            if not 0 <= b <= MAX_BROKER_ID:
                raise NetLabError(f"broker id {b} does not fit the lab (0..{MAX_BROKER_ID})")
        for name in [self.bridge, *(self.veth(b) for b in self.broker_ids)]:
            assert len(name) <= IFNAME_MAX, name

    @property
    def bridge(self) -> str:
        return f"odb{self.lab_id}"

    @property
    def bridge_ip(self) -> str:
        return f"{self.subnet}.1"

    def namespace(self, broker_id: int) -> str:
        return f"od-{self.lab_id}-b{broker_id}"

    def veth(self, broker_id: int) -> str:
        return f"odv{self.lab_id}{broker_id}"

    def peer(self, broker_id: int) -> str:
        return f"odp{self.lab_id}{broker_id}"  # renamed eth0 once inside the namespace

    def broker_ip(self, broker_id: int) -> str:
        return f"{self.subnet}.{BROKER_HOST_OFFSET + broker_id}"

    def to_json(self) -> dict[str, Any]:
        return {"lab_id": self.lab_id, "subnet": self.subnet,
                "broker_ids": list(self.broker_ids),
                "zookeeper_ports": list(self.zookeeper_ports)}  # fmt: skip

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> LabSpec:
        return cls(str(raw["lab_id"]), str(raw["subnet"]), [int(b) for b in raw["broker_ids"]],
                   [int(p) for p in raw.get("zookeeper_ports", [])])  # fmt: skip


class NetLab:
    """One cluster's namespaces, veths, bridge and faults (see the module docstring)."""

    def __init__(self, spec: LabSpec, run: Runner = run_command) -> None:
        self.spec = spec
        self._run = run

    @classmethod
    def plan(
        cls, key: str, broker_ids: Iterable[int], zookeeper_ports: Iterable[int] = (),
        run: Runner = run_command,
    ) -> NetLab:  # fmt: skip
        """A lab for the cluster named by `key` (its directory), on a subnet free right now."""
        ident = lab_id(key)
        routes = run(["ip", "-4", "-o", "route", "show"]).stdout
        routed = routed_networks(routes, ignore_device=f"odb{ident}")  # our own stale bridge
        spec = LabSpec(ident, pick_subnet(ident, routed), list(broker_ids), list(zookeeper_ports))
        return cls(spec, run)

    # ----- commands ----------------------------------------------------------------------------

    def _must(self, *args: str) -> str:
        done = self._run(list(args))
        if done.returncode != 0:
            raise NetLabError(_failed(done))
        return done.stdout

    def _ok(self, *args: str) -> bool:
        return self._run(list(args)).returncode == 0

    def _in(self, broker_id: int, *args: str) -> list[str]:
        return ["ip", "netns", "exec", self.spec.namespace(broker_id), *args]

    def exec_prefix(self, broker_id: int) -> list[str]:
        """Put before a command to run it inside the broker's namespace (`ip netns exec` execs,
        so the PID of the process started is the command's own)."""
        self._known(broker_id)
        return ["ip", "netns", "exec", self.spec.namespace(broker_id)]

    def _known(self, broker_id: int) -> None:
        if broker_id not in self.spec.broker_ids:
            ids = ", ".join(map(str, self.spec.broker_ids))
            raise NetLabError(f"no broker {broker_id} in the network lab (brokers: {ids})")

    # ----- setup and teardown ------------------------------------------------------------------

    def setup(self) -> None:
        """Create what is missing: bridge, then per broker namespace, veth, addresses, chains."""
        require_root()
        s = self.spec
        if not self._ok("ip", "link", "show", s.bridge):
            self._must("ip", "link", "add", s.bridge, "type", "bridge")
        if f"{s.bridge_ip}/24" not in self._must("ip", "-4", "-o", "addr", "show", "dev", s.bridge):
            self._must("ip", "addr", "add", f"{s.bridge_ip}/24", "dev", s.bridge)
        self._must("ip", "link", "set", s.bridge, "up")
        for b in s.broker_ids:
            self._setup_broker(b)
        for port in s.zookeeper_ports:
            self._forward(port)

    def _setup_broker(self, b: int) -> None:
        s = self.spec
        ns = s.namespace(b)
        if not self._ok("ip", "netns", "pids", ns):
            self._must("ip", "netns", "add", ns)
        if not self._ok("ip", "-n", ns, "link", "show", "eth0"):
            self._ok("ip", "link", "del", s.veth(b))  # a half-made pair from a crashed setup
            self._must("ip", "link", "add", s.veth(b), "type", "veth", "peer", "name", s.peer(b))
            self._must("ip", "link", "set", s.peer(b), "netns", ns)
            self._must("ip", "-n", ns, "link", "set", s.peer(b), "name", "eth0")
        self._must("ip", "link", "set", s.veth(b), "master", s.bridge, "up")
        if f"{s.broker_ip(b)}/24" not in self._must("ip", "-n", ns, "-4", "-o", "addr", "show"):
            self._must("ip", "-n", ns, "addr", "add", f"{s.broker_ip(b)}/24", "dev", "eth0")
        self._must("ip", "-n", ns, "link", "set", "eth0", "up")
        self._must("ip", "-n", ns, "link", "set", "lo", "up")
        self._must("ip", "-n", ns, "route", "replace", "default", "via", s.bridge_ip)
        for chain, hook in ((CHAIN_IN, "INPUT"), (CHAIN_OUT, "OUTPUT")):
            if not self._ok(*self._in(b, "iptables", "-S", chain)):
                self._must(*self._in(b, "iptables", "-N", chain))
            if not self._ok(*self._in(b, "iptables", "-C", hook, "-j", chain)):
                self._must(*self._in(b, "iptables", "-A", hook, "-j", chain))

    def _dnat(self, port: int) -> list[str]:
        s = self.spec
        return ["PREROUTING", "-i", s.bridge, "-d", s.bridge_ip, "-p", "tcp", "--dport",
                str(port), "-j", "DNAT", "--to-destination", f"127.0.0.1:{port}"]  # fmt: skip

    def _forward(self, port: int) -> None:
        """Brokers reach 127.0.0.1:port of the root namespace at bridge_ip:port."""
        self._must("sysctl", "-q", "-w", f"net.ipv4.conf.{self.spec.bridge}.route_localnet=1")
        if not self._ok("iptables", "-t", "nat", "-C", *self._dnat(port)):
            self._must("iptables", "-t", "nat", "-A", *self._dnat(port))

    def forward_zookeeper(self, port: int) -> None:
        """Forward one more loopback ZooKeeper port (recorded in the spec)."""
        if port not in self.spec.zookeeper_ports:
            self.spec.zookeeper_ports.append(port)
        self._forward(port)

    def teardown(self) -> None:
        """Delete the DNAT rules, namespaces, veths and bridge; whatever is already gone is fine.
        Every step runs whatever the others did; then one NetLabError names each failed step, a
        line each. Processes still inside a namespace keep it alive until they exit."""
        require_root()
        failures = []
        for what, step in self._teardown_steps():
            try:
                step()
            except NetLabError as exc:
                failures.append(f"{what}: {exc.message}")
        if failures:
            lines = "".join(f"\n  {line}" for line in failures)
            raise NetLabError(f"network lab {self.spec.bridge} was not wholly torn down:{lines}")

    def _teardown_steps(self) -> list[tuple[str, Callable[[], object]]]:
        s = self.spec
        steps: list[tuple[str, Callable[[], object]]] = [
            (f"the DNAT rule of port {port}", partial(self._undo_dnat, port))
            for port in s.zookeeper_ports
        ]
        for b in s.broker_ids:
            ns = s.namespace(b)
            steps.append((f"namespace {ns}", partial(
                self._delete_if_there, ["ip", "netns", "pids", ns], ["ip", "netns", "del", ns]
            )))  # fmt: skip
            # gone with the namespace, unless orphaned
            steps.append((f"veth {s.veth(b)}", partial(self._delete_link, s.veth(b))))
        steps.append((f"bridge {s.bridge}", partial(self._delete_link, s.bridge)))
        return steps

    def _delete_if_there(self, check: list[str], delete: list[str]) -> bool:
        """Run `delete` if `check` succeeds (the thing exists). A failed delete is an error only
        if the thing is still there: the kernel takes a deleted namespace's veth away on its
        own, a moment later. True when there was something to delete."""
        if not self._ok(*check):
            return False
        done = self._run(delete)
        if done.returncode != 0 and self._ok(*check):
            raise NetLabError(_failed(done))
        return True

    def _delete_link(self, name: str) -> bool:
        return self._delete_if_there(["ip", "link", "show", name], ["ip", "link", "del", name])

    def _undo_dnat(self, port: int) -> None:
        check = ["iptables", "-t", "nat", "-C", *self._dnat(port)]
        delete = ["iptables", "-t", "nat", "-D", *self._dnat(port)]
        for _ in range(DNAT_DUPLICATES_MAX):
            if not self._delete_if_there(check, delete):
                return
        raise NetLabError(f"still there after {DNAT_DUPLICATES_MAX} deletes")

    def exists(self) -> bool:
        return self._ok("ip", "link", "show", self.spec.bridge)

    # ----- faults ------------------------------------------------------------------------------

    def isolate(self, broker_id: int) -> None:
        """Cut the broker from everything: peers, ZooKeeper, clients (a pulled cable)."""
        self._apply(broker_id, "isolate")

    def cut_zookeeper(self, broker_id: int) -> None:
        """Cut the broker from ZooKeeper only; peers and clients still reach it."""
        self._apply(broker_id, "cut_zookeeper")

    def heal(self, broker_id: int) -> None:
        """Remove the broker's fault (idempotent)."""
        require_root()
        self._known(broker_id)
        for chain in (CHAIN_IN, CHAIN_OUT):
            self._must(*self._in(broker_id, "iptables", "-F", chain))

    def heal_all(self) -> None:
        for b in self.spec.broker_ids:
            self.heal(b)

    def fault(self, broker_id: int) -> str | None:
        """The fault in place on the broker: "isolate", "cut_zookeeper" or None."""
        require_root()
        self._known(broker_id)
        return fault_from_rules(self._must(*self._in(broker_id, "iptables", "-S", CHAIN_OUT)))

    def _apply(self, broker_id: int, fault: str) -> None:
        rules = fault_rules(fault, self.spec.bridge_ip, self.spec.zookeeper_ports)
        if fault == "cut_zookeeper" and not rules:
            raise NetLabError("the lab forwards no ZooKeeper port: nothing to cut")
        self.heal(broker_id)
        for rule in rules:
            self._must(*self._in(broker_id, "iptables", *rule))


def _failed(done: subprocess.CompletedProcess[str]) -> str:
    """One line for a failed command: the command and the last line it printed."""
    err = (done.stderr or done.stdout or "").strip().splitlines()
    return f"`{' '.join(done.args)}` failed: {err[-1] if err else done.returncode}"
