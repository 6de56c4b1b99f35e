#!/usr/bin/env python3
"""Security costs (issue 25): TLS against plaintext on one broker, and SCRAM logins per second.

    python bench/bench_security.py [--messages N] [--rounds R] [--seconds S] [--json FILE]

A ZooKeeper and one broker of this tree start in a temporary directory. The broker has three
Kafka listeners: PLAIN (PLAINTEXT), TLS (SSL, no client certificate) and SCRAM (SASL_SSL with
SCRAM-SHA-512; user `bench` made in /config/users before the broker starts), certificates from
deploy/certs.py. The same broker serves every case, so the ratios compare listeners only.

- `tls`: confluent-kafka produces --messages records of 100 B (acks=1, linger 5 ms) to a
  1-partition topic, then consumes them from the earliest by assignment, over PLAIN and over
  TLS, alternating, --rounds rounds. A case's figure is its median round (records/s); the
  ratio is TLS / plaintext. (The native client's TLS figure is not measured yet, see
  docs/benchmarks.md.)
- `scram`: for --seconds, confluent-kafka clients are made one after another, each logging
  in over SCRAM (TLS handshake + SaslHandshake + two SaslAuthenticate) and asking for
  metadata, then closed: logins per second. The same loop over PLAIN (no TLS, no SASL) gives
  the client's own cost per connection. The native client's SCRAM logins are
  bench/bench_scram.py's (part `scram`, run by bench_cluster.py beside this one).

Client and broker share the machine: the figures are what one laptop does, not a broker's
ceiling. Prints a Markdown table; writes every raw figure to --json.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

USER, PASSWORD = "bench", "bench-secret-not-for-production"
START_TIMEOUT_S = 60.0
VALUE = b"x" * 100


def log(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


class Broker:
    """ZooKeeper + one broker of this tree with PLAIN, TLS and SCRAM Kafka listeners."""

    def __init__(self, where: Path) -> None:
        from deploy.certs import issue, make_ca
        from deploy.processes import free_port
        from deploy.zookeeper import start_zookeeper

        self.where = where
        ca = make_ca(where / "certs", "ca")
        cert = issue(ca, where / "certs", "broker", common_name="broker")
        self.ca_path = str(ca.cert_path)
        keystore = where / "broker.pem"
        keystore.write_bytes(cert.cert_path.read_bytes() + cert.key_path.read_bytes())
        self.zk = start_zookeeper(where / "zookeeper", free_port())
        self._write_user()
        self.ports = {n: free_port() for n in ("INTERNAL", "PLAIN", "TLS", "SCRAM")}
        settings = {
            "broker_id": 1,
            "host": "127.0.0.1",
            "port": self.ports["INTERNAL"],
            "log_dir": str(where / "logs"),
            "zookeeper": self.zk.connect + "/bench",
            "listeners": ",".join(
                f"{n}://127.0.0.1:{self.ports[n]}" for n in ("PLAIN", "TLS", "SCRAM")
            ),
            "native_listeners": f"INTERNAL://127.0.0.1:{self.ports['INTERNAL']}",
            "listener_security_protocol_map": (
                "INTERNAL:PLAINTEXT,PLAIN:PLAINTEXT,TLS:SSL,SCRAM:SASL_SSL"
            ),
            "inter_broker_listener_name": "INTERNAL",
            "ssl_keystore_location": str(keystore),
            "ssl_truststore_location": self.ca_path,
            "sasl_enabled_mechanisms": "SCRAM-SHA-512",
        }
        config = where / "broker.toml"
        config.write_text("".join(f"{k} = {json.dumps(v)}\n" for k, v in settings.items()))
        code = (
            "import sys\nfrom pathlib import Path\nfrom broker.config import load_config\n"
            "from broker.daemon import run_forever\n"
            f"sys.exit(run_forever(load_config(Path({str(config)!r}))))\n"
        )
        self.log_path = where / "broker.log"
        with open(self.log_path, "ab") as out:
            self.proc = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=out,
                                         stderr=out)  # fmt: skip
        self._wait_ready()

    def _write_user(self) -> None:
        from kazoo.client import KazooClient

        from coordinator.cluster.scram_credentials import encode_user_config, user_path
        from protocol.scram import make_credential, mechanism

        mech = mechanism("SCRAM-SHA-512")
        credential = make_credential(mech, PASSWORD, mech.min_iterations)
        zk = KazooClient(hosts=self.zk.connect, timeout=10)
        zk.start(timeout=10)
        try:
            data = encode_user_config({"SCRAM-SHA-512": credential.to_string()})
            zk.create("/bench" + user_path(USER), data, makepath=True)
        finally:
            zk.stop()
            zk.close()

    def _wait_ready(self) -> None:
        from confluent_kafka.admin import AdminClient

        deadline = time.monotonic() + START_TIMEOUT_S
        admin = AdminClient(self.conf("PLAIN"))
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the broker exited: {self.log_path.read_text()[-2000:]}")
            try:
                if admin.list_topics(timeout=2).controller_id == 1:
                    return
            except Exception:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("the broker did not become ready")
            time.sleep(0.2)

    def conf(self, listener: str) -> dict[str, Any]:
        conf: dict[str, Any] = {"bootstrap.servers": f"127.0.0.1:{self.ports[listener]}"}
        if listener in ("TLS", "SCRAM"):
            conf |= {"security.protocol": "SSL", "ssl.ca.location": self.ca_path}
        if listener == "SCRAM":
            conf |= {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
                     "sasl.username": USER, "sasl.password": PASSWORD}  # fmt: skip
        return conf

    def create_topic(self, name: str) -> None:
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient(self.conf("PLAIN"))
        for f in admin.create_topics([NewTopic(name, 1, 1)]).values():
            f.result(timeout=30)

    def stop(self) -> None:
        from deploy.zookeeper import stop_zookeeper

        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(20)
        stop_zookeeper(self.zk.pid)


def produce(conf: dict[str, Any], topic: str, n: int) -> float:
    """Records per second of n 100 B records, acks=1, delivered."""
    from confluent_kafka import Producer

    p = Producer({**conf, "acks": "1", "linger.ms": 5, "queue.buffering.max.messages": 1_000_000})
    start = time.perf_counter()
    for _ in range(n):
        while True:
            try:
                p.produce(topic, VALUE)
                break
            except BufferError:
                p.poll(0.01)
    left = p.flush(120)
    elapsed = time.perf_counter() - start
    if left:
        raise RuntimeError(f"{left} records not delivered")
    return n / elapsed


def consume(conf: dict[str, Any], topic: str, n: int) -> float:
    """Records per second reading n records from the earliest by assignment."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    c = Consumer({**conf, "group.id": "bench-unused", "enable.auto.commit": False})
    try:
        c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        got = 0
        start = time.perf_counter()
        deadline = time.monotonic() + 300
        while got < n and time.monotonic() < deadline:
            for msg in c.consume(num_messages=10_000, timeout=0.5):
                if msg.error() is None:
                    got += 1
        elapsed = time.perf_counter() - start
    finally:
        c.close()
    if got < n:
        raise RuntimeError(f"read {got} of {n} records")
    return n / elapsed


