"""The console that `odradek cluster up` starts beside a local cluster, and `cluster down` stops.

`start_console(cluster)` runs `python -m deploy.cli console --dir D --port P` in its own
session (a Ctrl-C at the terminal does not reach it), output appended to D/console.log, waits
(bounded) until it answers /api/health, and records its PID and port in the cluster's state
(`LocalCluster.set_console`). `cluster down` stops it by that PID, once /proc/<pid>/cmdline
still names the console and the directory (PIDs are reused): deploy/processes.py's
`stop_console`, below the cluster, which this module imports.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from deploy.cluster import ClusterError, LocalCluster
from deploy.processes import STARTED_CONSOLES, free_port

READY_TIMEOUT_S = 20.0
LOG_FILE = "console.log"


def console_url(host: str, port: int) -> str:
    return f"http://{host}:{port}/"


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "api/health", timeout=1.0) as resp:
            return bool(resp.status == 200)
    except OSError:
        return False


def start_console(
    cluster: LocalCluster, port: int = 0, host: str = "127.0.0.1",
    hanging_after_ms: int | None = None,
) -> str:  # fmt: skip
    """Start the console for `cluster` in the background; its URL once it answers.
    `hanging_after_ms`: the console's --hanging-after-ms (None: its default)."""
    port = port or free_port(host)
    root = Path(__file__).resolve().parent.parent.parent
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(root), env.get("PYTHONPATH")) if p)
    cmd = [sys.executable, "-m", "deploy.cli", "console", "--dir", str(cluster.dir),
           "--host", host, "--port", str(port)]  # fmt: skip
    if hanging_after_ms is not None:
        cmd += ["--hanging-after-ms", str(hanging_after_ms)]
    if cluster.client_properties_path is not None:  # secure: asks a login, reads as that user
        cmd += ["--command-config", str(cluster.client_properties_path)]
    with open(cluster.dir / LOG_FILE, "ab") as log:
        child = subprocess.Popen(
            cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True, env=env, cwd=cluster.dir,
        )  # fmt: skip
    STARTED_CONSOLES[child.pid] = child
    cluster.set_console(child.pid, port)
    url = console_url(host, port)
    deadline = time.monotonic() + READY_TIMEOUT_S
    while not _answers(url):
        if child.poll() is not None:
            raise ClusterError(f"the console exited with code {child.returncode} "
                               f"(see {cluster.dir / LOG_FILE})")  # fmt: skip
        if time.monotonic() > deadline:
            raise ClusterError(f"the console did not answer at {url} in time")
        time.sleep(0.1)
    return url
