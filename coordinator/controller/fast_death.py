"""Fast death detection: a broker whose ports refuse connections is dead, now.

How it works: the controller's channel (coordinator/controller/channel.py) keeps a connection open
to every live broker. When one drops or cannot be opened, the channel calls
`DeathProber.suspect(broker)`; the prober (at most one probe in flight per broker) connects
afresh to every endpoint the broker registered in ZooKeeper (its native port and its Kafka
port) and classifies each attempt (`Outcome`). `is_proof_of_death` is the pure decision: only
when *every* endpoint answered ECONNREFUSED is the broker dead. The prober then hands the
controller the broker id and the registration (its czxid) it judged; the controller's
BROKER_PROBED_DEAD event remembers `{broker id: czxid}` as probed dead and runs the ordinary
BROKER_CHANGE path, in which `without_probed_dead` removes that registration from the live set
exactly as if its znode had disappeared: new leaders from the ISR, ISR shrinks, LeaderAndIsr
and UpdateMetadata batched per broker (coordinator/controller/core.py).

Why a refusal is proof and nothing else is: ECONNREFUSED means a host answered the SYN with a
reset (or an ICMP port-unreachable): the machine is up and no socket listens on that port. A
broker process listens on its ports from before it registers until its shutdown; when it dies
(SIGKILL, crash, OOM kill) the kernel closes its sockets at once, so its ports refuse from that
moment. A process that is paused (SIGSTOP, a long GC-like stall, a swapped-out machine) keeps
its listening sockets: the kernel still completes handshakes into the accept backlog, and once
the backlog is full it drops SYNs (Linux never resets them; tcp_abort_on_overflow only resets
after the handshake, which the prober sees as a connection made), so a paused broker's port
never refuses; that is why "refused while paused" cannot happen, and a hang stays with
ZooKeeper's session expiry (and the broker's own zk_fence). A time-out, EHOSTUNREACH,
ENETUNREACH (a partition with iptables DROP, a dead machine) are not proof either: the
process may well be running on the other side; those also wait for the session to expire.
A registration that changed since the probe started (a restarted broker registered again,
new czxid) is not touched: only the czxid that was judged is marked.

Why acting on it is safe even if the process is in fact alive (its listeners were closed but
it runs on, e.g. in the middle of a shutdown, or a firewall that REJECTs instead of DROPs):
that is the zombie case Kafka already survives when a ZooKeeper session expires under a live
broker, and the same fences hold. (1) The controller writes the new leader and ISR with leader
epoch + 1, conditionally on the state znode version; the old leader's own ISR changes are
conditional on the version it knows, so it can no longer change the ISR in ZooKeeper (its
ISR writer sees the newer leader and resigns). (2) Every follower gets LeaderAndIsr with the
new epoch, stops fetching from the old leader and rejects its older epoch; an acks=all write is
acknowledged only once every ISR member fetched it, and the new leader was in that ISR, so the
old leader's high watermark cannot pass what the new leader already holds: nothing it
acknowledges afterwards is lost, and it acknowledges nothing new that needs a follower. (3) An
old leader whose ISR had shrunk to itself leaves the partition offline (leader -1, ISR kept):
no unclean election unless the topic allows it, as with session expiry. (4) Clients reach the
old leader only over connections it accepted before (its listeners are closed); acks=1 writes
there may be lost, as with any zombie (documented in broker/zk_fence.py). Liveness: a broker
wrongly marked dead is back once its registration changes (restart, session expiry and
re-registration, or its own zk_fence bounce); until then it leads nothing.

The controller itself: every other broker runs `watch_controller` while another broker holds
/controller: it keeps a TCP connection open to the controller's registered native endpoint and,
when that drops or cannot be opened, probes the controller's endpoints the same way. On proof
it deletes /controller, conditionally on the znode it judged (same czxid, its version) and on
/controller_epoch being unchanged since it read it (one transaction): several brokers judge the
same death, and the first may delete the node and win the election before another's delete,
whose version check alone would pass on the winner's new node. So the
election (coordinator/controller/elector.py) runs at once instead of after the session timeout. The
new controller bumps /controller_epoch: an old controller that is in fact alive is fenced by
that epoch in every ZooKeeper write (coordinator/controller/state_writer.py) and at every broker
(stale controller epoch). The new controller still sees the dead broker's registration, but its
channel cannot connect to it, so the probe above removes it from the live set within
milliseconds of starting.

A broker restarted before its old session expired: coordinator/cluster/registration.py replaces the
stale registration (same host and port, another session) since the new process holds that
port, which proves the old one no longer listens; the new znode has a new czxid, which the
controller treats as a return even if it had marked the old czxid dead (`without_probed_dead`
forgets entries whose registration is gone or changed).
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping

from coordinator.cluster import zk_paths as paths
from coordinator.cluster.zk import OpCheck, OpDelete, ZkClient, ZkError
from coordinator.cluster.zk_paths import BrokerRegistration, ControllerInfo
from coordinator.controller.context import LiveBroker

log = logging.getLogger(__name__)

PROBE_TIMEOUT_S = 1.0  # a probe that takes longer proves nothing
WATCH_BACKOFF_MIN_S = 0.05
WATCH_BACKOFF_MAX_S = 2.0
Endpoint = tuple[str, int]


class Outcome(enum.Enum):
    ACCEPTED = "accepted"  # something listens: alive (or a new incarnation)
    REFUSED = "refused"  # the host answered, nothing listens: no process
    TIMEOUT = "timeout"  # no answer: paused, partitioned or a dead machine; not proof
    UNREACHABLE = "unreachable"  # no route, network down, bad address: not proof


def classify(error: BaseException | None) -> Outcome:
    """One connection attempt's outcome from the exception it raised (None: it connected)."""
    if error is None:
        return Outcome.ACCEPTED
    if isinstance(error, ConnectionRefusedError):
        return Outcome.REFUSED
    if isinstance(error, TimeoutError):
        return Outcome.TIMEOUT
    return Outcome.UNREACHABLE


