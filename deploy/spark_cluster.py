"""A Spark standalone cluster on this machine: one master and N workers, started from the
pyspark installation itself (no download) and stopped by their process ids.

How it works: pyspark's wheel carries Spark's jars and launch scripts, so SPARK_HOME is
pyspark's package dir (`spark_home()`). Each daemon is `bin/spark-class
org.apache.spark.deploy.master.Master` (or `...worker.Worker`); spark-class execs the JVM, so
the PID started is the daemon's. Each runs in a session of its own (its process group, which a
worker's executor JVMs share: they are its children), with a 256 MiB heap
(SPARK_DAEMON_MEMORY), bound to 127.0.0.1 on free ports (deploy/processes.py `free_port`:
below the ephemeral range, so a worker restarts on its old ports), its log in
<dir>/<name>.log and its properties file <dir>/<name>.conf. A worker's work dir (its
executors' files and logs) is <dir>/<name>/. The master's REST submission server is off: its
fixed port 6066 is one that clusters of concurrent test runs would fight over. Readiness is
read from the master's web UI, `/json/`: the master ALIVE, then every worker ALIVE at its
address, within `timeout_s`.

Each worker offers `cores` cores and `worker_memory`; an application with `app_conf(cluster)`
(executors of one core and 512 MiB, as many cores as the workers offer) gets one executor on
each worker. Workers (so their executors, and the executors' Python workers) run with
PYSPARK_PYTHON set to this interpreter, which has the project and its C extensions, and the
checkout on PYTHONPATH (Spark adds it to the Python workers' path), so tasks import
spark_connector.

The cluster is recorded in <dir>/spark-cluster.json: each daemon's PID, ports and properties
file. A daemon's command line holds its properties file's path, and every signal is sent only
after /proc/<pid>/cmdline shows it (PIDs are reused). `read_state(dir)` reattaches (the CLI
below, and the tests' sweep of leftovers, tests/fixtures/sweep.py). `stop()` SIGTERMs each
daemon's process group and SIGKILLs it after a bound. Faults for tests: `kill_worker(i)`
SIGKILLs worker i's process group (the worker and its executors: a machine lost), and
`start_worker(i)` starts it again; `executor_of(pid)` finds the executor JVM above a
process (a task's Python worker).

    python -m deploy.spark_cluster up [--dir DIR] [--workers 2]    (`make spark-cluster`)
    python -m deploy.spark_cluster status|down [--dir DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from deploy.processes import cmdline, free_port, process_state

HOST = "127.0.0.1"
STATE_FILE = "spark-cluster.json"
MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
EXECUTOR_CLASS = "org.apache.spark.executor.CoarseGrainedExecutorBackend"
DAEMON_MEMORY = "256m"  # each daemon's own heap (Spark's default is 1g)
EXECUTOR_MEMORY = "512m"
READY_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 10.0
ROOT = Path(__file__).resolve().parents[1]

# daemons this process started, by PID: kept so that they are reaped when they exit
_STARTED: dict[int, subprocess.Popen[bytes]] = {}


class SparkClusterError(Exception):
    """The cluster could not be started (no pyspark or java, a daemon died or never came up)."""


@dataclass
class Daemon:
    name: str  # "master", "worker-1", ...
    pid: int
    port: int
    web_port: int

    @property
    def address(self) -> str:
        return f"{HOST}:{self.port}"


@dataclass
class SparkCluster:
    dir: Path
    master: Daemon
    workers: list[Daemon] = field(default_factory=list)
    cores: int = 1  # per worker
    worker_memory: str = "1g"

    @property
    def master_url(self) -> str:
        return f"spark://{self.master.address}"

    @property
    def web_url(self) -> str:
        return f"http://{HOST}:{self.master.web_port}"

    def properties(self, name: str) -> Path:
        return self.dir / f"{name}.conf"

    def master_state(self) -> dict[str, Any]:
        """The master's view (its web UI's /json/: workers, applications, their cores)."""
        with urllib.request.urlopen(f"{self.web_url}/json/", timeout=5) as answer:
            state: dict[str, Any] = json.load(answer)
        return state

    def alive_workers(self) -> set[str]:
        """Addresses (host:port) of the workers the master has ALIVE."""
        try:
            workers = self.master_state()["workers"]
        except (OSError, ValueError, KeyError):
            return set()
        return {f"{w['host']}:{w['port']}" for w in workers if w.get("state") == "ALIVE"}

    def is_running(self, daemon: Daemon) -> bool:
        """Whether `daemon` still runs as the process recorded (not a reused PID)."""
        return (
            daemon.pid > 0
            and process_state(daemon.pid) != "dead"
            and str(self.properties(daemon.name)) in cmdline(daemon.pid)
        )


def spark_home() -> Path:
    """pyspark's package dir, which holds Spark's bin/ and jars/ (SparkClusterError if not)."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        raise SparkClusterError("pyspark is not installed here (pip install '.[spark]')")
    home = Path(next(iter(spec.submodule_search_locations)))
    if not (home / "bin" / "spark-class").exists() or not (home / "jars").is_dir():
        raise SparkClusterError(f"{home} has no bin/spark-class or jars/ (a pyspark without Spark)")
    return home


