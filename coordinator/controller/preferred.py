"""Leader imbalance and the automatic preferred-leader rebalance decision (pure, no I/O).

Kafka's rule (auto.leader.rebalance.enable): for each broker, look at the partitions whose
preferred replica (replica 0 of the assignment) it is. The imbalance ratio is the share of them
that some other broker leads. When a broker's ratio is above
`leader.imbalance.per.broker.percentage` / 100, the controller runs a preferred leader election
for those partitions (each moves only if the preferred replica is alive and in the ISR; see
coordinator/controller/election.py `preferred_leader_move`). The controller's timer calls
`partitions_to_rebalance` every `leader.imbalance.check.interval.seconds`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

TopicPartition = tuple[str, int]


def imbalance_ratios(
    replicas: Mapping[TopicPartition, Sequence[int]], leaders: Mapping[TopicPartition, int]
) -> dict[int, float]:
    """{broker: share of its preferred partitions that it does not lead} (0.0 .. 1.0)."""
    preferred_count: dict[int, int] = {}
    not_leading: dict[int, int] = {}
    for tp, rs in replicas.items():
        if not rs:
            continue
        preferred = rs[0]
        preferred_count[preferred] = preferred_count.get(preferred, 0) + 1
        if leaders.get(tp) != preferred:
            not_leading[preferred] = not_leading.get(preferred, 0) + 1
    return {b: not_leading.get(b, 0) / n for b, n in sorted(preferred_count.items())}


def partitions_to_rebalance(
    replicas: Mapping[TopicPartition, Sequence[int]],
    leaders: Mapping[TopicPartition, int],
    imbalance_percentage: int,
) -> list[TopicPartition]:
    """The partitions to hand back to their preferred replicas: those of every broker whose
    imbalance ratio exceeds `imbalance_percentage` percent and that the broker does not lead."""
    ratios = imbalance_ratios(replicas, leaders)
    over = {b for b, ratio in ratios.items() if ratio * 100 > imbalance_percentage}
    return sorted(
        tp for tp, rs in replicas.items() if rs and rs[0] in over and leaders.get(tp) != rs[0]
    )
