"""`make bench`'s latency workers (bench/bench_user.py `worker latency-consumer` and
`worker latency-producer`) run against a real cluster: every record arrives and each hop the
report names is stamped. The workers patch the client's own functions to stamp the hops (the
Produce frame's encoder, the answer's arrival), so a change to those names must break this test,
not the benchmark's next run. No figure is judged here."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from client import Admin, NewTopic
from deploy.cluster import LocalCluster

pytestmark = pytest.mark.integration

BENCH = Path(__file__).resolve().parents[2] / "bench" / "bench_user.py"
N = 300


def test_the_latency_workers_stamp_every_hop_of_every_record(cluster3: LocalCluster) -> None:
    bootstrap, topic = cluster3.bootstrap, "bench-user-latency"
    with Admin(bootstrap) as admin:
        admin.create_topics([NewTopic(topic, 1, 1)])
    consumer = subprocess.Popen(
        [sys.executable, str(BENCH), "worker", "latency-consumer", bootstrap, topic, str(N)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert consumer.stdout is not None
        assert consumer.stdout.readline().strip() == "ready"
        produced = subprocess.run(
            [sys.executable, str(BENCH), "worker", "latency-producer", bootstrap, topic, str(N),
             "1000", "1"],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert produced.returncode == 0, produced.stderr[-2000:]
        received, err = consumer.communicate(timeout=120)
    finally:
        if consumer.poll() is None:
            consumer.kill()
            consumer.wait()
    assert consumer.returncode == 0, err[-2000:]
    producer_report = json.loads(produced.stdout.strip().splitlines()[-1])
    consumer_report = json.loads(received.strip().splitlines()[-1])
    assert consumer_report["received"] == N
    assert consumer_report["e2e_ms_p50"] is not None
    assert consumer_report["hop_us_send_to_arrival_p50"] is not None
    assert consumer_report["hop_us_arrival_to_poll_p50"] is not None
    assert producer_report["hop_us_send_to_write_p50"] is not None, producer_report