def app_conf(cluster: SparkCluster, python: str = sys.executable) -> dict[str, str]:
    """A SparkSession's settings for one executor of `cores` cores on each worker."""
    return {
        "spark.master": cluster.master_url,
        "spark.executor.cores": str(cluster.cores),
        "spark.cores.max": str(cluster.cores * len(cluster.workers)),
        "spark.executor.memory": EXECUTOR_MEMORY,
        "spark.driver.host": HOST,
        "spark.driver.bindAddress": HOST,
        "spark.pyspark.python": python,
    }


def _environment(home: Path) -> dict[str, str]:
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    return {
        **os.environ, "SPARK_HOME": str(home), "SPARK_LOCAL_IP": HOST,
        "SPARK_DAEMON_MEMORY": DAEMON_MEMORY, "SPARK_NO_DAEMONIZE": "1",
        "PYSPARK_PYTHON": sys.executable, "PYTHONPATH": path,
    }  # fmt: skip


def _spawn(cluster: SparkCluster, daemon: Daemon, main_class: str, args: list[str]) -> None:
    home = spark_home()
    props = cluster.properties(daemon.name)
    if not props.exists():  # a master without the REST server; quiet INFO logging is fine
        props.write_text("spark.master.rest.enabled false\n")
    command = [str(home / "bin" / "spark-class"), main_class, "--host", HOST,
               "--port", str(daemon.port), "--webui-port", str(daemon.web_port),
               "--properties-file", str(props), *args]  # fmt: skip
    with open(cluster.dir / f"{daemon.name}.log", "ab") as log:
        try:
            proc = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                cwd=cluster.dir, env=_environment(home), start_new_session=True,
            )  # fmt: skip
        except FileNotFoundError as exc:
            raise SparkClusterError(f"cannot start {daemon.name}: {exc}") from None
    _STARTED[proc.pid] = proc
    daemon.pid = proc.pid