def is_proof_of_death(outcomes: Iterable[Outcome]) -> bool:
    """Dead only if there was at least one endpoint and every one of them refused."""
    seen = list(outcomes)
    return bool(seen) and all(o is Outcome.REFUSED for o in seen)


def endpoints(broker: LiveBroker) -> list[Endpoint]:
    """Every endpoint a broker registered: the native one and the Kafka one if any."""
    reg = broker.registration
    out = [(reg.host, reg.port)]
    if reg.kafka_host is not None and reg.kafka_port > 0:
        out.append((reg.kafka_host, reg.kafka_port))
    return out


def without_probed_dead(
    current: Mapping[int, LiveBroker], probed_dead: Mapping[int, int]
) -> tuple[dict[int, LiveBroker], dict[int, int]]:
    """(live brokers, probed-dead entries still in force). A registration whose czxid was
    probed dead is left out of the live set; an entry whose registration is gone or changed
    (the broker registered again) is forgotten, so the new registration counts as live."""
    kept = {b: z for b, z in probed_dead.items() if b in current and current[b].czxid == z}
    live = {b: x for b, x in current.items() if kept.get(b) != x.czxid}
    return live, kept


async def probe_endpoint(host: str, port: int, timeout_s: float = PROBE_TIMEOUT_S) -> Outcome:
    """Open one TCP connection and close it at once; the outcome of that attempt."""
    error: BaseException | None = None
    try:
        async with asyncio.timeout(timeout_s):
            _reader, writer = await asyncio.open_connection(host, port)
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
    except (OSError, TimeoutError) as exc:
        error = exc
    return classify(error)


Probe = Callable[[str, int], Awaitable[Outcome]]


