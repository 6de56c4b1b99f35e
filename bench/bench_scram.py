#!/usr/bin/env python3
"""SASL SCRAM handshakes per second (issue 25), against one real broker process.

    python bench/bench_scram.py [--seconds 5] [--concurrency 1,8] [--json FILE]

A ZooKeeper and one broker of this tree start in a temporary directory; the broker has a
SASL_PLAINTEXT native listener with SCRAM-SHA-256 and SCRAM-SHA-512. A user is made with each
mechanism at Kafka's minimum (4096) and at 8192 iterations (`odradek users add`). Then, for each
(mechanism, iterations, concurrency), this process opens connections that log in
(SaslHandshake + two SaslAuthenticate, transport/sasl.py) and closes them, as fast as it can for
`--seconds`: the figure is completed logins per second. Client and broker share the machine, and
each login costs both sides one PBKDF2 of `iterations` rounds (the client's Hi(); the broker
only checks the proof, but the client's cost is on this machine too), so the figures are a
floor for a broker whose clients run elsewhere. `pure` is the same exchange in memory
(protocol/scram.py client and server), the CPU cost alone.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")
ITERATIONS = (4096, 8192)


def log(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def pure_rate(mechanism: str, iterations: int, seconds: float) -> float:
    from protocol.scram import MECHANISMS as M
    from protocol.scram import ScramClient, ScramServer, make_credential

    mech = M[mechanism]
    credential = make_credential(mech, "bench-secret", iterations)
    done, deadline = 0, time.monotonic() + seconds
    start = time.monotonic()
    while time.monotonic() < deadline:
        client, server = ScramClient(mech, "bench", "bench-secret"), ScramServer(mech)
        first = server.respond(client.client_first(), lambda _u: credential)
        client.receive_server_final(
            server.respond(client.client_final(first), lambda _u: credential)
        )
        done += 1
    return done / (time.monotonic() - start)


async def socket_rate(
    port: int, mechanism: str, user: str, seconds: float, concurrency: int
) -> float:
    from transport.connection import BrokerConnection
    from transport.security import SecurityConfig

    security = SecurityConfig(
        security_protocol="SASL_PLAINTEXT", sasl_mechanism=mechanism,
        sasl_plain_username=user, sasl_plain_password="bench-secret",
    )  # fmt: skip
    deadline = time.monotonic() + seconds
    counts = [0] * concurrency

    async def worker(i: int) -> None:
        while time.monotonic() < deadline:
            conn = await BrokerConnection.connect("127.0.0.1", port, security=security)
            await conn.close()
            counts[i] += 1

    start = time.monotonic()
    await asyncio.gather(*(worker(i) for i in range(concurrency)))
    return sum(counts) / (time.monotonic() - start)


def start_broker(where: Path, zk: str) -> tuple[subprocess.Popen[bytes], int, int]:
    from deploy.processes import free_port

    native, sasl = free_port("127.0.0.1"), free_port("127.0.0.1")
    code = (
        "import sys\nfrom broker.config import load_config\nfrom broker.daemon import run_forever\n"
        f"config = load_config(None, broker_id=1, port={native}, log_dir={str(where / 'logs')!r}, "
        f"zookeeper={zk!r}, native_listeners='PLAINTEXT://127.0.0.1:{native},"
        f"SASL_PLAINTEXT://127.0.0.1:{sasl}', inter_broker_listener_name='PLAINTEXT', "
        "sasl_enabled_mechanisms='SCRAM-SHA-256,SCRAM-SHA-512')\n"
        "sys.exit(run_forever(config))\n"
    )
    log_file = open(where / "broker.log", "ab")  # noqa: SIM115 (open while the broker runs)
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stderr=log_file)
    return proc, native, sasl


def odradek(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "deploy.cli", *args], cwd=ROOT, check=True,
                   capture_output=True, timeout=120)  # fmt: skip


def wait_for_broker(native: int, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        probe = subprocess.run(
            [sys.executable, "-m", "deploy.cli", "users", "list", "--bootstrap",
             f"127.0.0.1:{native}"], cwd=ROOT, capture_output=True, timeout=60,
        )  # fmt: skip
        if probe.returncode == 0:
            return
        if time.monotonic() > deadline:
            raise SystemExit(f"the broker did not answer: {probe.stderr.decode()[-500:]}")
        time.sleep(0.5)


def run(seconds: float, concurrencies: list[int]) -> list[dict[str, Any]]:
    from deploy.processes import free_port
    from deploy.zookeeper import start_zookeeper, stop_zookeeper

    tmp = Path(tempfile.mkdtemp(prefix="bench-scram-"))
    zk = start_zookeeper(tmp / "zk", free_port("127.0.0.1"))
    proc = None
    rows: list[dict[str, Any]] = []
    try:
        proc, native, sasl = start_broker(tmp, f"{zk.connect}/bench-scram")
        wait_for_broker(native)
        pw = tmp / "pw"
        pw.write_text("bench-secret\n")
        for mechanism in MECHANISMS:
            for iterations in ITERATIONS:
                user = f"{mechanism.lower()}-{iterations}"
                odradek("users", "add", user, "--mechanism", mechanism, "--iterations",
                        str(iterations), "--password-file", str(pw),
                        "--bootstrap", f"127.0.0.1:{native}")  # fmt: skip
                pure = pure_rate(mechanism, iterations, seconds)
                row = {"mechanism": mechanism, "iterations": iterations,
                       "pure_per_s": round(pure, 1)}  # fmt: skip
                for c in concurrencies:
                    rate = asyncio.run(socket_rate(sasl, mechanism, user, seconds, c))
                    row[f"socket_c{c}_per_s"] = round(rate, 1)
                log(json.dumps(row))
                rows.append(row)
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(30)
        stop_zookeeper(zk.pid)
        shutil.rmtree(tmp, ignore_errors=True)
    return rows


def render(rows: list[dict[str, Any]], concurrencies: list[int]) -> str:
    head = (
        "| mechanism | iterations | in memory /s | "
        + " | ".join(f"over a socket, {c} at once /s" for c in concurrencies)
        + " |"
    )
    sep = "|" + "---|" * (3 + len(concurrencies))
    lines = [head, sep]
    for r in rows:
        cells = [r["mechanism"], str(r["iterations"]), str(r["pure_per_s"])]
        cells += [str(r[f"socket_c{c}_per_s"]) for c in concurrencies]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=5.0, help="per case (default 5)")
    ap.add_argument("--concurrency", default="1,8", help="logins at once, a comma list")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    concurrencies = [int(c) for c in args.concurrency.split(",") if c.strip()]
    rows = run(args.seconds, concurrencies)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    print(render(rows, concurrencies))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