def logins(conf: dict[str, Any], seconds: float) -> tuple[float, int]:
    """(logins per second, count): a new client each time, metadata, closed."""
    from confluent_kafka.admin import AdminClient

    done = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        admin = AdminClient(conf)
        admin.list_topics(timeout=10)
        del admin
        done += 1
    return done / (time.perf_counter() - start), done


def run(messages: int, rounds: int, seconds: float, report: Callable[[dict], None] = print) -> dict:
    tmp = Path(tempfile.mkdtemp(prefix="odradek-bench-security-"))
    broker: Broker | None = None
    rows: list[dict[str, Any]] = []
    try:
        broker = Broker(tmp)
        raw: dict[str, list[float]] = {}
        for r in range(rounds):
            for listener in ("PLAIN", "TLS") if r % 2 == 0 else ("TLS", "PLAIN"):
                topic = f"bench-{listener.lower()}-{r}"
                broker.create_topic(topic)
                conf = broker.conf(listener)
                raw.setdefault(f"produce {listener}", []).append(produce(conf, topic, messages))
                raw.setdefault(f"consume {listener}", []).append(consume(conf, topic, messages))
                log(f"round {r + 1}/{rounds} {listener}: produce "
                    f"{raw[f'produce {listener}'][-1]:,.0f}/s, consume "
                    f"{raw[f'consume {listener}'][-1]:,.0f}/s")  # fmt: skip
        for op in ("produce", "consume"):
            plain = statistics.median(raw[f"{op} PLAIN"])
            tls = statistics.median(raw[f"{op} TLS"])
            row = {"case": f"confluent-kafka {op} 100 B", "plaintext_rps": round(plain),
                   "tls_rps": round(tls), "ratio": round(tls / plain, 3),
                   "rounds": {k: [round(x) for x in v] for k, v in raw.items()
                              if k.startswith(op)}}  # fmt: skip
            rows.append(row)
            report(row)
        for listener in ("PLAIN", "SCRAM"):
            rate, count = logins(broker.conf(listener), seconds)
            row = {"case": f"confluent-kafka connect+login+metadata over {listener}",
                   "per_second": round(rate, 1), "count": count}  # fmt: skip
            rows.append(row)
            report(row)
    finally:
        if broker is not None:
            broker.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    return {"messages": messages, "rounds": rounds, "seconds": seconds, "rows": rows}


def render(result: dict) -> str:
    lines = ["| case | plaintext | TLS | TLS / plaintext |", "|---|---:|---:|---:|"]
    for row in result["rows"]:
        if "ratio" in row:
            lines.append(f"| {row['case']} | {row['plaintext_rps']:,} rec/s | "
                         f"{row['tls_rps']:,} rec/s | {row['ratio']:.2f} |")  # fmt: skip
    lines += ["", "| logins | per second | in the run |", "|---|---:|---:|"]
    for row in result["rows"]:
        if "per_second" in row:
            lines.append(f"| {row['case']} | {row['per_second']} | {row['count']} |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--messages", type=int, default=200_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    result = run(args.messages, args.rounds, args.seconds, report=lambda row: log(json.dumps(row)))
    print(render(result))
    path = (
        args.json or ROOT / "bench" / "results" / f"security-{time.strftime('%Y%m%d-%H%M%S')}.json"
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2) + "\n")
    log(f"raw figures in {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
