"""Failover between real broker processes and a real ZooKeeper (issue 4, failure tests 2, 3, 5).

- 2a: RF=3, min.insync.replicas=2, acks=all, three partitions; a producer writes unique values
  while the controller broker is SIGKILLed and restarted a few times. The producer is idempotent
  (the default with acks=all) with 5 batches in flight per partition: every acknowledged value is
  read back at its acknowledged offset, exactly once, in order, offsets contiguous, and the three
  replicas' logs end up byte-identical.
- 2b: a zombie leader. The leader is SIGSTOPped for longer than the session timeout, the
  controller elects another, and after SIGCONT the old leader acknowledges no acks=all produce
  sent straight to it (raw connection, no client retries); nothing acknowledged is lost.
- 3: KIP-101 on RF=2 partitions whose replicas exclude the controller. Scenario 1: the follower
  restarts (its high watermark is not on disk, so it is stale), must not truncate to it, rejoins
  the ISR, and the leader is killed at once: the follower leads with every acknowledged write.
  Scenario 2: the follower is paused, the leader appends a batch nobody acknowledges, both die;
  the follower's ZooKeeper session ends last so it is the one left in the ISR and returns first
  as leader and takes new writes at the same offsets; the old leader's log tail is also torn
  mid-batch (an unflushed tail). When it returns it truncates by leader epoch: no divergence.
- 5: a follower's active segment is made immutable (`chattr +i`: its writes fail with EPERM);
  it leaves the ISR and the leader keeps taking acks=all writes.

Each test prints its seed; replay with ODRADEK_TEST_SEED=<seed>.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

from client import (
    Admin,
    Consumer,
    NewTopic,
    PartitionDescription,
    Producer,
    RecordMetadata,
    TopicPartition,
)
from client.sync_producer import SendFuture
from deploy.cluster import LocalCluster
from protocol.errors import FencedLeaderEpochError, NotLeaderForPartitionError
from tests.fixtures.cluster import ClusterFactory, alive_bootstrap, seeded_rng, wait_until

pytestmark = pytest.mark.integration
T = TypeVar("T")

WAIT_S = 40.0
CONTROLLER_KILLS = 4  # cycles of test 2a (each about 5 s with a 4 s session timeout)


def _wait(check: Callable[[], T], what: str, timeout_s: float = WAIT_S) -> T:
    return wait_until(check, what, timeout_s)


def _partitions(cluster: LocalCluster, topic: str) -> list[PartitionDescription]:
    """The topic's partitions as a running (not paused) broker describes them; [] if none can."""
    bootstrap = alive_bootstrap(cluster)
    try:
        with Admin(bootstrap, request_timeout_ms=2000) as admin:
            (desc,) = admin.describe_topics([topic])
    except Exception:  # a broker died under the admin: ask again later
        return []
    return sorted(desc.partitions, key=lambda p: p.partition) if not desc.error_code else []


def _part(cluster: LocalCluster, topic: str, partition: int) -> PartitionDescription | None:
    parts = _partitions(cluster, topic)
    return parts[partition] if len(parts) > partition else None


def _wait_leader(
    cluster: LocalCluster, topic: str, partition: int, not_in: tuple[int, ...] = ()
) -> int:
    def leader() -> int:
        p = _part(cluster, topic, partition)
        return p.leader if p is not None and p.leader >= 0 and p.leader not in not_in else 0

    return _wait(leader, f"a leader of {topic}-{partition} outside {not_in}")


def _wait_isr(cluster: LocalCluster, topic: str, partition: int, size: int) -> list[int]:
    def isr() -> list[int]:
        p = _part(cluster, topic, partition)
        return list(p.isr) if p is not None and p.leader >= 0 and len(p.isr) >= size else []

    return _wait(isr, f"{size} replicas in the ISR of {topic}-{partition}")


def _create(cluster: LocalCluster, topics: list[NewTopic]) -> None:
    with Admin(cluster.bootstrap) as admin:
        admin.create_topics(topics)


