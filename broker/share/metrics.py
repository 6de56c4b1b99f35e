"""Share groups' metrics (KIP-932's metrics section) under Kafka's names: what a leader's
SharePartitionManager counts as it serves (`ShareMetrics`, plain counters updated on the
broker's loop), and the Prometheus families built from a copy of them at scrape time
(broker/metrics_state.py reads the copy on the loop and calls `share_families` off it).

Kafka's names, as the rest of the broker's families spell them (`odradek_` + the JMX type and
name, lower case): BrokerTopicMetrics' TotalShareFetchRequestsPerSec,
FailedShareFetchRequestsPerSec, TotalShareAcknowledgementRequestsPerSec and
FailedShareAcknowledgementRequestsPerSec per topic (each partition of a request counts once,
as Kafka marks them per topic partition), ShareGroupMetrics' RecordAcknowledgementsPerSec by ackType
(accept, release, reject, renew) and PartitionLoadTimeMs (a summary: loads and their total
ms), and the group coordinator's share-group-count by state. Per share partition this leader
holds (label group, topic, partition): KIP-1103's SharePartitionMetrics InFlightMessageCount
(SPEO - SPSO, as Kafka's numInFlightRecords), and odradek's archived record count (rejected
or at the delivery count limit, since the leader loaded the share partition), which the
console's groups view shows (deploy/console/).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    Metric,
    SummaryMetricFamily,
)

ACK_TYPES = {1: "accept", 2: "release", 3: "reject", 4: "renew"}  # 0 (GAP) is not counted
SpCounts = dict[
    tuple[str, str, int], tuple[int, int]
]  # (group, topic, partition) -> (in flight, archived)
SHARE_STATES = ("empty", "stable", "dead")


@dataclass(slots=True)
class ShareMetrics:
    fetches: Counter[str] = field(default_factory=Counter)  # by topic
    fetches_failed: Counter[str] = field(default_factory=Counter)
    acks: Counter[str] = field(default_factory=Counter)
    acks_failed: Counter[str] = field(default_factory=Counter)
    records_acked: Counter[str] = field(default_factory=Counter)  # by ack type
    loads: int = 0
    load_ms_total: float = 0.0
    partitions: SpCounts = field(default_factory=dict)  # a snapshot's, from `held`
    held: Callable[[], SpCounts] | None = None  # the manager's share partitions, counted

    def on_request(self, fetch: bool, topics: Iterable[str], failed: Iterable[str]) -> None:
        """A request's partitions (their topics, one per partition), those that failed."""
        total, bad = (self.fetches, self.fetches_failed) if fetch else (self.acks, self.acks_failed)
        total.update(topics)
        bad.update(failed)

    def on_acknowledged(self, first: int, last: int, types: Iterable[int]) -> None:
        """A batch applied: one type for its range, or one per offset."""
        kinds = list(types)
        if len(kinds) == 1:
            name = ACK_TYPES.get(kinds[0])
            if name is not None:
                self.records_acked[name] += last - first + 1
            return
        for t in kinds:
            name = ACK_TYPES.get(t)
            if name is not None:
                self.records_acked[name] += 1

    def on_loaded(self, ms: float) -> None:
        self.loads += 1
        self.load_ms_total += ms

    def snapshot(self) -> ShareMetrics:
        return ShareMetrics(
            Counter(self.fetches), Counter(self.fetches_failed), Counter(self.acks),
            Counter(self.acks_failed), Counter(self.records_acked), self.loads,
            self.load_ms_total, self.held() if self.held is not None else {},
        )  # fmt: skip


def share_families(m: ShareMetrics, groups_by_state: dict[str, int]) -> list[Metric]:
    """The families of a snapshot and the share groups this broker coordinates by state."""
    out: list[Metric] = []
    for name, kafka, counts in (
        ("totalsharefetchrequests", "TotalShareFetchRequestsPerSec", m.fetches),
        ("failedsharefetchrequests", "FailedShareFetchRequestsPerSec", m.fetches_failed),
        ("totalshareacknowledgementrequests", "TotalShareAcknowledgementRequestsPerSec", m.acks),
        ("failedshareacknowledgementrequests", "FailedShareAcknowledgementRequestsPerSec",
         m.acks_failed),
    ):  # fmt: skip
        family = CounterMetricFamily(
            f"odradek_server_brokertopicmetrics_{name}", f"Share requests served here per "
            f"topic (Kafka: kafka.server:type=BrokerTopicMetrics,name={kafka}).",
            labels=["topic"],
        )  # fmt: skip
        for topic, n in sorted(counts.items()):
            family.add_metric([topic], n)
        out.append(family)
    acked = CounterMetricFamily(
        "odradek_server_sharegroupmetrics_recordacknowledgements", "Records acknowledged by "
        "type (Kafka: kafka.server:type=ShareGroupMetrics,name=RecordAcknowledgementsPerSec,"
        "ackType=...).", labels=["ack_type"],
    )  # fmt: skip
    for name in ACK_TYPES.values():
        acked.add_metric([name], m.records_acked.get(name, 0))
    load = SummaryMetricFamily(
        "odradek_server_sharegroupmetrics_partitionloadtimems", "Share partitions loaded "
        "(read from the share coordinator) and their total load time in ms (Kafka: "
        "kafka.server:type=ShareGroupMetrics,name=PartitionLoadTimeMs).",
        count_value=m.loads, sum_value=m.load_ms_total,
    )  # fmt: skip
    count = GaugeMetricFamily(
        "odradek_coordinator_share_group_count", "Share groups this broker coordinates by "
        "state (Kafka: group-coordinator-metrics share-group-count).", labels=["state"],
    )  # fmt: skip
    for state in SHARE_STATES:
        count.add_metric([state], groups_by_state.get(state, 0))
    return [*out, acked, load, count, *_partition_families(m.partitions)]


def _partition_families(counts: SpCounts) -> list[Metric]:
    labels = ["group", "topic", "partition"]
    in_flight = GaugeMetricFamily(
        "odradek_server_sharepartitionmetrics_inflightmessagecount", "Offsets between a share "
        "partition's start and end offsets, on its leader (Kafka: kafka.server:type="
        "SharePartitionMetrics,name=InFlightMessageCount).", labels=labels,
    )  # fmt: skip
    archived = GaugeMetricFamily(
        "odradek_server_sharepartitionmetrics_archivedrecordcount", "Records a share partition's "
        "leader archived (rejected, or at the delivery count limit) since it loaded it.",
        labels=labels,
    )  # fmt: skip
    for (group, topic, partition), (n_in_flight, n_archived) in sorted(counts.items()):
        in_flight.add_metric([group, topic, str(partition)], n_in_flight)
        archived.add_metric([group, topic, str(partition)], n_archived)
    return [in_flight, archived]