def _wait(cluster: SparkCluster, ready: Any, daemons: list[Daemon], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not ready():
        for d in daemons:
            if not cluster.is_running(d):
                raise SparkClusterError(
                    f"Spark {d.name} exited; see {cluster.dir / (d.name + '.log')}"
                )
        if time.monotonic() > deadline:
            names = ", ".join(d.name for d in daemons) or "worker"
            raise SparkClusterError(f"Spark {names}: not ready within {timeout_s:.0f} s; see "
                                    f"the logs in {cluster.dir}")  # fmt: skip
        time.sleep(0.2)


def _master_alive(cluster: SparkCluster) -> bool:
    try:
        return cluster.master_state().get("status") == "ALIVE"
    except (OSError, ValueError):
        return False


def _spawn_worker(cluster: SparkCluster, worker: Daemon) -> None:
    work_dir = cluster.dir / worker.name
    work_dir.mkdir(exist_ok=True)
    args = ["--cores", str(cluster.cores), "--memory", cluster.worker_memory,
            "--work-dir", str(work_dir), cluster.master_url]  # fmt: skip
    _spawn(cluster, worker, WORKER_CLASS, args)


def start_worker(cluster: SparkCluster, index: int, timeout_s: float = READY_TIMEOUT_S) -> None:
    """Start worker `index` (again: on its ports, with its work dir); return once the master
    has it ALIVE. A restarted worker's old registration must be gone (DEAD) first, or the
    master refuses the new one."""
    worker = cluster.workers[index]
    _wait(cluster, lambda: worker.address not in cluster.alive_workers(), [], timeout_s)
    _spawn_worker(cluster, worker)
    write_state(cluster)
    _wait(cluster, lambda: worker.address in cluster.alive_workers(), [worker], timeout_s)


def start(
    where: Path, workers: int = 2, cores: int = 1, worker_memory: str = "1g",
    timeout_s: float = READY_TIMEOUT_S,
) -> SparkCluster:  # fmt: skip
    """A master and `workers` workers under `where`, all ALIVE; stopped again on a failure."""
    where.mkdir(parents=True, exist_ok=True)
    master = Daemon("master", 0, free_port(HOST), free_port(HOST))
    cluster = SparkCluster(where.resolve(), master, cores=cores, worker_memory=worker_memory)
    cluster.workers = [Daemon(f"worker-{i + 1}", 0, free_port(HOST), free_port(HOST))
                       for i in range(workers)]  # fmt: skip
    try:
        _spawn(cluster, master, MASTER_CLASS, [])
        write_state(cluster)
        _wait(cluster, lambda: _master_alive(cluster), [master], timeout_s)
        for worker in cluster.workers:  # the JVMs start side by side, awaited below
            _spawn_worker(cluster, worker)
        write_state(cluster)
        want = {w.address for w in cluster.workers}
        _wait(cluster, lambda: want <= cluster.alive_workers(), cluster.workers, timeout_s)
    except BaseException:
        stop(cluster)
        raise
    return cluster


def _signal_group(cluster: SparkCluster, daemon: Daemon, sig: signal.Signals) -> bool:
    if not cluster.is_running(daemon):
        return False
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(daemon.pid, sig)  # it leads its own session: the group is its and its children's
    return True


def _reap(cluster: SparkCluster, daemon: Daemon, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while process_state(daemon.pid) != "dead":
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    child = _STARTED.pop(daemon.pid, None)
    if child is not None:
        child.wait(timeout=timeout_s)
    return True


def kill_worker(cluster: SparkCluster, index: int) -> None:
    """SIGKILL worker `index` and its executors at once (a lost machine); wait until gone."""
    worker = cluster.workers[index]
    if _signal_group(cluster, worker, signal.SIGKILL):
        _reap(cluster, worker, STOP_TIMEOUT_S)


def stop(cluster: SparkCluster, timeout_s: float = STOP_TIMEOUT_S) -> None:
    """SIGTERM every daemon's process group, workers first; SIGKILL what outlives timeout_s."""
    for daemon in [*cluster.workers, cluster.master]:
        if _signal_group(cluster, daemon, signal.SIGTERM) and not _reap(cluster, daemon, timeout_s):
            _signal_group(cluster, daemon, signal.SIGKILL)
            _reap(cluster, daemon, timeout_s)


def executor_of(pid: int) -> int | None:
    """The executor JVM that `pid` (a task's Python worker) runs under, or None."""
    for _ in range(16):  # Python worker <- Python daemon <- executor: a few levels at most
        if EXECUTOR_CLASS in cmdline(pid):
            return pid
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return None
        pid = int(stat.rpartition(")")[2].split()[1])
        if pid <= 1:
            return None
    return None


def write_state(cluster: SparkCluster) -> None:
    state = {"master": asdict(cluster.master), "workers": [asdict(w) for w in cluster.workers],
             "cores": cluster.cores, "worker_memory": cluster.worker_memory}  # fmt: skip
    tmp = cluster.dir / (STATE_FILE + ".tmp")
    tmp.write_text(json.dumps(state))
    tmp.replace(cluster.dir / STATE_FILE)


def read_state(where: Path) -> SparkCluster | None:
    """The cluster recorded under `where` (None: none, or an unreadable record)."""
    try:
        raw = json.loads((where / STATE_FILE).read_text())
        return SparkCluster(
            where.resolve(), Daemon(**raw["master"]), [Daemon(**w) for w in raw["workers"]],
            int(raw["cores"]), str(raw["worker_memory"]),
        )  # fmt: skip
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _status(cluster: SparkCluster) -> str:
    lines = [f"master   {cluster.master_url}  web UI {cluster.web_url}  "
             f"{'running' if cluster.is_running(cluster.master) else 'stopped'}"]  # fmt: skip
    alive = cluster.alive_workers()
    for w in cluster.workers:
        state = "ALIVE" if w.address in alive else "running" if cluster.is_running(w) else "stopped"
        lines.append(f"{w.name} {w.address}  {cluster.cores} core(s), {cluster.worker_memory}  "
                     f"{state}")  # fmt: skip
    return "\n".join(lines)


def _submit_hint(cluster: SparkCluster) -> str:
    """The spark-submit line for the example job (spark_connector/README.md has it too)."""
    submit = Path(sys.executable).parent / "spark-submit"  # pip's, beside this interpreter
    if not submit.exists():
        submit = spark_home() / "bin" / "spark-submit"
    skip = ("spark.master", "spark.driver.host", "spark.driver.bindAddress", "spark.pyspark.python")
    conf = " ".join(f"--conf {k}={v}" for k, v in app_conf(cluster).items() if k not in skip)
    return (f"submit a job: PYSPARK_PYTHON={sys.executable} {submit} --master "
            f"{cluster.master_url} {conf} examples/spark_key_counts.py --demo 500")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m deploy.spark_cluster",
        description=(
            "A Spark standalone master and workers on 127.0.0.1, from pyspark's own installation"
        ),
    )
    parser.add_argument("command", choices=["up", "status", "down"])
    parser.add_argument("--dir", type=Path, default=Path(".spark-cluster"))
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--cores", type=int, default=1, help="cores each worker offers")
    args = parser.parse_args(argv)
    recorded = read_state(args.dir)
    running = recorded is not None and recorded.is_running(recorded.master)
    try:
        if args.command == "up":
            if running:
                assert recorded is not None
                print(f"already up (`down` first):\n{_status(recorded)}")
                return 1
            cluster = start(args.dir, args.workers, args.cores)
            print(f"{_status(cluster)}\n{_submit_hint(cluster)}")
        elif recorded is None:
            print(f"no Spark cluster recorded in {args.dir}")
            return 1
        elif args.command == "status":
            print(_status(recorded))
        else:
            stop(recorded)
            print(f"stopped the Spark cluster in {args.dir}")
    except SparkClusterError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
