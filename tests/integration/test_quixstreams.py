"""A real stream processor against odradek (issue 22): a Quix Streams application with a
stateful count per key runs on a three-broker cluster through the Kafka listener, with Quix's
documented defaults (tests/integration/quix_counter.py, one process per run).

1. It starts: Quix creates its output topic and its changelog topic
   (`changelog__<group>--<input>--default`, the input's partitions and replication factor,
   cleanup.policy=compact), and the changelog is described back as compacted.
2. It counts, in ROUNDS runs on the same state directory: each run gets PER_ROUND keyed JSON
   messages and makes as many outputs, each key's totals going on 1, 2, ... across the runs.
   Quix writes a key's latest state to the changelog once per checkpoint, and a run's stop is
   a checkpoint, so the changelog holds every key at least ROUNDS times: the duplicates that
   compaction removes.
3. It recovers: its local state directory deleted, restarted on AFTER more messages, it
   rebuilds each key's total from the changelog and carries on from it.

Between 2 and 3 the changelog is compacted (`compact_changelog`): after the first run the
changelog is given `segment.ms=1` and `min.cleanable.dirty.ratio=0.01` (Quix leaves its
segments at the broker's default size, and the cleaner never touches the active segment), so
the later runs' checkpoints land in many small segments; the step waits until every broker's
log cleaner has cleaned the changelog's partitions (its cleaner-offset-checkpoint names them)
and checks that the changelog now serves fewer records than were written to it. The restart
then recovers from a changelog that has been compacted.

Each run is bounded (`app.run(count=..., timeout=...)` in the app and a hang guard here), so a
broken broker fails the test rather than hanging it. quixstreams is imported only in the app's
process: importing it here would trip pytest's warnings-as-errors on a dependency's deprecation.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from broker.log.cleaner.manager import CHECKPOINT_FILE as CLEANER_CHECKPOINT
from deploy.cluster import LocalCluster
from tests.fixtures.cluster import wait_until
from tests.integration.kafka_clients import KafkaPython, Rec

pytestmark = [
    pytest.mark.integration,
    pytest.mark.slow,  # a third-party stream processor
    pytest.mark.skipif(
        importlib.util.find_spec("quixstreams") is None,
        reason="quixstreams is a dev dependency (pip install -e .[dev])",
    ),
]

APP = Path(__file__).with_name("quix_counter.py")
USERS = ["alice", "bob", "carol", "dave"]
ROUNDS, PER_ROUND = 3, 20  # runs on the same state, and the input messages of each
AFTER = 40  # input messages for the run that recovers its state from the changelog
APP_IDLE_S = 60.0  # the app stops after this long without a message (a broken run)
APP_GUARD_S = 240.0  # the whole run: start, topic creation, recovery, processing


def events(start: int, count: int) -> list[tuple[str, dict[str, Any]]]:
    """Keyed click events, uneven per user (a cycle of 10: alice 4, bob 3, carol 2, dave 1)."""
    cycle = [0, 0, 0, 0, 1, 1, 1, 2, 2, 3]
    return [(USERS[cycle[i % len(cycle)]], {"user": USERS[cycle[i % len(cycle)]], "n": i})
            for i in range(start, start + count)]  # fmt: skip


def produce(bootstrap: str, topic: str, batch: list[tuple[str, dict[str, Any]]]) -> None:
    recs = [Rec(user.encode(), json.dumps(value).encode()) for user, value in batch]
    KafkaPython(bootstrap).produce(topic, recs, acks=-1)


def run_app(
    bootstrap: str, names: dict[str, str], state_dir: Path, count: int
) -> list[dict[str, Any]]:
    """One run of the Quix app until `count` outputs; returns them (values, in output order)."""
    argv = [sys.executable, str(APP), "--bootstrap", bootstrap, "--group", names["group"],
            "--input", names["input"], "--output", names["output"], "--state-dir",
            str(state_dir), "--count", str(count), "--timeout-s", str(APP_IDLE_S)]  # fmt: skip
    try:
        done = subprocess.run(
            argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=APP_GUARD_S
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"the Quix app did not stop within {APP_GUARD_S:.0f} s:\n{_tail(exc.stderr)}")
    assert done.returncode == 0, f"the Quix app failed:\n{_tail(done.stderr)}"
    outputs: list[dict[str, Any]] = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(outputs) == count, f"{len(outputs)} outputs of {count}:\n{_tail(done.stderr)}"
    return outputs


def _tail(text: str | bytes | None, lines: int = 40) -> str:
    if isinstance(text, bytes):
        text = text.decode(errors="replace")
    return "\n".join((text or "").splitlines()[-lines:])


def check_totals(outputs: list[dict[str, Any]], before: Counter[str]) -> Counter[str]:
    """Each user's outputs, in the order made, carry totals before[user] + 1, + 2, ... (a key
    stays in one partition, so its messages are processed in the order produced); returns the
    totals after."""
    after = Counter(before)
    for out in outputs:
        after[out["user"]] += 1
        assert out["total"] == after[out["user"]], (out, dict(before))
    return after


def topic_configs(bootstrap: str, topic: str) -> dict[str, dict[str, Any]]:
    """The topic's configs that differ from the defaults, as kafka-python describes them:
    name -> {"value": ..., "config_source": ..., ...}."""
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        found = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
    finally:
        admin.close()
    configs: dict[str, dict[str, Any]] = found["topic"][topic]
    return configs


def end_offsets(bootstrap: str, topic: str) -> dict[int, int]:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap)
    try:
        partitions = consumer.partitions_for_topic(topic) or set()
        ends = consumer.end_offsets([TopicPartition(topic, p) for p in sorted(partitions)])
        return {tp.partition: offset for tp, offset in ends.items()}
    finally:
        consumer.close()


def small_segments(bootstrap: str, topic: str) -> None:
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        configs = {"cleanup.policy": "compact", "segment.ms": "1",
                   "min.cleanable.dirty.ratio": "0.01"}  # fmt: skip
        admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic, configs=configs)])
    finally:
        admin.close()


def served(bootstrap: str, topic: str) -> int:
    """The records a consumer reads from the topic's beginning to its end."""
    from kafka import KafkaConsumer, TopicPartition

    ends = end_offsets(bootstrap, topic)
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                             enable_auto_commit=False)  # fmt: skip
    try:
        tps = [TopicPartition(topic, p) for p in ends]
        consumer.assign(tps)
        count = 0
        while any(consumer.position(tp) < ends[tp.partition] for tp in tps):
            count += sum(len(rs) for rs in consumer.poll(timeout_ms=1000).values())
        return count
    finally:
        consumer.close()


