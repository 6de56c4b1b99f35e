"""A broker's log directory fills up (Kafka's log directory failure, KIP-112), for real.

Broker 3's log dir is a size-limited tmpfs, filled with a ballast file until a few hundred KiB
are left. Records are produced straight to it (raw requests, no client retries), alternating
acks=1 and acks=all, to the partition it leads, until an append fails. Then:

- the failed produce is answered with the log-dir-offline code (56, Kafka's
  KAFKA_STORAGE_ERROR), never with success;
- the broker logs one line naming the directory and ENOSPC; it was its only log directory, so
  the broker shuts down (exit status 1), as Kafka's does when every log directory failed; the
  partition gets another leader and the full broker leaves its ISR;
- a client producer (acks=all and acks=1) keeps writing through the others;
- once the ballast is deleted and the broker restarted, its recovery cuts whatever tail the
  failed write left, it rejoins the ISR as a follower, and the three replicas are
  byte-identical; every write reported successful is there, at its offset.

Needs root (mount). Each run prints its seed; replay with ODRADEK_TEST_SEED=<seed>.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from client import Admin, Consumer, NewTopic, PartitionDescription, Producer, TopicPartition
from deploy.cluster import LocalCluster
from protocol.errors import LogDirOfflineError
from tests.fixtures.cluster import ClusterFactory, seeded_rng, wait_until

pytestmark = pytest.mark.integration

WAIT_S = 40.0
VICTIM = 3
TMPFS_SIZE = "8m"
HEADROOM_BYTES = 256 * 1024  # free space left next to the ballast
VALUE_BYTES = 8 * 1024
TOPIC = "full"


def _describe(cluster: LocalCluster) -> list[PartitionDescription]:
    alive = [b for b, s in cluster.broker_states().items() if s == "alive"]
    bootstrap = ",".join(f"127.0.0.1:{cluster.broker(b).port}" for b in alive)
    try:
        with Admin(bootstrap, request_timeout_ms=2000) as admin:
            (desc,) = admin.describe_topics([TOPIC])
    except Exception:
        return []
    return sorted(desc.partitions, key=lambda p: p.partition) if not desc.error_code else []


def _part(cluster: LocalCluster, p: int) -> PartitionDescription | None:
    parts = _describe(cluster)
    return parts[p] if len(parts) > p else None


def _ask(cluster: LocalCluster, broker_id: int, request: Any) -> Any:
    """One request straight to `broker_id`, no retries: its answer (None: no answer)."""
    from transport.connection import BrokerConnection

    async def send() -> Any:
        conn = await BrokerConnection.connect("127.0.0.1", cluster.broker(broker_id).port)
        try:
            return await conn.send(request, timeout_ms=20_000)
        finally:
            await conn.close()

    try:
        return asyncio.run(send())
    except Exception:
        return None


def _produce_raw(cluster: LocalCluster, broker_id: int, p: int, value: bytes, acks: int) -> int:
    """One batch straight to `broker_id`: its error code (-1: no answer)."""
    from protocol.api.produce import ProducePartition, ProduceRequest, ProduceTopic
    from protocol.batch import build_batch_from_values
    from protocol.schema import Records

    data = Records(build_batch_from_values([value], int(time.time() * 1000)))
    topics = [ProduceTopic(TOPIC, [ProducePartition(p, data)])]
    resp = _ask(cluster, broker_id, ProduceRequest(acks, 10_000, topics))
    return -1 if resp is None else int(resp.topics[0].partitions[0].error_code)


def _leads(cluster: LocalCluster, broker_id: int, p: int) -> bool:
    """Whether `broker_id` itself answers as the leader of `p` (its LeaderAndIsr arrived):
    the controller's view, which describe shows, runs ahead of the broker's."""
    from protocol.api.list_offsets import ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic

    topics = [ListOffsetsTopic(TOPIC, [ListOffsetsPartition(p, -1)])]
    resp = _ask(cluster, broker_id, ListOffsetsRequest(-1, topics))
    return resp is not None and resp.topics[0].partitions[0].error_code == 0


def _segment_bytes(cluster: LocalCluster, broker_id: int, p: int) -> bytes:
    directory = Path(cluster.broker(broker_id).log_dir) / f"{TOPIC}-{p}"
    return b"".join(f.read_bytes() for f in sorted(directory.glob("*.log")))


def _read_all(bootstrap: str, p: int, count: int) -> list[tuple[int, bytes]]:
    with Consumer(bootstrap, auto_offset_reset="earliest") as consumer:
        tp = TopicPartition(TOPIC, p)
        consumer.assign([tp])
        got: list[tuple[int, bytes]] = []
        deadline = time.monotonic() + WAIT_S
        while len(got) < count and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                got.extend((r.offset, r.value or b"") for r in records)
    return got


def _mount_tmpfs(directory: Path) -> bool:
    directory.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={TMPFS_SIZE}", "tmpfs", str(directory)],
        capture_output=True,
    )
    return result.returncode == 0


def _fill(directory: Path, headroom: int) -> Path:
    """A ballast file that leaves about `headroom` bytes free."""
    ballast = directory / "ballast"
    st = os.statvfs(directory)
    size = st.f_bavail * st.f_frsize - headroom
    with open(ballast, "wb") as f:
        chunk = b"\0" * (1 << 20)
        while size > 0:
            f.write(chunk[: min(size, len(chunk))])
            size -= len(chunk)
    return ballast


@pytest.mark.slow  # kills or pauses brokers
def test_full_log_dir_moves_leadership_and_loses_no_acknowledged_write(
    cluster_factory: ClusterFactory,
) -> None:
    if os.geteuid() != 0:
        pytest.skip("mounting a size-limited tmpfs needs root")
    rng = seeded_rng()
    cluster = cluster_factory(3)
    data_dir = Path(cluster.broker(VICTIM).log_dir)
    cluster.kill(VICTIM, "TERM")
    aside = data_dir.with_name(data_dir.name + ".aside")
    shutil.move(data_dir, aside)
    if not _mount_tmpfs(data_dir):
        shutil.move(aside, data_dir)
        pytest.skip("mount -t tmpfs failed here")
    try:
        for item in aside.iterdir():
            shutil.move(item, data_dir / item.name)
        cluster.start(VICTIM)
        _run_scenario(cluster, data_dir, rng.randrange(1 << 30))
    finally:
        if cluster.broker_states().get(VICTIM) == "alive":
            cluster.kill(VICTIM, "KILL")
        subprocess.run(["umount", "-l", str(data_dir)], capture_output=True)


def _run_scenario(cluster: LocalCluster, data_dir: Path, tag: int) -> None:
    with Admin(cluster.bootstrap) as admin:
        admin.create_topics([NewTopic(TOPIC, 3, 3, {"min.insync.replicas": "2"})])

    def all_in_sync() -> list[PartitionDescription]:
        parts = _describe(cluster)
        return parts if len(parts) == 3 and all(len(d.isr) == 3 for d in parts) else []

    parts = wait_until(all_in_sync, "three in-sync replicas everywhere", WAIT_S)
    p = next(d.partition for d in parts if d.leader == VICTIM)
    wait_until(lambda: _leads(cluster, VICTIM, p), f"{VICTIM} leading {TOPIC}-{p}", WAIT_S)
    ballast = _fill(data_dir, HEADROOM_BYTES)

    # 1. Straight to the full broker, no retries, until an append fails.
    acked: list[bytes] = []
    codes: list[int] = []
    pad = b"x" * VALUE_BYTES
    for i in range(4 * HEADROOM_BYTES // VALUE_BYTES):
        value = b"raw-%d-%d-" % (tag, i) + pad
        code = _produce_raw(cluster, VICTIM, p, value, acks=1 if i % 2 else -1)
        codes.append(code)
        if code == 0:
            acked.append(value)
        else:
            break
    print(f"{len(acked)} acknowledged before the disk filled; then {codes[-1]}")
    assert codes[-1] == LogDirOfflineError.code, codes[-5:]
    assert acked, "the disk was full before the first write"
    # its only log directory failed: the broker stops, exit status 1
    wait_until(
        lambda: cluster.broker_states()[VICTIM] == "dead", f"broker {VICTIM} stopped", WAIT_S
    )
    broker_log = (cluster.dir / f"broker-{VICTIM}.log").read_text(errors="replace")
    assert f"log directory {data_dir} is offline" in broker_log
    assert "ENOSPC" in broker_log
    assert "every log directory is offline; shutting down" in broker_log

    # 2. The controller moved leadership and dropped the full broker from the ISRs.
    def moved() -> PartitionDescription | None:
        d = _part(cluster, p)
        ok = d is not None and d.leader not in (-1, VICTIM) and VICTIM not in d.isr
        return d if ok else None

    desc = wait_until(moved, f"{TOPIC}-{p} led elsewhere, {VICTIM} out of its ISR", WAIT_S)
    print(f"{TOPIC}-{p}: leader {desc.leader}, ISR {desc.isr}")
    for d in _describe(cluster):
        assert d.leader != VICTIM, d

    # 3. Producers keep writing through the others.
    later: list[bytes] = []
    for acks in ("all", 1):
        with Producer(cluster.bootstrap, acks=acks, request_timeout_ms=5000) as producer:
            values = [b"client-%s-%d-%d" % (str(acks).encode(), tag, i) for i in range(50)]
            futures = [producer.send(TOPIC, v, partition=p) for v in values]
            producer.flush()
            for f in futures:
                f.result(60)
            later += values

    # 4. Space freed, broker restarted: it recovers, catches up and rejoins the ISR.
    ballast.unlink()
    cluster.start(VICTIM)

    def back_in_sync() -> bool:
        d = _part(cluster, p)
        return d is not None and sorted(d.isr) == [1, 2, 3]

    wait_until(back_in_sync, f"{VICTIM} back in the ISR of {TOPIC}-{p}", WAIT_S)

    def identical() -> bytes:
        logs = [_segment_bytes(cluster, b, p) for b in (1, 2, 3)]
        return logs[0] if logs[0] and all(log == logs[0] for log in logs) else b""

    wait_until(identical, f"identical replicas of {TOPIC}-{p}", WAIT_S)
    got = _read_all(cluster.bootstrap, p, len(acked) + len(later))
    assert [o for o, _ in got] == list(range(len(got))), "offsets not contiguous"
    values = [v for _, v in got]
    missing = [v[:30] for v in acked + later if v not in values]
    assert not missing, f"acknowledged writes missing: {missing[:5]}"
    assert values[: len(acked)] == acked  # in the order acknowledged, from offset 0