def _segment_dir(cluster: LocalCluster, broker_id: int, topic: str, partition: int) -> Path:
    return Path(cluster.broker(broker_id).log_dir) / f"{topic}-{partition}"


def _segment_bytes(cluster: LocalCluster, broker_id: int, topic: str, partition: int) -> bytes:
    directory = _segment_dir(cluster, broker_id, topic, partition)
    return b"".join(p.read_bytes() for p in sorted(directory.glob("*.log")))


def _wait_identical(
    cluster: LocalCluster, brokers: list[int], topic: str, partition: int, size: int = 1
) -> bytes:
    """Wait until every replica's segment bytes are the same (and at least `size` long)."""

    def same() -> bytes:
        logs = [_segment_bytes(cluster, b, topic, partition) for b in brokers]
        ok = len(logs[0]) >= size and all(log == logs[0] for log in logs)
        return logs[0] if ok else b""

    return _wait(same, f"identical replicas of {topic}-{partition}")


def _produce_raw(
    cluster: LocalCluster, broker_id: int, topic: str, partition: int, value: bytes,
    timeout_ms: int = 5000,
) -> int:  # fmt: skip
    """One acks=all batch straight to `broker_id` (no client retries): its error code, or -1
    when the connection failed or the answer did not come."""
    from protocol.api.produce import ProducePartition, ProduceRequest, ProduceTopic
    from protocol.batch import build_batch_from_values
    from protocol.schema import Records
    from transport.connection import BrokerConnection

    async def send() -> int:
        port = cluster.broker(broker_id).port
        conn = await BrokerConnection.connect("127.0.0.1", port)
        try:
            data = Records(build_batch_from_values([value], int(time.time() * 1000)))
            topics = [ProduceTopic(topic, [ProducePartition(partition, data)])]
            resp = await conn.send(ProduceRequest(-1, timeout_ms, topics), timeout_ms=20_000)
            return int(resp.topics[0].partitions[0].error_code)
        finally:
            await conn.close()

    try:
        return asyncio.run(send())
    except Exception:
        return -1


def _send_all(
    bootstrap: str, topic: str, partition: int, values: list[bytes], timeout_ms: int = 5000
) -> list[int]:
    """acks=all, in order; a request that times out is retried (and may then be stored twice:
    callers that expect exact offsets use a timeout longer than any wait they cause)."""
    with Producer(
        bootstrap, acks="all", linger_ms=2, max_in_flight_per_partition=1,
        request_timeout_ms=timeout_ms,
    ) as producer:  # fmt: skip
        futures = [producer.send(topic, v, partition=partition) for v in values]
        producer.flush()
        return [f.result(120).offset for f in futures]


def _read_all(bootstrap: str, topic: str, partition: int, count: int) -> list[tuple[int, bytes]]:
    """Every record of one partition from offset 0 (at least `count` of them)."""
    with Consumer(bootstrap, auto_offset_reset="earliest") as consumer:
        tp = TopicPartition(topic, partition)
        consumer.assign([tp])
        end = consumer.end_offsets([tp])[tp]
        got: list[tuple[int, bytes]] = []
        deadline = time.monotonic() + WAIT_S
        while (len(got) < max(count, end)) and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                got.extend((r.offset, r.value or b"") for r in records)
    return got


