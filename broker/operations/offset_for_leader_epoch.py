"""OffsetForLeaderEpoch: where each asked-for leader epoch ends in this leader's log (KIP-101,
KIP-320). Followers ask it before fetching (broker/replica_fetcher.py, over the native door);
Kafka clients ask it to detect log truncation after a leader change.

Only the leader answers (NOT_LEADER_OR_FOLLOWER otherwise), after the same fencing as Fetch on
`current_leader_epoch` (FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH); the answer is the log's
epoch cache lookup through the replica manager (broker/log/epoch.py `end_offset_for`, Kafka's
rules): the largest epoch known <= the one asked for and where it ends, -1/-1 for none.

ACLs, as Kafka's: ClusterAction on the cluster (a follower) covers every topic; without it,
a topic the principal may not Describe is TOPIC_AUTHORIZATION_FAILED on each of its partitions.
"""

from __future__ import annotations

from dataclasses import dataclass

from broker.context import BrokerContext
from broker.security import rules
from broker.session import Session
from protocol.errors import TopicAuthorizationFailedError

API = "OffsetForLeaderEpoch"


@dataclass(frozen=True, slots=True)
class Asked:
    partition: int
    current_leader_epoch: int  # -1: not fenced
    leader_epoch: int  # the epoch whose end is asked for


@dataclass(frozen=True, slots=True)
class OffsetForLeaderEpoch:
    topics: tuple[tuple[str, tuple[Asked, ...]], ...]


@dataclass(frozen=True, slots=True)
class EpochEnd:
    partition: int
    error_code: int
    leader_epoch: int  # the epoch found, -1 for none
    end_offset: int  # where it ends, -1 for none


@dataclass(frozen=True, slots=True)
class OffsetForLeaderEpochResult:
    topics: tuple[tuple[str, tuple[EpochEnd, ...]], ...]  # as asked


def run(
    ctx: BrokerContext, session: Session, req: OffsetForLeaderEpoch
) -> OffsetForLeaderEpochResult:
    refused = _refused(ctx, session, req)
    code = TopicAuthorizationFailedError.code
    out = []
    for name, asked in req.topics:
        if name in refused:
            out.append((name, tuple(EpochEnd(a.partition, code, -1, -1) for a in asked)))
            continue
        ends = []
        for a in asked:
            error, epoch, end = ctx.replicas.end_offset_for_epoch(
                name, a.partition, a.current_leader_epoch, a.leader_epoch
            )
            ends.append(EpochEnd(a.partition, error, epoch, end))
        out.append((name, tuple(ends)))
    return OffsetForLeaderEpochResult(tuple(out))


def _refused(ctx: BrokerContext, session: Session, req: OffsetForLeaderEpoch) -> frozenset[str]:
    """ClusterAction on the cluster covers every topic (not logged when denied: a client is
    then checked per topic); else Describe on each."""
    if rules.allows(ctx, session, rules.CLUSTER_ACTION, rules.CLUSTER, api=API, log_denied=False):
        return rules.NOTHING
    names = (name for name, _ in req.topics)
    return rules.denied(ctx, session, rules.DESCRIBE, rules.TOPIC, names, api=API)
