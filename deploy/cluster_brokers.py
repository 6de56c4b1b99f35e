"""The local cluster's broker processes: started, signalled and stopped by PID, and their ports.

`BrokerProcesses` keeps the brokers this process started (their `Popen`s, so that they are
reaped and an exit code can be told) and acts on the `BrokerProc` records of the state file:

- `state(proc)`: "alive", "paused" or "dead", from /proc; a recorded PID counts as the broker's
  only while /proc/<pid>/cmdline still names its log dir (PIDs are reused), and a child of ours
  that has exited is dead even before it is reaped.
- `spawn(proc, cmd, log, cwd)`: runs `cmd` in its own session (a Ctrl-C at the terminal does
  not reach it), stdout and stderr appended to `log`, and records its PID in `proc`.
- `kill(proc, sig)`, `resume(proc)`: SIGKILL / SIGTERM / SIGSTOP, SIGCONT, each waited for
  with a deadline (`KILL_TIMEOUT_S`, `STOP_TIMEOUT_S` for SIGTERM).
- `fail_if_dead(proc, log)`, `port_was_taken(proc, log)`: why a broker is not there.
- `stop(brokers)`: SIGTERM (and SIGCONT, for a paused one) to all, SIGKILL to those still
  there after `STOP_TIMEOUT_S`.

`broker_command` is a broker's command line (`python -m deploy.cli broker ...`), and
`pick_ports` / `free_ports` choose the ports brokers listen on.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterable
from pathlib import Path

from deploy.cluster_state import BrokerProc, ClusterError
from deploy.processes import cmdline, free_port, port_in_use, process_state, wait_until

STOP_TIMEOUT_S = 10.0  # SIGTERM, then SIGKILL after this long
KILL_TIMEOUT_S = 5.0
SIGNALS = {"KILL": signal.SIGKILL, "TERM": signal.SIGTERM, "STOP": signal.SIGSTOP}
PROJECT_ROOT = Path(__file__).resolve().parent.parent

Progress = Callable[[str], None]


PORT_ERROR_LINES = 20  # how far back from the end of its log a broker's bind error is looked for


def log_tail(path: Path, lines: int = 3) -> str:
    try:
        text = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return " | ".join(line.strip() for line in text[-lines:])


def check_signal(sig: str) -> str:
    """KILL, TERM or STOP, in any case, as its upper-case name."""
    if sig.upper() not in SIGNALS:
        raise ClusterError(f"unknown signal {sig!r} (choose from KILL, TERM, STOP)")
    return sig.upper()


def pick_ports(host: str, count: int, base_port: int | None) -> list[int]:
    """`count` ports: free ones, or consecutive from `base_port` (all of which must be free)."""
    if base_port is None:
        return free_ports(host, count, set())
    ports = [base_port + i for i in range(count)]
    busy = [p for p in ports if port_in_use(host, p)]
    if busy:
        raise ClusterError(f"port(s) already in use: {', '.join(map(str, busy))}")
    return ports


def free_ports(host: str, count: int, used: set[int]) -> list[int]:
    """`count` distinct free ports, none in `used` (which gets them too)."""
    ports: list[int] = []
    while len(ports) < count:
        port = free_port(host)
        if port not in used:
            ports.append(port)
            used.add(port)
    return ports


def broker_command(
    proc: BrokerProc, connect: str, config: Path, host: str, scheme: str
) -> list[str]:
    """`python -m deploy.cli broker ...` for one broker: `connect` is ZooKeeper as the broker
    reaches it, `config` its settings file, `host` and `scheme` its Kafka listener's (named on
    the command line unless it has listeners of its own, which are in its file)."""
    cmd = [
        sys.executable, "-m", "deploy.cli", "broker",
        "--id", str(proc.id), "--port", str(proc.port), "--log-dir", proc.log_dir,
        "--zookeeper", connect, "--config", str(config),
    ]  # fmt: skip
    for extra in proc.extra_log_dirs:
        cmd += ["--log-dir", extra]
    if proc.kafka_port and not proc.listener_ports:  # listeners of its own: in its file
        cmd += ["--listeners", f"{scheme}://{host}:{proc.kafka_port}"]
    if proc.metrics_port:
        cmd += ["--metrics-port", str(proc.metrics_port)]
    if proc.registry_port:
        cmd += ["--schema-registry-port", str(proc.registry_port)]
    return cmd


class BrokerProcesses:
    """The broker processes of one cluster, by their recorded PIDs (see the module docstring)."""

    def __init__(self, progress: Progress) -> None:
        self._progress = progress
        self._children: dict[int, subprocess.Popen[bytes]] = {}  # children of this process

    def state(self, proc: BrokerProc) -> str:
        child = self._children.get(proc.id)
        if child is not None and child.pid == proc.pid and child.poll() is not None:
            return "dead"
        if proc.pid <= 0 or process_state(proc.pid) == "dead":
            return "dead"
        if proc.log_dir not in cmdline(proc.pid):
            return "dead"  # the PID now belongs to someone else
        return process_state(proc.pid)

    def exit_code(self, proc: BrokerProc) -> int | None:
        """The exit code of a broker this process started and that has exited, else None."""
        child = self._children.get(proc.id)
        return child.poll() if child is not None and child.pid == proc.pid else None

    def fail_if_dead(self, proc: BrokerProc, log: Path) -> None:
        """ClusterError, with the last lines of its log, when the broker is dead."""
        if self.state(proc) != "dead":
            return
        code = self.exit_code(proc)
        tail = log_tail(log)
        how = "died" if code is None else f"exited with code {code}"
        raise ClusterError(f"broker {proc.id} {how} (see {log})" + (f": {tail}" if tail else ""))

    def port_was_taken(self, proc: BrokerProc, log: Path) -> bool:
        """Dead, and its start-up error near the end of its log "address already in use" (a
        broker that had registered logs its controlled shutdown's lines after it)."""
        if self.state(proc) != "dead":
            return False
        return "address already in use" in log_tail(log, PORT_ERROR_LINES).lower()

    def spawn(self, proc: BrokerProc, cmd: list[str], log: Path, cwd: Path) -> int:
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        path = env.get("PYTHONPATH")
        env["PYTHONPATH"] = f"{PROJECT_ROOT}{os.pathsep}{path}" if path else str(PROJECT_ROOT)
        with open(log, "ab") as out:
            child = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env=env,
                cwd=cwd,
            )
        self._children[proc.id] = child
        proc.pid = child.pid
        return child.pid

    def reap(self, broker_id: int) -> None:
        child = self._children.pop(broker_id, None)
        if child is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.wait(timeout=KILL_TIMEOUT_S)

    def kill(self, proc: BrokerProc, sig: str) -> None:
        """Send SIGKILL, SIGTERM or SIGSTOP to one broker and wait until it takes effect."""
        broker_id = proc.id
        sig = check_signal(sig)
        now = self.state(proc)
        if now == "dead":
            raise ClusterError(f"broker {broker_id} is not running")
        if now == "paused" and sig == "STOP":
            raise ClusterError(f"broker {broker_id} is already paused")
        os.kill(proc.pid, SIGNALS[sig])
        if sig == "STOP":
            if not wait_until(lambda: self.state(proc) == "paused", KILL_TIMEOUT_S):
                raise ClusterError(f"broker {broker_id} (pid {proc.pid}) did not pause")
            self._progress(f"broker {broker_id} (pid {proc.pid}) paused")
            return
        if now == "paused":
            os.kill(proc.pid, signal.SIGCONT)  # a stopped process acts on SIGTERM only once resumed
        timeout_s = KILL_TIMEOUT_S if sig == "KILL" else STOP_TIMEOUT_S
        done = wait_until(lambda: self.state(proc) == "dead", timeout_s)
        if not done:
            raise ClusterError(f"broker {broker_id} (pid {proc.pid}) did not exit after SIG{sig}")
        self.reap(broker_id)
        self._progress(f"broker {broker_id} (pid {proc.pid}) stopped by SIG{sig}")

    def resume(self, proc: BrokerProc) -> None:
        os.kill(proc.pid, signal.SIGCONT)
        wait_until(lambda: self.state(proc) != "paused", KILL_TIMEOUT_S)
        self._progress(f"broker {proc.id} (pid {proc.pid}) resumed")

    def stop(self, brokers: Iterable[BrokerProc]) -> None:
        brokers = list(brokers)
        running = [b for b in brokers if self.state(b) != "dead"]
        for b in running:
            self._progress(f"stopping broker {b.id} (pid {b.pid})")
            with contextlib.suppress(ProcessLookupError):
                os.kill(b.pid, signal.SIGTERM)
                os.kill(b.pid, signal.SIGCONT)  # a paused broker handles SIGTERM once resumed

        def all_dead() -> bool:
            return all(self.state(b) == "dead" for b in running)

        if not wait_until(all_dead, STOP_TIMEOUT_S, 0.1):
            for b in running:
                if self.state(b) != "dead":
                    self._progress(f"broker {b.id} ignored SIGTERM; sending SIGKILL")
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(b.pid, signal.SIGKILL)
            wait_until(all_dead, KILL_TIMEOUT_S, 0.1)
        for b in brokers:
            self.reap(b.id)