class BackgroundProducer:
    """Writes unique values round-robin to `partitions` from a thread, acks=all (idempotent, up to
    5 batches in flight per partition), and records what was acknowledged (partition ->
    [(offset, value)] in send order) and what failed."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, tag: bytes) -> None:
        self.topic = topic
        self.partitions = partitions
        self.tag = tag
        self.acked: dict[int, list[tuple[int, bytes]]] = {p: [] for p in range(partitions)}
        self.failed: list[tuple[bytes, BaseException]] = []
        self.sent = 0
        self._stop = threading.Event()
        self._producer = Producer(
            bootstrap, acks="all", linger_ms=5, max_in_flight_per_partition=5,
            delivery_timeout_ms=60_000, request_timeout_ms=5_000, retry_backoff_ms=50,
        )  # fmt: skip
        self._thread = threading.Thread(target=self._run, name="failover-producer", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        window: list[tuple[int, bytes, SendFuture[RecordMetadata]]] = []
        deadline = time.monotonic() + 240
        while not self._stop.is_set() and time.monotonic() < deadline:
            for p in range(self.partitions):
                value = b"%s-%d-%d" % (self.tag, p, self.sent)
                window.append((p, value, self._producer.send(self.topic, value, partition=p)))
                self.sent += 1
            if len(window) >= 60:  # bounded in flight: settle the oldest third
                self._settle(window[:20])
                del window[:20]
            time.sleep(0.01)
        self._settle(window)

    def _settle(self, items: list[tuple[int, bytes, SendFuture[RecordMetadata]]]) -> None:
        for p, value, future in items:
            try:
                meta = future.result(90)
                self.acked[p].append((meta.offset, value))
            except Exception as exc:  # a failed send is not acknowledged: allowed
                self.failed.append((value, exc))

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(150)
        assert not self._thread.is_alive(), "the producer thread did not finish"
        self._producer.close()


def _check_acked_read_back(
    bootstrap: str, topic: str, acked: dict[int, list[tuple[int, bytes]]]
) -> dict[str, int]:
    """Each acknowledged value is at its acknowledged offset and nowhere else (exactly once: the
    producer is idempotent, so a retry of a batch that was appended but not acknowledged, as
    after NOT_ENOUGH_REPLICAS_AFTER_APPEND or a lost answer, is not stored again); offsets
    contiguous from 0; acks in send order have increasing offsets. Values whose send failed may
    be present (appended, never acknowledged), once at most. Returns the counts."""
    stats = {"acked": 0, "unacked_present": 0}
    for p, items in acked.items():
        offsets = [o for o, _ in items]
        assert offsets == sorted(offsets), f"partition {p}: acks out of offset order"
        log = _read_all(bootstrap, topic, p, len(items))
        assert [o for o, _ in log] == list(range(len(log))), (
            f"partition {p}: offsets not contiguous"
        )
        by_offset = dict(log)
        lost = [(o, v) for o, v in items if by_offset.get(o) != v]
        assert not lost, f"partition {p}: acknowledged values lost or moved: {lost[:5]}"
        acked_at = {v: o for o, v in items}
        assert len(acked_at) == len(items), f"partition {p}: one value acknowledged twice"
        seen: dict[bytes, int] = {}
        for offset, value in log:
            assert value not in seen, f"partition {p}: {value!r} at {seen.get(value)} and {offset}"
            seen[value] = offset
            if value not in acked_at:
                stats["unacked_present"] += 1
        stats["acked"] += len(items)
    return stats


# ----- 2a: the controller killed -----------------------------------------------------------------


def _new_controller(cluster: LocalCluster, old: int) -> Callable[[], bool]:
    return lambda: cluster.controller_id() not in (None, old)


@pytest.mark.slow  # kills or pauses brokers
def test_controller_kill_loses_no_acknowledged_write(cluster_factory: ClusterFactory) -> None:
    rng = seeded_rng()
    cluster = cluster_factory(3)
    topic = "ctl"
    _create(cluster, [NewTopic(topic, 3, 3, {"min.insync.replicas": "2"})])
    for p in range(3):
        _wait_isr(cluster, topic, p, 3)
    producer = BackgroundProducer(cluster.bootstrap, topic, 3, b"v%d" % rng.randrange(1000))
    producer.start()
    try:
        for _ in range(CONTROLLER_KILLS):
            time.sleep(rng.uniform(0.2, 1.0))
            controller = cluster.controller_id()
            assert controller is not None
            cluster.kill(controller, "KILL")
            if rng.random() < 0.5:  # back before or after another broker takes over
                _wait(_new_controller(cluster, controller), "a new controller")
            cluster.start(controller)
            for p in range(3):
                _wait_isr(cluster, topic, p, 3)
        time.sleep(0.5)
    finally:
        producer.stop()
    for p in range(3):
        _wait_identical(cluster, [1, 2, 3], topic, p)
    stats = _check_acked_read_back(cluster.bootstrap, topic, producer.acked)
    print(f"acked {stats['acked']}, failed {len(producer.failed)}, stats {stats}")
    assert stats["acked"] >= 100


# ----- 2b: a zombie leader ----------------------------------------------------------------------


@pytest.mark.slow  # kills or pauses brokers
def test_paused_leader_acknowledges_nothing_after_replacement(
    cluster_factory: ClusterFactory,
) -> None:
    rng = seeded_rng()
    cluster = cluster_factory(3)
    topic = "zombie"
    first = [b"a-%d-%d" % (i, rng.randrange(1 << 30)) for i in range(200)]
    second = [b"b-%d-%d" % (i, rng.randrange(1 << 30)) for i in range(200)]
    _create(cluster, [NewTopic(topic, 1, 3, {"min.insync.replicas": "2"})])
    _wait_isr(cluster, topic, 0, 3)
    old = _wait_leader(cluster, topic, 0)
    assert _send_all(cluster.bootstrap, topic, 0, first) == list(range(200))
    cluster.kill(old, "STOP")
    paused_at = time.monotonic()
    new = _wait_leader(cluster, topic, 0, not_in=(old,))
    print(f"{new} leads {time.monotonic() - paused_at:.1f} s after {old} paused")
    assert _send_all(cluster.bootstrap, topic, 0, second) == list(range(200, 400))
    cluster.start(old, wait=False)  # SIGCONT: the zombie wakes up thinking it leads
    print(f"paused {old} for {time.monotonic() - paused_at:.1f} s; {new} leads")
    codes: list[int] = []
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline and len(codes) < 40:  # straight to it, from the start
        codes.append(_produce_raw(cluster, old, topic, 0, b"zombie-%d" % len(codes), 1000))
        time.sleep(0.05)
    print(f"the zombie's answers: {Counter(codes)}")
    assert 0 not in codes, codes  # acknowledged nothing
    fenced = {NotLeaderForPartitionError.code, FencedLeaderEpochError.code}
    assert fenced & set(codes), codes  # and said it no longer leads, once it knew
    cluster.wait_ready(must_run=[old])
    _wait_isr(cluster, topic, 0, 3)
    print(f"{old} back in the ISR {time.monotonic() - paused_at:.1f} s after the pause")
    assert _wait_leader(cluster, topic, 0) in (new, old)
    log = _wait_identical(cluster, [1, 2, 3], topic, 0)
    got = _read_all(cluster.bootstrap, topic, 0, 400)
    assert [o for o, _ in got] == list(range(400))
    assert [v for _, v in got] == first + second
    assert b"zombie-" not in log


# ----- 3: KIP-101 ---------------------------------------------------------------------------------


def _rf2_partition(cluster: LocalCluster, topic: str, min_isr: int) -> tuple[int, int, int]:
    """A partition of an RF=2 topic (3 partitions) whose replicas exclude the controller, and
    its (leader, follower), both in the ISR."""
    _create(cluster, [NewTopic(topic, 3, 2, {"min.insync.replicas": str(min_isr)})])
    controller = cluster.controller_id()
    for p in range(3):
        _wait_isr(cluster, topic, p, 2)
    for desc in _partitions(cluster, topic):
        if controller not in desc.replicas:
            leader = desc.leader
            follower = next(r for r in desc.replicas if r != leader)
            return desc.partition, leader, follower
    raise AssertionError(f"every partition has the controller {controller} as a replica")


@pytest.mark.slow  # kills or pauses brokers
def test_kip101_restarted_follower_keeps_acknowledged_tail_and_leads(
    cluster_factory: ClusterFactory,
) -> None:
    rng = seeded_rng()
    cluster = cluster_factory(3)
    topic = "kip101a"
    p, leader, follower = _rf2_partition(cluster, topic, min_isr=2)
    w1 = [b"w1-%d-%d" % (i, rng.randrange(1 << 30)) for i in range(150)]
    w2 = [b"w2-%d-%d" % (i, rng.randrange(1 << 30)) for i in range(150)]
    w3 = [b"w3-%d-%d" % (i, rng.randrange(1 << 30)) for i in range(150)]
    assert _send_all(cluster.bootstrap, topic, p, w1) == list(range(150))
    acked_bytes = len(_wait_identical(cluster, [leader, follower], topic, p))
    cluster.kill(follower, "KILL")
    cluster.start(follower, wait=False)
    smallest = acked_bytes  # the follower's log size while it restarts and rejoins
    dropped = False  # once its old session expires the controller takes it out of the ISR
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        smallest = min(smallest, len(_segment_bytes(cluster, follower, topic, p)))
        desc = _part(cluster, topic, p)
        in_isr = desc is not None and follower in desc.isr and desc.leader == leader
        dropped = dropped or (desc is not None and follower not in desc.isr)
        if dropped and in_isr:
            break
        time.sleep(0.01)
    assert dropped and in_isr, "the follower did not leave and rejoin the ISR"
    assert smallest >= acked_bytes, "the restarted follower truncated acknowledged data"
    # acknowledged with min.insync=2, so the follower holds them; its HW may lag
    assert _send_all(cluster.bootstrap, topic, p, w2) == list(range(150, 300))
    cluster.kill(leader, "KILL")
    assert _wait_leader(cluster, topic, p, not_in=(leader,)) == follower
    assert len(_segment_bytes(cluster, follower, topic, p)) > acked_bytes
    cluster.start(leader)
    _wait_isr(cluster, topic, p, 2)
    assert _send_all(cluster.bootstrap, topic, p, w3) == list(range(300, 450))
    _wait_identical(cluster, [leader, follower], topic, p)
    got = _read_all(cluster.bootstrap, topic, p, 450)
    assert [o for o, _ in got] == list(range(450))
    assert [v for _, v in got] == w1 + w2 + w3


def _tear_tail(cluster: LocalCluster, broker_id: int, topic: str, p: int, cut: int) -> int:
    """Cut `cut` bytes off the end of the broker's last segment (it must be dead): an unflushed
    tail lost mid-batch. Returns the segment's new size."""
    segment = sorted(_segment_dir(cluster, broker_id, topic, p).glob("*.log"))[-1]
    size = segment.stat().st_size
    os.truncate(segment, size - cut)
    return size - cut