def compact_changelog(cluster: LocalCluster, changelog: str) -> None:
    """Wait until every broker's log cleaner has cleaned the changelog's partitions and it
    serves fewer records than were written to it (the restart replays these).

    Both, polled together: a cleaner pass that ran while a run's checkpoint was still in the
    active segment writes the checkpoint (naming the changelog) with no duplicate removed yet;
    the next run's first append rolls that segment, and a later pass removes the duplicates."""
    written = sum(end_offsets(cluster.kafka_bootstrap, changelog).values())
    assert written >= ROUNDS * len(USERS), written

    def cleaned(broker: int) -> bool:
        path = Path(cluster.broker(broker).log_dir) / CLEANER_CHECKPOINT
        return path.exists() and f"{changelog} " in path.read_text()

    def compacted() -> bool:
        if not all(cleaned(b) for b in cluster.broker_ids):
            return False
        return served(cluster.kafka_bootstrap, changelog) < written

    wait_until(compacted, "changelog cleaned and serving fewer records than written", 180)


def test_a_stateful_quix_app_counts_and_recovers_its_counts_from_the_changelog(
    cluster3: LocalCluster, tmp_path: Path
) -> None:
    bootstrap = cluster3.kafka_bootstrap
    run = uuid.uuid4().hex[:8]
    names = {"group": f"counter-{run}", "input": f"clicks-{run}", "output": f"totals-{run}"}
    changelog = f"changelog__{names['group']}--{names['input']}--default"
    KafkaPython(bootstrap).create_topic(names["input"], 2, 3, {})
    state_dir = tmp_path / "state"

    totals: Counter[str] = Counter()
    for start in range(0, ROUNDS * PER_ROUND, PER_ROUND):
        produce(bootstrap, names["input"], events(start, PER_ROUND))
        totals = check_totals(run_app(bootstrap, names, state_dir, PER_ROUND), totals)
        if start == 0:  # Quix made the changelog: small segments, so it can be cleaned
            small_segments(bootstrap, changelog)
    assert totals == Counter(user for user, _ in events(0, ROUNDS * PER_ROUND))
    policy = topic_configs(bootstrap, changelog)["cleanup.policy"]
    assert (policy["value"], policy["config_source"]) == ("compact", "DYNAMIC_TOPIC_CONFIG")

    compact_changelog(cluster3, changelog)

    shutil.rmtree(state_dir)
    produce(bootstrap, names["input"], events(ROUNDS * PER_ROUND, AFTER))
    check_totals(run_app(bootstrap, names, state_dir, AFTER), totals)
    assert sum(end_offsets(bootstrap, names["output"]).values()) == ROUNDS * PER_ROUND + AFTER