class DeathProber:
    """Probes suspected brokers, one probe at a time per broker; reports proven deaths.

    `lookup(broker)` gives the registration the controller holds (None: not live, nothing to
    do); `on_dead(broker, czxid)` is called with the registration judged dead."""

    def __init__(
        self,
        lookup: Callable[[int], LiveBroker | None],
        on_dead: Callable[[int, int], None],
        probe: Probe = probe_endpoint,
    ) -> None:
        self._lookup = lookup
        self._on_dead = on_dead
        self._probe = probe
        self._tasks: dict[int, asyncio.Task[None]] = {}
        self.probes = 0  # attempts made (tests and logs)

    def suspect(self, broker_id: int) -> None:
        """The channel lost or could not open its connection to `broker_id`."""
        if broker_id in self._tasks or self._lookup(broker_id) is None:
            return
        task = asyncio.get_running_loop().create_task(self._run(broker_id))
        self._tasks[broker_id] = task
        task.add_done_callback(lambda _t: self._tasks.pop(broker_id, None))

    async def _run(self, broker_id: int) -> None:
        broker = self._lookup(broker_id)
        if broker is None:
            return
        self.probes += 1
        outcomes = await asyncio.gather(*(self._probe(h, p) for h, p in endpoints(broker)))
        log.info("broker %d probed: %s", broker_id, ", ".join(o.value for o in outcomes))
        if is_proof_of_death(outcomes):
            self._on_dead(broker_id, broker.czxid)

    async def wait_idle(self, timeout_s: float) -> None:
        """Wait until no probe is in flight (tests)."""
        async with asyncio.timeout(timeout_s):
            while self._tasks:
                await asyncio.gather(*self._tasks.values(), return_exceptions=True)

    async def close(self) -> None:
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task


Sleep = Callable[[float], Awaitable[None]]


async def _hold_open(host: str, port: int, timeout_s: float = PROBE_TIMEOUT_S) -> None:
    """Open a connection and return once it closes (EOF or error); raises when it cannot be
    opened. Nothing is ever written: the peer sees an idle client."""
    async with asyncio.timeout(timeout_s):
        reader, writer = await asyncio.open_connection(host, port)
    try:
        while await reader.read(65536):
            pass  # nothing is expected; anything read is ignored
    except OSError:
        pass
    finally:
        writer.close()


async def watch_controller(
    zk: ZkClient,
    controller_id: int,
    czxid: int,
    probe: Probe = probe_endpoint,
    sleep: Sleep = asyncio.sleep,
) -> bool:
    """Run while broker `controller_id` holds /controller (created at `czxid`): when its
    ports refuse connections, delete that /controller node. True if it was deleted by us."""
    try:
        data, stat = await zk.get_with_stat(paths.broker_path(controller_id))
    except ZkError:
        return False  # not registered: ZooKeeper is already the judge
    broker = LiveBroker(controller_id, BrokerRegistration.decode(data), stat.czxid)
    host, port = endpoints(broker)[0]
    backoff = WATCH_BACKOFF_MIN_S
    while True:
        try:
            await _hold_open(host, port)
            backoff = WATCH_BACKOFF_MIN_S  # it was open until now
        except (OSError, TimeoutError):
            pass
        outcomes = await asyncio.gather(*(probe(h, p) for h, p in endpoints(broker)))
        if is_proof_of_death(outcomes):
            return await _delete_controller(zk, controller_id, czxid)
        await sleep(backoff)
        backoff = min(backoff * 2, WATCH_BACKOFF_MAX_S)


async def _delete_controller(zk: ZkClient, controller_id: int, czxid: int) -> bool:
    """Delete /controller if it is still the node judged. A delete conditional on its version
    alone could remove a successor's node: every /controller is created at version 0, and
    another broker may delete the dead one's and win the election between our read and our
    delete (seen as two elections in a row). The winner creates its node and bumps
    /controller_epoch in one transaction (coordinator/controller/elector.py), so the delete goes in
    one transaction with a check that the epoch is still the one read before."""
    try:
        _, epoch_version = await zk.get(paths.CONTROLLER_EPOCH)
        data, stat = await zk.get_with_stat(paths.CONTROLLER)
        if stat.czxid != czxid or ControllerInfo.decode(data).broker_id != controller_id:
            return False  # another controller already
        await zk.transaction(
            [
                OpCheck(paths.CONTROLLER_EPOCH, epoch_version),
                OpDelete(paths.CONTROLLER, stat.version),
            ]
        )
    except (ZkError, ValueError):  # gone, changed, or ZooKeeper unavailable: nothing to do
        return False
    log.warning("controller %d refuses connections on every port: /controller deleted",
                controller_id)  # fmt: skip
    return True
