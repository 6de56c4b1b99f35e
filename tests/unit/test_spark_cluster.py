"""deploy/spark_cluster.py without Spark: its record of a cluster read back, the settings a
session on it gets, which process is a task's executor, and that a PID counts as a daemon only
while its command line names the daemon's properties file (real daemons: tests/spark/
test_standalone.py)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

from deploy.spark_cluster import (
    EXECUTOR_CLASS,
    Daemon,
    SparkCluster,
    app_conf,
    executor_of,
    read_state,
    write_state,
)

# an "executor": a process whose command line names the executor class, with a child (its
# Python worker) whose PID it prints
EXECUTOR = (
    "import subprocess, sys, time\n"
    "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
    "print(child.pid, flush=True)\n"
    "time.sleep(60)"
)


def test_the_record_reads_back_and_a_session_gets_an_executor_per_worker(tmp_path: Path) -> None:
    workers = [Daemon("worker-1", 11, 7078, 8081), Daemon("worker-2", 12, 7079, 8082)]
    cluster = SparkCluster(tmp_path, Daemon("master", 10, 7077, 8080), workers, 1, "1g")
    write_state(cluster)
    assert read_state(tmp_path) == cluster
    assert read_state(tmp_path / "none") is None
    conf = app_conf(cluster, "/py")
    assert conf["spark.master"] == "spark://127.0.0.1:7077"
    assert (conf["spark.executor.cores"], conf["spark.cores.max"]) == ("1", "2")
    assert conf["spark.pyspark.python"] == "/py"
    # this process is no daemon of the cluster, whatever PID the record holds
    assert not cluster.is_running(Daemon("master", os.getpid(), 1, 2))


def test_a_tasks_executor_is_the_executor_jvm_above_its_python_worker() -> None:
    executor = subprocess.Popen([sys.executable, "-c", EXECUTOR, EXECUTOR_CLASS],
                                stdout=subprocess.PIPE)  # fmt: skip
    assert executor.stdout is not None
    worker = int(executor.stdout.readline())
    try:
        assert executor_of(worker) == executor.pid
        assert executor_of(executor.pid) == executor.pid
        assert executor_of(os.getpid()) is None  # no executor above the test
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(worker, signal.SIGKILL)
        executor.kill()
        executor.wait(timeout=10)
        executor.stdout.close()
