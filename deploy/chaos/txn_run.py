"""`odradek chaos run --workload txn`: transactions through the faults, then Jepsen's checks.

Creates the topic `chaos-<seed>` and its copy `chaos-<seed>-out` (as runner.py creates its
topic), starts the transactional workload (txn_workload.py: PRODUCERS transactional producers,
READERS read_committed readers of every partition, one consume-transform-produce copier),
runs the fault schedule (the workload's transactional ids are the targets of kill-txn-coord),
then heals everything, stops the producers and waits until no transaction is open (every
partition's last stable offset at its high watermark). The readers and the copier then drain:
until each reader's position reaches the end of every partition, or nothing new came for
QUIET_S. The copier's committed output is read back by a fresh read_committed reader. The
record (txn_checker.TxnRunRecord) goes to txn_checker.check; a FAIL names each anomaly class
with examples, and `--json` writes the whole history for `odradek chaos check`.
"""

from __future__ import annotations

import time

from deploy.chaos import checker, plan, runner, security, txn_checker
from deploy.chaos.txn_workload import TXN_TIMEOUT_MS, Copier, Reader, TxnProducer
from deploy.chaos.workload import AckClock
from deploy.cluster import LocalCluster
from deploy.processes import wait_until

STEP_S = 0.2  # how often a wait looks again
PRODUCERS = 2
READERS = 2
QUIET_S = 4.0
DRAIN_WAIT_S = 90.0
STABLE_WAIT_S = 60.0  # longer than the producers' transaction timeout (txn_workload.py)


def run_txn(
    cluster: LocalCluster, options: runner.Options, steps: list[plan.Step], out: runner.Print
) -> int:
    chaos = runner.Chaos(cluster, options, out)
    topic, out_topic = chaos.topic, f"{chaos.topic}-out"
    runner.fresh_topics(cluster, [topic, out_topic], [f"{topic}-copier"], options.seed, out)
    kafka, seed, clock = cluster.kafka_bootstrap, options.seed, AckClock()
    ids = [f"{topic}-tx{i}" for i in range(PRODUCERS)]
    producers = [TxnProducer(kafka, f"p{i}", tid, topic, runner.PARTITIONS, seed, chaos.t0, clock)
                 for i, tid in enumerate(ids)]  # fmt: skip
    readers = [Reader(kafka, f"c{i}", topic, runner.PARTITIONS, chaos.t0) for i in range(READERS)]
    copier = Copier(kafka, "copier", f"{topic}-copier", f"{topic}-copier", topic, out_topic,
                    chaos.t0)  # fmt: skip
    chaos.ctx.txn_ids = [*ids, f"{topic}-copier"]
    for producer in producers:
        producer.start()
    for reader in readers:
        reader.start()
    copier.start()
    # the ids have a coordinator
    wait_until(lambda: all(p.committed() for p in producers), 60.0, STEP_S)
    try:
        chaos.run_schedule(steps, lambda: sum(p.committed() for p in producers))
    finally:
        out("healing everything, stopping the producers, waiting for every transaction to end")
        chaos.heal_all()
        for p in producers:
            p.stop()
    full = all(runner.wait_full_isr(cluster, t, runner.PARTITIONS, runner.HEAL_WAIT_S)
               for t in (topic, out_topic))  # fmt: skip
    ends = stable_ends(kafka, topic, STABLE_WAIT_S)
    _drain(readers, copier, ends)
    copier.stop()
    for r in readers:
        r.stop()
    record = txn_checker.TxnRunRecord(topic, runner.PARTITIONS, seed)
    record.txns = [t for p in producers for t in p.txns]
    record.consumers = [r.log for r in readers]
    record.ctp_output = read_output(kafka, out_topic, chaos.t0)
    chaos.time_availability(clock)
    record.faults = chaos.faults
    logs = [p.errors for p in producers] + [copier.errors, copier.consumer_errors]
    logs += [r.errors for r in readers]
    record.client_errors = sorted((e for log in logs for e in log.errors), key=lambda e: e.at)
    record.txn_timeout_s = TXN_TIMEOUT_MS / 1000
    findings = txn_checker.check(record)
    if ends is None:
        findings.append(checker.Finding("transactions-end", False,
                                        "a transaction stayed open after the run"))  # fmt: skip
    if not full:
        findings.append(checker.Finding("full-isr", False, "the ISR did not fill after healing"))
    out(txn_checker.summary(record) + f"; {copier.copied} values copied")
    for log in logs:
        if log.errors:  # what the clients were told: the first clue when a check fails
            out(f"{log.client}: {len(log.errors)} client errors, the last: "
                + " | ".join(log.lines(3)))  # fmt: skip
    return runner.report(
        cluster, options, steps, "txn", record.to_json(), findings, record.faults, out
    )


