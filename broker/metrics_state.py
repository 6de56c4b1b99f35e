"""A broker's state metrics: one job, reading the broker's own objects at scrape time
(partition counts, under-replicated, purgatory sizes, controller, ZooKeeper session, log sizes
and fsyncs, connections, groups, the log cleaner, client quotas, the event loop's lag and the
garbage collector's pauses), never updated on change.

The HTTP server (broker/metrics_http.py) renders the registry on its own thread, but the
broker's state may only be read on the broker's event loop, so `BrokerStateCollector.collect`
runs `read_state` there with `run_coroutine_threadsafe` (a copy of the numbers as plain data:
one pass over partitions and groups, and the request counts' snapshot, broker/metrics_requests.py)
and builds the families from the copy on the HTTP thread; it waits at most
`collect_timeout_s`, and a broker loop too busy to answer in time gives a scrape without the
state families (and one log line), not a hang. `BrokerParts` is what it reads; the daemon fills
it in as the pieces start. docs/metrics.md lists every metric with its Kafka counterpart.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from broker.gc_pauses import GC_PAUSES, GcPauses, gc_families
from broker.histograms import HistogramReading
from broker.loop_lag import LoopLagRecorder, lag_histogram
from broker.metrics_counters import FSYNCS, FsyncStats
from broker.metrics_requests import RequestMetrics, request_families
from broker.quota.manager import Quotas
from broker.quota.metrics import quota_families, quota_reading
from broker.share.metrics import ShareMetrics, share_families
from coordinator.group.metrics import GroupSample, group_counts, group_samples
from protocol.clock import Clock

if TYPE_CHECKING:
    from broker.context import ControllerEpoch
    from broker.log.cleaner.manager import LogCleaner
    from broker.metadata_cache import MetadataCache
    from broker.replica_manager import ReplicaManager
    from coordinator.controller.elector import ControllerElector
    from coordinator.group.service import GroupCoordinator

log = logging.getLogger("odradek.broker.metrics")

ZK_STATES = ("CONNECTED", "SUSPENDED", "LOST")


class HasConnections(Protocol):
    connections: Any  # a sized collection (broker/server.py: a set of Connections)


@dataclass
class BrokerParts:
    """What the state collector reads; the daemon fills it in as the pieces start."""

    replicas: ReplicaManager
    metadata: MetadataCache
    controller_epoch: ControllerEpoch
    servers: dict[str, HasConnections] = dataclasses.field(default_factory=dict)  # by protocol
    elector: ControllerElector | None = None
    groups: GroupCoordinator | None = None
    zk_state: str = "NOT_CONNECTED"  # updated by the ZooKeeper state listener
    requests: RequestMetrics | None = None  # per-request counts (MeteredDoor)
    fsyncs: FsyncStats = FSYNCS
    cleaner: LogCleaner | None = None  # None: log.cleaner.enable = false
    quotas: Quotas | None = None  # client quotas' sensors (broker/quota/metrics.py)
    clock: Clock | None = None  # the quotas' clock: their windows are measured at its now
    loop_lag: LoopLagRecorder | None = None  # started with the metrics (broker/metrics.py)
    gc: GcPauses = GC_PAUSES  # the process's collections (broker/gc_pauses.py)
    # the schema registry's metrics: read on the loop, the families built off it
    # (broker/registry/metrics.py); None: no registry
    registry: Callable[[], Callable[[], list[Metric]]] | None = None
    share: ShareMetrics | None = None  # the share partitions' counts (broker/share/metrics.py)


class BrokerStateCollector(Collector):
    def __init__(
        self, parts: BrokerParts, loop: asyncio.AbstractEventLoop, collect_timeout_s: float = 5.0
    ) -> None:
        self.parts = parts
        self.loop = loop
        self.collect_timeout_s = collect_timeout_s

    def collect(self) -> Iterator[Metric]:
        async def on_loop() -> Callable[[], list[Metric]]:
            return read_state(self.parts)

        future = asyncio.run_coroutine_threadsafe(on_loop(), self.loop)
        try:
            build = future.result(self.collect_timeout_s)
        except (concurrent.futures.TimeoutError, RuntimeError) as exc:
            future.cancel()
            log.warning("metrics: the broker's state was not read in time (%r)", exc)
            return iter(())
        return iter(build())  # the families are built here, off the broker's loop


def _step_histogram(steps: HistogramReading) -> Metric:
    return HistogramMetricFamily(
        "odradek_replica_fetcher_step_seconds", "A follower's step: from a fetch answer's "
        "arrival to its next fetch request (the append, the HW), the follower's share of an "
        "acks=all produce's remote time (no Kafka counterpart).",
        buckets=steps.buckets, sum_value=steps.sum_s,
    )  # fmt: skip


def _confirm_histogram(confirms: HistogramReading) -> Metric:
    return HistogramMetricFamily(
        "odradek_replica_confirm_seconds", "At a leader, from an append to each follower's "
        "first fetch past it (broker/replication_timeline.py): the leader-to-follower-and-back "
        "part of an acks=all produce's remote time (no Kafka counterpart).",
        buckets=confirms.buckets, sum_value=confirms.sum_s,
    )  # fmt: skip


def read_state(parts: BrokerParts) -> Callable[[], list[Metric]]:
    """On the broker's event loop: copy what the families need as plain data (one pass over
    the partitions and groups); the function returned builds the families from that copy,
    off the loop (most of a scrape's cost for many partitions is building the samples)."""
    small = [*_replica_families(parts), *_controller_families(parts)]  # a few samples each
    requests = parts.requests.snapshot() if parts.requests is not None else None
    t = parts.replicas.traffic
    traffic = [dict(d) for d in (t.bytes_in, t.records_in, t.bytes_out, t.records_out,
                                 t.replication_bytes_out)]  # fmt: skip
    logs = [
        (topic, index, p.log.size_bytes, p.log.segments.count)
        for (topic, index), p in parts.replicas.partitions.items()
        if not p.log.closed
    ]
    fsyncs = parts.fsyncs.snapshot()
    lag = parts.loop_lag.snapshot() if parts.loop_lag is not None else None
    collections = parts.gc.snapshot()
    steps = parts.replicas.fetchers.steps.snapshot()
    confirms = parts.replicas.timeline.confirm.snapshot()
    groups = _group_reading(parts)
    cleaner = _cleaner_families(parts.cleaner) if parts.cleaner is not None else []
    ratios = parts.cleaner.dirty_ratios() if parts.cleaner is not None else {}
    registry = parts.registry() if parts.registry is not None else None
    share = parts.share.snapshot() if parts.share is not None else None
    share_groups: dict[str, int] = {}
    if parts.groups is not None:
        for g in parts.groups.share.groups():
            state = g.state.value.lower()
            share_groups[state] = share_groups.get(state, 0) + 1
    quotas = {}
    if parts.quotas is not None and parts.clock is not None:
        quotas = quota_reading(parts.quotas, parts.clock.monotonic_ms())

    def build() -> list[Metric]:
        return [
            *(request_families(requests) if requests is not None else []),
            *small,
            *_traffic_families(traffic),
            *_log_families(logs, fsyncs),
            *_group_families(groups),
            *cleaner,
            *_dirty_ratio_families(ratios),
            *quota_families(quotas),
            *([lag_histogram(lag)] if lag is not None else []),
            *gc_families(collections),
            _step_histogram(steps),
            _confirm_histogram(confirms),
            *(registry() if registry is not None else []),
            *(share_families(share, share_groups) if share is not None else []),
        ]

    return build


def state_families(parts: BrokerParts) -> list[Metric]:
    """Every scrape-time family, read and built at once (tests; the collector splits them)."""
    return read_state(parts)()


def _gauge(name: str, doc: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, doc, value=value)


def _replica_families(parts: BrokerParts) -> list[Metric]:
    rm = parts.replicas
    partitions = list(rm.partitions.values())
    leaders = [p for p in partitions if p.is_leader]
    under = sum(1 for p in leaders if len(p.isr) < len(p.replicas))
    under_min = sum(1 for p in leaders if len(p.isr) < p.min_insync_replicas)
    purgatory = GaugeMetricFamily(
        "odradek_server_delayedoperationpurgatory_purgatorysize",
        "Requests waiting (Kafka: kafka.server:type=DelayedOperationPurgatory,"
        "name=PurgatorySize): acks=all produces per partition (as Kafka's, an entry answered "
        "by its timeout counts until the high watermark passes it), long-polling fetches.",
        labels=["operation"],
    )
    purgatory.add_metric(["Produce"], sum(len(p.produce_waiters) for p in leaders))
    purgatory.add_metric(["Fetch"], rm.delayed_fetches)
    connections = GaugeMetricFamily(
        "odradek_network_connections", "Open client and broker connections per listener "
        "(Kafka: socket-server-metrics connection-count).", labels=["protocol"],
    )  # fmt: skip
    for protocol, server in sorted(parts.servers.items()):
        connections.add_metric([protocol], len(server.connections))
    shrinks = CounterMetricFamily(
        "odradek_server_replicamanager_isrshrinks", "ISR shrinks this broker wrote as leader "
        "(Kafka: ReplicaManager IsrShrinksPerSec).", value=rm.traffic.isr_shrinks,
    )  # fmt: skip
    expands = CounterMetricFamily(
        "odradek_server_replicamanager_isrexpands", "ISR expansions this broker wrote as "
        "leader (Kafka: ReplicaManager IsrExpandsPerSec).", value=rm.traffic.isr_expands,
    )  # fmt: skip
    evictions = CounterMetricFamily(
        "odradek_server_fetchsessioncache_incrementalfetchsessionevictions", "Fetch sessions "
        "evicted to make room for new ones (Kafka: FetchSessionCache "
        "IncrementalFetchSessionEvictionsPerSec).", value=rm.sessions.evictions,
    )  # fmt: skip
    return [
        _gauge("odradek_server_fetchsessioncache_numincrementalfetchsessions", "Fetch sessions "
               "(KIP-227) this broker keeps for followers and Kafka consumers (Kafka: "
               "FetchSessionCache NumIncrementalFetchSessions).", len(rm.sessions)),
        _gauge("odradek_server_fetchsessioncache_numincrementalfetchpartitionscached",
               "Partitions held in all fetch sessions (Kafka: FetchSessionCache "
               "NumIncrementalFetchPartitionsCached).", rm.sessions.partitions_cached),
        _gauge("odradek_server_replicamanager_underreplicatedpartitions", "Partitions led here "
               "whose ISR is smaller than their replica set (Kafka: ReplicaManager "
               "UnderReplicatedPartitions).", under),
        _gauge("odradek_server_replicamanager_underminisrpartitioncount", "Partitions led "
               "here whose ISR is below min.insync.replicas (Kafka: ReplicaManager "
               "UnderMinIsrPartitionCount).", under_min),
        _gauge("odradek_server_replicamanager_leadercount", "Partitions led here (Kafka: "
               "ReplicaManager LeaderCount).", len(leaders)),
        _gauge("odradek_server_replicamanager_partitioncount", "Partitions hosted here, led "
               "or followed (Kafka: ReplicaManager PartitionCount).", len(partitions)),
        purgatory, connections, shrinks, expands, evictions,
    ]  # fmt: skip


def _per_topic(name: str, doc: str, values: dict[str, int]) -> CounterMetricFamily:
    family = CounterMetricFamily(name, doc, labels=["topic"])
    for topic, value in sorted(values.items()):
        family.add_metric([topic], value)
    return family


def _traffic_families(traffic: list[dict[str, int]]) -> list[Metric]:
    """`traffic`: bytes in, records in, bytes out, records out, replication bytes out."""
    bytes_in, records_in, bytes_out, records_out, replication_out = traffic
    prefix = "odradek_server_brokertopicmetrics_"
    return [
        _per_topic(prefix + "bytes_in", "Bytes produced to partitions led here (Kafka: "
                   "BrokerTopicMetrics BytesInPerSec).", bytes_in),
        _per_topic(prefix + "messages_in", "Records produced to partitions led here (Kafka: "
                   "BrokerTopicMetrics MessagesInPerSec).", records_in),
        _per_topic(prefix + "bytes_out", "Bytes sent to consumers (Kafka: BrokerTopicMetrics "
                   "BytesOutPerSec).", bytes_out),
        _per_topic(prefix + "messages_out", "Records sent to consumers (whole batches; no "
                   "Kafka counterpart).", records_out),
        _per_topic(prefix + "replication_bytes_out", "Bytes sent to followers (Kafka: "
                   "BrokerTopicMetrics ReplicationBytesOutPerSec).", replication_out),
    ]  # fmt: skip


def _controller_families(parts: BrokerParts) -> list[Metric]:
    elector = parts.elector
    active = elector is not None and elector.is_controller
    epoch = elector.controller_epoch if active and elector is not None else None
    offline = 0
    if active:  # as Kafka: the controller reports offline partitions, the others 0
        offline = sum(
            1 for states in parts.metadata.topics.values() for s in states.values() if s.leader < 0
        )
    session = GaugeMetricFamily(
        "odradek_server_sessionexpirelistener_sessionstate", "ZooKeeper session state, 1 for "
        "the current one (Kafka: kafka.server:type=SessionExpireListener,name=SessionState).",
        labels=["state"],
    )  # fmt: skip
    for state in (*ZK_STATES, "NOT_CONNECTED"):
        session.add_metric([state], 1 if parts.zk_state == state else 0)
    return [
        _gauge("odradek_controller_kafkacontroller_activecontrollercount", "1 on the active "
               "controller, 0 elsewhere (Kafka: KafkaController ActiveControllerCount).",
               1 if active else 0),
        _gauge("odradek_controller_kafkacontroller_controllerepoch", "The controller epoch: "
               "this broker's own while it is the controller, else the highest seen in "
               "controller requests (-1: none yet).",
               epoch if epoch is not None else parts.controller_epoch.current),
        _gauge("odradek_controller_kafkacontroller_offlinepartitionscount", "Partitions "
               "without a leader, on the controller (0 elsewhere) (Kafka: KafkaController "
               "OfflinePartitionsCount).", offline),
        session,
    ]  # fmt: skip


def _log_families(
    logs: list[tuple[str, int, int, int]], fsyncs: tuple[list[tuple[str, int]], float, int]
) -> list[Metric]:
    """`logs`: (topic, partition, size, segments); `fsyncs`: FsyncStats.snapshot()."""
    size = GaugeMetricFamily(
        "odradek_log_log_size", "Bytes in the partition's log segments (Kafka: kafka.log:"
        "type=Log,name=Size).", labels=["topic", "partition"],
    )  # fmt: skip
    segments = GaugeMetricFamily(
        "odradek_log_log_numlogsegments", "Segments of the partition's log (Kafka: kafka.log:"
        "type=Log,name=NumLogSegments).", labels=["topic", "partition"],
    )  # fmt: skip
    for topic, index, size_bytes, segment_count in sorted(logs):
        size.add_metric([topic, str(index)], size_bytes)
        segments.add_metric([topic, str(index)], segment_count)
    buckets, total_s, count = fsyncs
    flush = HistogramMetricFamily(
        "odradek_log_logflushstats_logflush_seconds", "fdatasync calls on log segments and "
        "their latency (Kafka: kafka.log:type=LogFlushStats,name=LogFlushRateAndTimeMs).",
        buckets=buckets, sum_value=total_s,
    )  # fmt: skip
    flushes = CounterMetricFamily(
        "odradek_log_logflushstats_flushes", "fdatasync calls on log segments (the count of "
        "the histogram above, as a counter).", value=count,
    )  # fmt: skip
    return [size, segments, flush, flushes]


def _cleaner_families(cleaner: LogCleaner) -> list[Metric]:
    """Kafka's log cleaner gauges (kafka.log:type=LogCleaner / LogCleanerManager), on the loop
    (a few numbers; the dirty ratios were worked out by the cleaner's last look for work)."""
    s = cleaner.stats
    kafka = "kafka.log:type=LogCleaner"
    manager = "kafka.log:type=LogCleanerManager"
    return [
        _gauge("odradek_log_cleaner_max_dirty_percent", "The highest dirty ratio of a "
               f"compacted log, in percent ({manager},name=max-dirty-percent).",
               s.max_dirty_percent),
        _gauge("odradek_log_cleaner_recopy_percent", "Bytes written over bytes read by the "
               f"last cleaning pass, in percent ({kafka},name=cleaner-recopy-percent).",
               s.recopy_percent),
        _gauge("odradek_log_cleaner_max_clean_time_secs", "Seconds the last cleaning pass "
               f"took ({kafka},name=max-clean-time-secs).", s.max_clean_time_secs),
        _gauge("odradek_log_cleaner_max_compaction_delay_secs", "How far past "
               "max.compaction.lag.ms the most overdue log is, in seconds "
               f"({kafka},name=max-compaction-delay-secs).", s.max_compaction_delay_secs),
        _gauge("odradek_log_cleaner_uncleanable_partitions_count", "Logs whose cleaning "
               f"failed, left alone until restart ({manager},name=uncleanable-partitions-count).",
               len(cleaner.uncleanable)),
    ]  # fmt: skip


def _dirty_ratio_families(ratios: dict[tuple[str, int], float]) -> list[Metric]:
    family = GaugeMetricFamily(
        "odradek_log_cleaner_dirty_ratio", "Dirty bytes over cleanable bytes of each compacted "
        "log this broker holds (what min.cleanable.dirty.ratio is compared with).",
        labels=["topic", "partition"],
    )  # fmt: skip
    for (topic, index), ratio in sorted(ratios.items()):
        family.add_metric([topic, str(index)], ratio)
    return [family]


def _group_reading(parts: BrokerParts) -> list[GroupSample]:
    if parts.groups is None:
        return []
    hosted = parts.replicas.partitions

    def end_offset(topic: str, partition: int) -> int | None:
        p = hosted.get((topic, partition))
        return None if p is None else p.high_watermark

    return group_samples(parts.groups.all_groups(), end_offset)


def _group_families(groups: list[GroupSample]) -> list[Metric]:
    state = GaugeMetricFamily(
        "odradek_coordinator_group_state", "1 for the group's current state (the groups this "
        "broker coordinates; Kafka names the states as DescribeGroups).", labels=["group", "state"],
    )  # fmt: skip
    members = GaugeMetricFamily(
        "odradek_coordinator_group_members", "Members of the group (Kafka: the member count "
        "kafka-consumer-groups --describe shows).", labels=["group"],
    )  # fmt: skip
    lag = GaugeMetricFamily(
        "odradek_coordinator_group_lag", "High watermark of this broker's replica minus the "
        "group's committed offset (Kafka: records-lag, as kafka-consumer-groups computes it).",
        labels=["group", "topic", "partition"],
    )  # fmt: skip
    for g in groups:
        state.add_metric([g.group_id, g.state], 1)
        members.add_metric([g.group_id], g.members)
        for topic, partition, value in g.lags:
            lag.add_metric([g.group_id, topic, str(partition)], value)
    return [state, members, lag, *_group_count_families(groups)]


def _group_count_families(groups: list[GroupSample]) -> list[Metric]:
    """Kafka's group-coordinator-metrics group-count{protocol} and consumer-group-count{state},
    and each KIP-848 group's epoch and lowest member epoch (coordinator/group/metrics.py)."""
    counts = group_counts(groups)
    by_protocol = GaugeMetricFamily(
        "odradek_coordinator_group_count", "Groups this broker coordinates by protocol "
        "(Kafka: group-coordinator-metrics group-count).", labels=["protocol"],
    )  # fmt: skip
    by_state = GaugeMetricFamily(
        "odradek_coordinator_consumer_group_count", "KIP-848 consumer groups by state (Kafka: "
        "group-coordinator-metrics consumer-group-count).", labels=["state"],
    )  # fmt: skip
    epoch = GaugeMetricFamily(
        "odradek_coordinator_consumer_group_epoch", "A consumer group's group epoch.",
        labels=["group"],
    )  # fmt: skip
    lowest = GaugeMetricFamily(
        "odradek_coordinator_consumer_group_member_epoch_min", "A consumer group's lowest "
        "member epoch: below the group epoch while members reconcile.", labels=["group"],
    )  # fmt: skip
    for protocol, n in counts.by_protocol.items():
        by_protocol.add_metric([protocol], n)
    for name, n in counts.consumer_by_state.items():
        by_state.add_metric([name], n)
    for g in groups:
        if g.group_type == "consumer":
            epoch.add_metric([g.group_id], g.group_epoch)
            if g.member_epochs:
                lowest.add_metric([g.group_id], g.member_epochs[0])
    return [by_protocol, by_state, epoch, lowest]
