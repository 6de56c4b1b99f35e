"""Errors that say their cause: sentences built from what the client knows, no I/O.

An error code names a symptom (LEADER_NOT_AVAILABLE, NOT_ENOUGH_REPLICAS, a batch that expired);
the user wants the cause. These pure functions turn the cluster metadata and a broker's answer
into that sentence, for the producer's failed sends, `odradek topics describe` and the Admin:

- `why_no_leader`: a partition without a leader, from its replicas, its ISR and the live brokers
  (a Metadata answer lists only live brokers): "partition chaos-0 has no leader: its replicas
  1,2 are down and unclean election is off". Whether unclean election is on is a topic config
  (DescribeConfigs), given when the caller has it and left out of the sentence otherwise.
- `leaderless_reason`: the same from a `ClusterMetadata` snapshot, None while the partition has a
  live leader.
- `produce_refusal`: the text of a produce refusal, the broker's own message kept whole, with
  what was refused in front: "acks=all refused: chaos-0: ISR [3] is below min.insync.replicas 2".
- `waiting_reasons`: why a client is waiting on some partitions (the producer's unsent or
  retried batches, the consumer's assigned partitions): no live leader, else the last retriable
  error met there. `odradek produce` / `consume` print it while they wait (deploy/wait_notes.py).
- `fetch_refusal`: a fetch's partition error (Fetch answers carry no message), in words: who was
  refused what, on which partition: "user alice may not Read topic orders (partition 0, fetch
  at offset 0)"; `client_principal` says who, from the client's own security settings.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence

from client.cluster import NO_LEADER, ClusterMetadata
from client.types import TopicPartition, partition_words
from protocol.errors import (
    NotEnoughReplicasAfterAppendError,
    NotEnoughReplicasError,
    OdradekError,
    TopicAuthorizationFailedError,
)
from transport.security import SecurityConfig


def _ids(ids: Sequence[int]) -> str:
    return ",".join(map(str, ids))


def _replicas(ids: Sequence[int], owner: str = "") -> str:
    """ "its replicas 1,2 are" / "replica 3 is": subject and verb agree."""
    if len(ids) == 1:
        return f"{owner}replica {ids[0]} is"
    return f"{owner}replicas {_ids(ids)} are"


def why_no_leader(
    name: str,
    replicas: Sequence[int],
    isr: Sequence[int],
    live: Collection[int],
    unclean: bool | None = None,
) -> str:
    """Why partition `name` (topic-partition) has no leader. `live`: the live brokers' ids;
    `unclean`: the topic's unclean.leader.election.enable, None when not known."""
    head = f"partition {name} has no leader: "
    down = [r for r in replicas if r not in live]
    up = [r for r in replicas if r in live]
    election = "" if unclean is None else f"unclean election is {'on' if unclean else 'off'}"
    if not replicas:
        return head + "it has no replicas"
    if not up:
        return head + f"{_replicas(down, 'its ')} down" + (f" and {election}" if election else "")
    in_sync_up = [r for r in isr if r in live]
    if not down or in_sync_up:
        where = f" ({_replicas(down)} down)" if down else ""
        return head + f"an election is under way: {_replicas(up)} up{where}"
    text = (
        f"{_replicas(down, 'its ')} down and {_replicas(up)} up but out of sync (ISR [{_ids(isr)}])"
    )
    if unclean is None:
        return head + text
    if unclean:
        return head + text + f"; {election}: an out-of-sync replica may be elected"
    return head + text + f", and {election}"


def leaderless_reason(
    meta: ClusterMetadata, topic: str, partition: int, unclean: bool | None = None
) -> str | None:
    """Why the partition has no live leader in `meta`, or None when it has one."""
    parts = meta.partitions.get(topic)
    name = f"{topic}-{partition}"
    if parts is None:
        code = meta.topic_errors.get(topic)
        return f"topic {topic!r} is not in the metadata" + (f" (error {code})" if code else "")
    if not 0 <= partition < len(parts):
        return f"partition {name} does not exist ({topic!r} has {len(parts)})"
    p = parts[partition]
    if p.leader != NO_LEADER and p.leader in meta.brokers:
        return None
    return why_no_leader(name, p.replicas, p.isr, meta.brokers, unclean)


def produce_refusal(code: int, message: str | None, name: str) -> str:
    """The message a produce refusal raises with: the broker's text (or the partition's name),
    with what was refused in front when the code alone would not say it."""
    if code == NotEnoughReplicasError.code:
        return "acks=all refused: " + (
            message or f"{name}: fewer in-sync replicas than min.insync.replicas"
        )
    if code == NotEnoughReplicasAfterAppendError.code:
        return "acks=all not confirmed: " + (
            message or f"{name}: the ISR shrank below min.insync.replicas before it replicated"
        )
    return message or name


def waiting_reasons(
    meta: ClusterMetadata,
    partitions: Iterable[TopicPartition],
    last_errors: Mapping[TopicPartition, str],
) -> dict[TopicPartition, str]:
    """Why each of `partitions` is waited on: it has no live leader in `meta` (said from the
    metadata), else the last retriable error met there (`last_errors`); partitions with neither
    are left out, and so are those of a topic not in the metadata yet (still being looked up)."""
    out: dict[TopicPartition, str] = {}
    for tp in partitions:
        why = None
        if tp.topic in meta.partitions:
            why = leaderless_reason(meta, tp.topic, tp.partition)
        why = why or last_errors.get(tp)
        if why:
            out[tp] = why
    return out


def client_principal(security: SecurityConfig) -> str:
    """Who the brokers take this client for, in words: its SASL user; with a TLS client
    certificate, the certificate's subject, which the client does not parse; otherwise Kafka's
    principal for a client that did not authenticate, ANONYMOUS."""
    if security.sasl_plain_username:
        return f"user {security.sasl_plain_username}"
    if security.ssl_certfile:
        return "the user of this client's TLS certificate"
    return "user ANONYMOUS"


def fetch_refusal(error: type[OdradekError], who: str, tp: tuple[str, int], detail: str) -> str:
    """The message of a fetch's partition error, which the Fetch answer does not carry: who
    may not read it for an authorization failure, else which partition and what was done."""
    if error is TopicAuthorizationFailedError:
        return f"{who} may not Read topic {tp[0]} (partition {tp[1]}, {detail})"
    return f"{partition_words(tp)}: {detail}"