def stable_ends(bootstrap: str, topic: str, timeout_s: float) -> dict[int, int] | None:
    """Every partition's end once no transaction is open in it (its read_committed end, the
    last stable offset, equals its read_uncommitted end, the HW); None: one stayed open."""
    from confluent_kafka import Consumer, TopicPartition

    conf = {
        "bootstrap.servers": bootstrap,
        "group.id": "chaos-ends",
        "log_level": 0,
        **security.librdkafka(),
    }
    committed = Consumer({**conf, "isolation.level": "read_committed"})
    uncommitted = Consumer({**conf, "isolation.level": "read_uncommitted"})
    tps = [TopicPartition(topic, p) for p in range(runner.PARTITIONS)]
    ends: dict[int, int] = {}

    def settled() -> bool:
        try:
            for tp in tps:
                lso = committed.get_watermark_offsets(tp, 5)[1]
                if lso != uncommitted.get_watermark_offsets(tp, 5)[1]:
                    return False
                ends[tp.partition] = lso
        except Exception:  # a leader moving: ask again
            return False
        return True

    try:
        return dict(ends) if wait_until(settled, timeout_s, STEP_S) else None
    finally:
        committed.close()
        uncommitted.close()


def _drain(readers: list[Reader], copier: Copier, ends: dict[int, int] | None) -> None:
    """Until every reader reached `ends` and the copier committed up to them, or each of them
    made no progress for QUIET_S (bounded by DRAIN_WAIT_S). A copier recovering from a failed
    transaction is not quiet: it has read nothing since it rewound."""

    def caught_up(r: Reader) -> bool:
        positions = r.positions()
        return ends is not None and all(positions.get(p, 0) >= e for p, e in ends.items())

    def quiet(since: float) -> bool:
        return time.monotonic() - since >= QUIET_S

    wait_until(lambda: all(caught_up(r) or quiet(r.last_read) for r in readers)
          and copier_done(copier, ends, time.monotonic()), DRAIN_WAIT_S, STEP_S)  # fmt: skip


def copier_done(copier: Copier, ends: dict[int, int] | None, now: float) -> bool:
    """The copier committed its offsets up to `ends`, or it holds nothing read and has made no
    progress (a commit, or a recovery: `last_commit`) for QUIET_S."""
    if ends is not None and copier.caught_up(ends):
        return True
    return not copier.pending and now - copier.last_commit >= QUIET_S


def read_output(bootstrap: str, topic: str, t0: float) -> list[str]:
    """The copier's committed output: every value a fresh read_committed reader gets."""
    ends = stable_ends(bootstrap, topic, STABLE_WAIT_S)
    reader = Reader(bootstrap, "output", topic, runner.PARTITIONS, t0)
    reader.start()
    wait_until(lambda: (ends is not None and all(reader.positions().get(p, 0) >= e
                                            for p, e in ends.items()))
          or time.monotonic() - reader.last_read >= QUIET_S, DRAIN_WAIT_S, STEP_S)  # fmt: skip
    reader.stop()
    return [v for poll in reader.log.polls for _, _, v in poll.records]