@pytest.mark.slow  # kills or pauses brokers
def test_kip101_both_replicas_crash_and_do_not_diverge(cluster_factory: ClusterFactory) -> None:
    rng = seeded_rng()
    cluster = cluster_factory(3)
    topic = "kip101b"
    p, leader, follower = _rf2_partition(cluster, topic, min_isr=1)  # the first back writes alone
    w1 = [b"w1-%d-%d" % (i, rng.randrange(1 << 30)) for i in range(150)]
    w2 = [b"w2-%d-%d" % (i, rng.randrange(1 << 30)) for i in range(150)]
    assert _send_all(cluster.bootstrap, topic, p, w1) == list(range(150))
    _wait_identical(cluster, [leader, follower], topic, p)
    cluster.kill(follower, "STOP")
    unacked = [b"lost-%d" % i for i in range(3)]
    for value in unacked:  # appended by the leader alone; the paused follower never acks
        assert _produce_raw(cluster, leader, topic, p, value, timeout_ms=200) != 0
    cluster.kill(leader, "KILL")
    cluster.start(follower, wait=False)  # alive (in ZooKeeper) a little longer than the leader
    time.sleep(1.5)
    cluster.kill(follower, "KILL")

    def offline_isr() -> list[int]:
        d = _part(cluster, topic, p)
        return list(d.isr) if d is not None and d.leader < 0 else []

    isr = _wait(offline_isr, f"{topic}-{p} offline")
    print(f"offline with ISR {isr}; leader was {leader}, follower {follower}")
    assert isr == [follower], isr  # the last replica to die is the one left in the ISR
    tail = _segment_bytes(cluster, leader, topic, p)
    assert all(v in tail for v in unacked)
    # a fetch parked on the leader may have carried the first of them to the follower before
    # it paused (the answer was already in its socket): those it has, it keeps, as leader
    held = [v for v in unacked if v in _segment_bytes(cluster, follower, topic, p)]
    print(f"the follower holds {len(held)} of the {len(unacked)} unacknowledged values")
    assert len(held) < len(unacked), held
    _tear_tail(cluster, leader, topic, p, rng.randrange(1, 20))  # the last batch torn
    cluster.start(follower)  # returns first, leads, and writes at the old leader's offsets
    assert _wait_leader(cluster, topic, p) == follower
    start = 150 + len(held)  # the old leader has other batches at these offsets
    assert _send_all(cluster.bootstrap, topic, p, w2) == list(range(start, start + 150))
    cluster.start(leader)
    _wait_isr(cluster, topic, p, 2)
    log = _wait_identical(cluster, [leader, follower], topic, p)
    assert not any(v in log for v in unacked if v not in held)  # truncated by leader epoch
    got = _read_all(cluster.bootstrap, topic, p, start + 150)
    assert [o for o, _ in got] == list(range(start + 150))
    assert [v for _, v in got] == w1 + held + w2


