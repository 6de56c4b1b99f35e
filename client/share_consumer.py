"""AsyncShareConsumer: a member of a share group (KIP-932), as Kafka's KafkaShareConsumer, over
the native door's share APIs (protocol/api/share.py).

    consumer = AsyncShareConsumer(bootstrap, group_id="jobs")
    consumer.subscribe(["jobs"])
    for record in await consumer.poll(1000):      # accepted by the next poll (implicit mode)
        handle(record.value)

How it works:
- membership: a background task sends ShareGroupHeartbeat to the group's coordinator every
  heartbeat interval it is told (member id made here, a uuid; epoch 0 joins, -1 leaves). The
  answer's assignment is the partitions to fetch, each topic named beside its id. UNKNOWN_MEMBER_ID
  or FENCED_MEMBER_EPOCH: rejoin at epoch 0; a moved or loading coordinator: look it up again;
  any other error is raised by the next poll.
- fetching: `poll` sends one ShareFetch to each leader of an assigned partition (concurrently),
  over a share session per leader (epoch 0 opens it with every partition, later epochs name
  what is added or forgotten and carry the waiting acknowledgements), and returns the acquired
  records with their delivery counts. A session the leader lost (SHARE_SESSION_NOT_FOUND,
  INVALID_SHARE_SESSION_EPOCH, a dropped connection) is opened again.
- acknowledging: client/share_acks.py's bookkeeping (implicit or explicit
  `share_acknowledgement_mode`, ShareStateError as Kafka's IllegalStateException). What waits
  rides the next ShareFetch, or is sent by `commit_sync` / `commit_async` (ShareAcknowledge,
  each partition's error or None), and `close` sends it with the final epoch, which closes the
  sessions (the leader releases what is left) and leaves the group.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Callable, Iterable
from typing import Any

from client._lifecycle import ClusterClient
from client.cluster import Cluster
from client.fetched import decode_fetched
from client.share_acks import IMPLICIT, Batch, Part, ShareAcks, ShareRecord
from client.types import TopicPartition
from protocol.api import share as wire
from protocol.api.group import FindCoordinatorRequest, FindCoordinatorResponse
from protocol.errors import NetworkError, OdradekError, RequestTimedOutError, UsageError, for_code
from transport.connection import BrokerConnection
from transport.security import SecurityConfig

log = logging.getLogger("odradek.client.share")
NONE, UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH = 0, 25, 110
SESSION_LOST = frozenset({122, 123})  # SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION_EPOCH
FINAL_EPOCH, LEAVE_EPOCH, MAX_EPOCH = -1, -1, 2**31 - 1
AckResults = dict[TopicPartition, OdradekError | None]


class AsyncShareConsumer(ClusterClient):
    def __init__(
        self,
        bootstrap_servers: str | Iterable[str],
        *,
        group_id: str,
        client_id: str | None = None,
        share_acknowledgement_mode: str = IMPLICIT,
        max_poll_records: int = 500,
        fetch_max_wait_ms: int = 500,
        fetch_min_bytes: int = 1,
        fetch_max_bytes: int = 50 * 1024 * 1024,
        request_timeout_ms: int = 30_000,
        retry_backoff_ms: int = 100,
        check_crcs: bool = True,
        **security: Any,  # TLS/SASL, kafka-python's names (transport/security.py)
    ) -> None:
        if not group_id:
            raise UsageError("a share consumer needs a group_id")
        if max_poll_records < 1:
            raise UsageError("max_poll_records must be at least 1")
        self._acks = ShareAcks(share_acknowledgement_mode)
        self.group_id, self.client_id = group_id, client_id or ""
        self.member_id, self.member_epoch = str(uuid.uuid4()), 0
        self.max_poll_records, self.fetch_max_wait_ms = max_poll_records, fetch_max_wait_ms
        self.fetch_min_bytes, self.fetch_max_bytes = fetch_min_bytes, fetch_max_bytes
        self.request_timeout_ms, self.retry_backoff_ms = request_timeout_ms, retry_backoff_ms
        self.check_crcs = check_crcs
        self._cluster = Cluster(
            bootstrap_servers, client_id=client_id, request_timeout_ms=request_timeout_ms,
            retry_backoff_ms=retry_backoff_ms, security=SecurityConfig.from_options(security),
        )  # fmt: skip
        self._started = self._closed = False
        self._topics: list[str] = []
        self._assigned: set[TopicPartition] = set()
        self._ids: dict[str, str] = {}  # topic name -> id (a uuid's text), from the assignment
        self._names: dict[str, str] = {}  # and back
        self._epochs: dict[int, int] = {}  # leader -> its share session's next epoch
        self._session_parts: dict[int, set[Part]] = {}  # leader -> the partitions in it
        self._coordinator: BrokerConnection | None = None
        self._heartbeat_task: asyncio.Task[None] | None = None
        self._assigned_now = asyncio.Event()
        self._error: OdradekError | None = None  # raised by the next poll
        self._stale = False  # a leader is unknown or moved: the metadata is asked for again
        self._commits: set[asyncio.Task[None]] = set()

    # ----- subscription and membership ------------------------------------------------------

    def subscribe(self, topics: Iterable[str]) -> None:
        self._check_open()
        wanted = [topics] if isinstance(topics, str) else sorted(set(topics))
        if not wanted:
            raise UsageError("subscribe to at least one topic (unsubscribe() leaves)")
        self._topics = wanted
        self._cluster.add_topics(wanted)

    def subscription(self) -> set[str]:
        return set(self._topics)

    def assignment(self) -> set[TopicPartition]:
        return set(self._assigned)

    def _check_open(self) -> None:
        if self._closed:
            raise UsageError("the share consumer is closed")

    async def _find_coordinator(self) -> BrokerConnection:
        if self._coordinator is not None and not self._coordinator.closed:
            return self._coordinator
        resp: FindCoordinatorResponse = await self._cluster.send_to_any(
            FindCoordinatorRequest(self.group_id), self.request_timeout_ms, read=True
        )
        if resp.error_code != NONE:
            raise for_code(resp.error_code)(resp.error_message)
        self._coordinator = await self._cluster.connect(resp.host, resp.port, max_in_flight=4)
        return self._coordinator

    def _drop_coordinator(self) -> None:
        if self._coordinator is not None:
            self._coordinator.abort()
        self._coordinator = None

    async def _heartbeat(self, epoch: int) -> int:
        """One ShareGroupHeartbeat; the interval until the next (ms)."""
        conn = await self._find_coordinator()
        req = wire.ShareGroupHeartbeatRequest(self.group_id, self.member_id, epoch, None,
                                              list(self._topics), self.client_id)  # fmt: skip
        resp: wire.ShareGroupHeartbeatResponse = await conn.send(req, self.request_timeout_ms)
        code = resp.error_code
        if code == NONE:
            self.member_epoch = resp.member_epoch
            if resp.assignment is not None:
                self._assign(resp.assignment)
            return resp.heartbeat_interval_ms or 5_000
        if code in (UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH):
            log.info("share group %s: member %s rejoins (%s)", self.group_id, self.member_id,
                     for_code(code).name)  # fmt: skip
            self.member_epoch = 0
            self._assign([])
            return 0
        error = for_code(code)(resp.error_message)
        if not error.retriable:
            self._error = error
        self._drop_coordinator()
        return self.retry_backoff_ms

    def _assign(self, topics: list[wire.ShareAssignedTopic]) -> None:
        for t in topics:
            if t.topic:
                self._ids[t.topic], self._names[t.topic_id] = t.topic_id, t.topic
        self._assigned = {TopicPartition(t.topic, p) for t in topics if t.topic
                          for p in t.partitions}  # fmt: skip
        if self._assigned:
            self._assigned_now.set()
        else:
            self._assigned_now.clear()

    async def _heartbeat_loop(self) -> None:
        while not self._closed:
            try:
                wait_ms = await self._heartbeat(self.member_epoch)
            except (NetworkError, RequestTimedOutError) as exc:
                log.debug("share group %s: heartbeat failed: %s", self.group_id, exc)
                self._drop_coordinator()
                wait_ms = self.retry_backoff_ms
            except OdradekError as exc:
                if not exc.retriable:
                    self._error = exc
                wait_ms = self.retry_backoff_ms
            await asyncio.sleep(wait_ms / 1000)

    def _ensure_heartbeat(self) -> None:
        if not self._topics:
            raise UsageError("subscribe() before poll()")
        if self._heartbeat_task is None or self._heartbeat_task.done():
            self._heartbeat_task = asyncio.create_task(self._heartbeat_loop())

    # ----- polling ----------------------------------------------------------------------------

    async def poll(self, timeout_ms: float = 0) -> list[ShareRecord]:
        """The records acquired for this member, within `timeout_ms` ([] if none came)."""
        self._check_open()
        await self.start()
        self._ensure_heartbeat()
        self._raise_error()
        self._acks.settle()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_ms / 1000
        while True:
            left_ms = max(0.0, (deadline - loop.time()) * 1000)
            if self._assigned:
                records = await self._fetch_round(int(min(left_ms, self.fetch_max_wait_ms)))
                self._raise_error()
                if records:
                    self._acks.delivered(records)
                    return records
            elif left_ms > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._assigned_now.wait(), left_ms / 1000)
            if loop.time() >= deadline:
                return []

    def _raise_error(self) -> None:
        error, self._error = self._error, None
        if error is not None:
            raise error

    def _by_leader(self, parts: Iterable[Part]) -> dict[int, list[Part]]:
        out: dict[int, list[Part]] = {}
        for topic, partition in parts:
            leader = self._cluster.metadata.leader_for(topic, partition)
            if leader < 0:
                self._stale = True  # the next round asks for the metadata first
                continue
            out.setdefault(leader, []).append((topic, partition))
        return out

    async def _fetch_round(self, wait_ms: int) -> list[ShareRecord]:
        if self._stale:
            self._stale = False
            await self._cluster.request_update()
        leaders = self._by_leader(sorted((tp.topic, tp.partition) for tp in self._assigned))
        if not leaders:  # none known yet: the metadata is asked for after a backoff
            await asyncio.sleep(self.retry_backoff_ms / 1000)
            return []
        got = await asyncio.gather(*(self._fetch_from(node, parts, wait_ms)
                                     for node, parts in leaders.items()),
                                   return_exceptions=True)  # fmt: skip
        records: list[ShareRecord] = []
        for node, result in zip(leaders, got, strict=True):
            if isinstance(result, BaseException):
                if not isinstance(result, OdradekError):
                    raise result
                log.debug("share fetch from %d failed: %s", node, result)
                self._lose_session(node)
                self._stale = True
            else:
                records.extend(result)
        if self._stale and not records:
            await asyncio.sleep(self.retry_backoff_ms / 1000)
        return records

    def _lose_session(self, node: int) -> None:
        self._epochs.pop(node, None)
        self._session_parts.pop(node, None)

    def _next_epoch(self, node: int, epoch: int) -> None:
        self._epochs[node] = 1 if epoch in (0, MAX_EPOCH) else epoch + 1

    def _partitions(self, parts: Iterable[Part], acks: dict[Part, list[Batch]]
                    ) -> list[wire.SharePartitionRequest]:  # fmt: skip
        return [
            wire.SharePartitionRequest(self._ids[t], p, [
                wire.ShareAckBatch(f, last, list(types)) for f, last, types in acks.get((t, p), [])
            ])
            for t, p in sorted(set(parts) | set(acks)) if t in self._ids
        ]  # fmt: skip

    async def _fetch_from(self, node: int, parts: list[Part], wait_ms: int) -> list[ShareRecord]:
        epoch = self._epochs.get(node, 0)
        session = self._session_parts.get(node, set())
        wanted = set(parts)
        acks = self._acks.take(parts) if epoch else {}  # epoch 0 may carry none
        forgotten = [wire.ShareForgotten(self._ids[t], p) for t, p in sorted(session - wanted)
                     if t in self._ids] if epoch else []  # fmt: skip
        req = wire.ShareFetchRequest(
            self.group_id, self.member_id, epoch, wait_ms, self.fetch_min_bytes,
            self.fetch_max_bytes, self.max_poll_records,
            self._partitions(wanted - session if epoch else wanted, acks), forgotten,
        )  # fmt: skip
        conn = await self._cluster.connection(node)
        resp: wire.ShareFetchResponse = await conn.send(req, self.request_timeout_ms + wait_ms)
        if resp.error_code in SESSION_LOST:
            self._lose_session(node)
            return []
        if resp.error_code != NONE:
            raise for_code(resp.error_code)(resp.error_message)
        self._next_epoch(node, epoch)
        self._session_parts[node] = wanted
        records: list[ShareRecord] = []
        for data in resp.partitions:
            topic = self._names.get(data.topic_id)
            if topic is None:
                continue
            if data.acknowledge_error_code:
                log.warning("share group %s: acknowledgements of %s-%d refused: %s",
                            self.group_id, topic, data.partition,
                            for_code(data.acknowledge_error_code).name)  # fmt: skip
            if data.error_code:
                self._stale = True
                continue
            records.extend(self._records(topic, data))
        return records

    def _records(self, topic: str, data: wire.SharePartitionData) -> list[ShareRecord]:
        counts = {o: a.delivery_count for a in data.acquired
                  for o in range(a.first_offset, a.last_offset + 1)}  # fmt: skip
        if not counts:
            return []
        tp = TopicPartition(topic, data.partition)
        decoded, _ = decode_fetched(tp, bytes(data.records), min(counts), self.check_crcs)
        out = [ShareRecord(*r, counts[r.offset]) for r in decoded if r.offset in counts]
        gaps = set(counts) - {r.offset for r in out}
        if gaps:
            self._acks.gaps((topic, data.partition), gaps)
        return out

    # ----- acknowledging ----------------------------------------------------------------------

    def acknowledge(self, record: ShareRecord, kind: str = "accept") -> None:
        """Acknowledge one record of the last poll: "accept", "release" or "reject" (explicit
        mode only; ShareStateError otherwise, or for a record not from the last poll)."""
        self._check_open()
        self._acks.acknowledge(record, kind)

    async def commit_sync(self) -> AckResults:
        """Send the waiting acknowledgements (implicit mode: the last poll's records, accepted)
        now; each partition's error, or None."""
        self._check_open()
        self._acks.settle()
        return await self._send_acks(self._acks.take())

    def commit_async(self, callback: Callable[[AckResults], object] | None = None) -> None:
        """As commit_sync, without waiting: `callback(results)` when answered."""
        self._check_open()
        self._acks.settle()
        acks = self._acks.take()

        async def commit() -> None:
            results = await self._send_acks(acks)
            if callback is not None:
                callback(results)

        task = asyncio.create_task(commit())
        self._commits.add(task)
        task.add_done_callback(self._commits.discard)

    async def _send_acks(self, acks: dict[Part, list[Batch]], final: bool = False) -> AckResults:
        results: AckResults = {}
        nodes = self._by_leader(acks)
        if final:
            nodes.update({n: [] for n in self._epochs if n not in nodes})
        for node, parts in nodes.items():
            results.update(await self._acknowledge_at(node, {p: acks[p] for p in parts}, final))
        return results

    async def _acknowledge_at(
        self, node: int, acks: dict[Part, list[Batch]], final: bool
    ) -> AckResults:
        tps = [TopicPartition(t, p) for t, p in acks]
        epoch = self._epochs.get(node, 0)
        if epoch == 0:  # no session here (lost): the records go back when their locks expire
            lost = for_code(123)("no share session with the partition's leader")
            return dict.fromkeys(tps, lost)
        req = wire.ShareAcknowledgeRequest(self.group_id, self.member_id,
                                           FINAL_EPOCH if final else epoch,
                                           self._partitions((), acks))  # fmt: skip
        try:
            conn = await self._cluster.connection(node)
            resp: wire.ShareAcknowledgeResponse = await conn.send(req, self.request_timeout_ms)
        except OdradekError as exc:
            self._lose_session(node)
            return dict.fromkeys(tps, exc)
        if resp.error_code != NONE:
            self._lose_session(node)
            return dict.fromkeys(tps, for_code(resp.error_code)(resp.error_message))
        if final:
            self._lose_session(node)
        else:
            self._next_epoch(node, epoch)
        out: AckResults = {}
        for p in resp.partitions:
            if p.topic_id in self._names:
                tp = TopicPartition(self._names[p.topic_id], p.partition)
                out[tp] = for_code(p.error_code)(p.error_message) if p.error_code else None
        return out

    # ----- closing ----------------------------------------------------------------------------

    async def close(self) -> None:
        """Send what is acknowledged (implicit mode: the last poll's records, accepted), close
        the share sessions (the leaders release the rest) and leave the group."""
        if self._closed:
            return
        try:
            if self._started:
                with contextlib.suppress(OdradekError):
                    if self._acks.mode == IMPLICIT:
                        self._acks.settle()
                    await self._send_acks(self._acks.take(), final=True)
                if self._commits:
                    await asyncio.gather(*self._commits, return_exceptions=True)
                if self._heartbeat_task is not None:
                    self._heartbeat_task.cancel()
                    with contextlib.suppress(asyncio.CancelledError, OdradekError):
                        await self._heartbeat_task
                    with contextlib.suppress(OdradekError):
                        await self._heartbeat(LEAVE_EPOCH)
        finally:
            self._closed = True
            self._drop_coordinator()
            await self._cluster.close()