# ----- 5: a follower's disk fails ----------------------------------------------------------------


def _chattr(flag: str, path: Path) -> bool:
    chattr = shutil.which("chattr")
    if chattr is None:
        return False
    return subprocess.run([chattr, flag, str(path)], capture_output=True).returncode == 0


@pytest.mark.slow  # fails a broker's disk
def test_follower_disk_failure_leaves_isr_and_leader_keeps_serving(
    cluster_factory: ClusterFactory,
) -> None:
    rng = seeded_rng()
    cluster = cluster_factory(3)
    topic = "diskfail"
    _create(cluster, [NewTopic(topic, 1, 3, {"min.insync.replicas": "2"})])
    _wait_isr(cluster, topic, 0, 3)
    leader = _wait_leader(cluster, topic, 0)
    assert _send_all(cluster.bootstrap, topic, 0, [b"before-%d" % i for i in range(50)])
    _wait_identical(cluster, [1, 2, 3], topic, 0)
    victim = rng.choice([b for b in (1, 2, 3) if b != leader])
    segment = sorted(_segment_dir(cluster, victim, topic, 0).glob("*.log"))[-1]
    if not _chattr("+i", segment):
        pytest.skip("chattr +i is not available here (needs root and ext4/xfs/btrfs)")
    try:
        with pytest.raises(PermissionError), open(segment, "ab") as f:  # really unwritable
            f.write(b"x")
        values: list[bytes] = []
        deadline = time.monotonic() + WAIT_S

        def shrunk() -> bool:
            d = _part(cluster, topic, 0)
            return d is not None and victim not in d.isr

        while not shrunk():  # writes keep coming; the victim cannot append them
            assert time.monotonic() < deadline, "the failed follower stayed in the ISR"
            batch = [b"during-%d" % (len(values) + i) for i in range(20)]
            # acks=all waits until the leader drops the victim from the ISR (lag 10 s)
            _send_all(cluster.bootstrap, topic, 0, batch, timeout_ms=60_000)
            values += batch
            time.sleep(0.2)
        after = [b"after-%d" % i for i in range(100)]
        offsets = _send_all(cluster.bootstrap, topic, 0, after)
        assert offsets == list(range(50 + len(values), 150 + len(values)))
        d = _part(cluster, topic, 0)
        assert d is not None and d.leader == leader and len(d.isr) == 2, d
        assert victim not in d.isr
        broker_log = (cluster.dir / f"broker-{victim}.log").read_text(errors="replace")
        assert f"{topic}-0: disk failure" in broker_log  # it left for the reason we caused
    finally:
        _chattr("-i", segment)
    got = _read_all(cluster.bootstrap, topic, 0, 150 + len(values))
    expected = [b"before-%d" % i for i in range(50)] + values + after
    assert [v for _, v in got] == expected
