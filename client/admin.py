"""AsyncAdmin: create, delete, list and describe topics; add partitions; describe and alter
configs; list offsets; delete records; preferred leader election and partition reassignments.

CreateTopics, DeleteTopics, CreatePartitions, DescribeConfigs and AlterConfigs go to any broker
(each acts through ZooKeeper, where the controller and the other brokers pick the work up),
preferring the controller when it is known.
ElectLeaders, AlterPartitionReassignments and ListPartitionReassignments only the controller
answers: they go to Metadata's controller_id, and a NOT_CONTROLLER answer (the controller moved)
refreshes the metadata and retries, a bounded number of times.
Descriptions come from a Metadata request for all topics. `list_offsets` sends one ListOffsets
request per leader node, `delete_records` one DeleteRecords per leader node (both retrying the
partitions whose leader moved). Per-topic errors in an answer are raised as their error class,
naming the topic.

The transaction calls (list, describe, describe producers, abort, find hanging) are in
client/txn_admin.py's `TxnAdmin`, which AsyncAdmin extends; a group's offsets set from outside
the group (`alter_consumer_group_offsets`) in client/group_offsets_admin.py's.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from client.acl_admin import AclAdmin
from client.cluster import Cluster, ClusterMetadata
from client.group_offsets_admin import GroupOffsetsAdmin
from client.quota_admin import QuotaAdmin
from client.read_committed import READ_UNCOMMITTED, isolation_level_code
from client.scram_admin import ScramAdmin
from client.txn_admin import TxnAdmin
from client.types import (
    NewTopic,
    OffsetAndTimestamp,
    PartitionDescription,
    TopicDescription,
    TopicPartition,
    partitions_words,
)
from protocol.api.admin import (
    OP_DELETE,
    OP_SET,
    RESOURCE_BROKER,
    RESOURCE_TOPIC,
    AlterableConfig,
    AlterConfigsRequest,
    AlterConfigsResource,
    AlterConfigsResponse,
    ConfigEntry,
    CreatableTopic,
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreatePartitionsTopic,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    DescribeConfigsRequest,
    DescribeConfigsResource,
    DescribeConfigsResponse,
    ReplicaAssignment,
)
from protocol.api.controller import (
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
    ElectLeadersRequest,
    ElectLeadersResponse,
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse,
    ReassignmentTarget,
    TopicPartitionRef,
)
from protocol.api.delete_records import (
    DeleteRecordsPartition,
    DeleteRecordsRequest,
    DeleteRecordsResponse,
    DeleteRecordsTopic,
)
from protocol.api.list_offsets import (
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsResponse,
    ListOffsetsTopic,
)
from protocol.api.metadata import MetadataRequest, MetadataResponse
from protocol.errors import (
    LeaderNotAvailableError,
    NotControllerError,
    OdradekError,
    UnknownTopicOrPartitionError,
    UsageError,
    for_code,
)
from transport.security import SecurityConfig

CONTROLLER_ATTEMPTS = 10  # NOT_CONTROLLER answers (a controller change) before giving up


class PartitionReassignment(NamedTuple):
    """A reassignment in progress: the assignment now, and who joins and who leaves."""

    replicas: list[int]
    adding_replicas: list[int]
    removing_replicas: list[int]


class AsyncAdmin(AclAdmin, TxnAdmin, GroupOffsetsAdmin, QuotaAdmin, ScramAdmin):
    def __init__(
        self,
        bootstrap_servers: str | Iterable[str],
        *,
        client_id: str | None = None,
        request_timeout_ms: int = 30_000,
        retry_backoff_ms: int = 100,
        **security: Any,  # TLS/SASL, kafka-python's names (transport/security.py)
    ) -> None:
        self.request_timeout_ms = request_timeout_ms
        self._cluster = Cluster(
            bootstrap_servers, client_id=client_id, request_timeout_ms=request_timeout_ms,
            retry_backoff_ms=retry_backoff_ms, security=SecurityConfig.from_options(security),
        )  # fmt: skip
        self._cluster.all_topics = True
        self._started = False

    async def close(self) -> None:
        await self._cluster.close()

    # ----- topics -----------------------------------------------------------------------------

    async def create_topics(
        self, new_topics: Iterable[NewTopic], timeout_ms: int | None = None,
        validate_only: bool = False,
    ) -> None:  # fmt: skip
        """Create topics; raises the first per-topic error (TopicAlreadyExistsError, ...)."""
        topics = [_creatable(t) for t in new_topics]
        timeout = self.request_timeout_ms if timeout_ms is None else timeout_ms
        request = CreateTopicsRequest(topics, timeout, validate_only)
        resp: CreateTopicsResponse = await self._send_admin(request, timeout)
        for result in resp.topics:
            _raise(result.error_code, result.name, result.error_message)

    async def delete_topics(self, names: Iterable[str], timeout_ms: int | None = None) -> None:
        timeout = self.request_timeout_ms if timeout_ms is None else timeout_ms
        request = DeleteTopicsRequest(list(names), timeout)
        resp: DeleteTopicsResponse = await self._send_admin(request, timeout)
        for result in resp.responses:
            _raise(result.error_code, result.name, result.error_message)

    async def list_topics(self, include_internal: bool = False) -> list[str]:
        resp = await self._metadata(None)
        return sorted(t.name for t in resp.topics if include_internal or not t.is_internal)

    async def describe_topics(self, names: Iterable[str] | None = None) -> list[TopicDescription]:
        """Leader, replicas, ISR and offline replicas of every partition (all topics if None)."""
        resp = await self._metadata(None if names is None else list(names))
        out = []
        for t in sorted(resp.topics, key=lambda t: t.name):
            parts = [
                PartitionDescription(p.partition, p.leader, p.leader_epoch, list(p.replicas),
                                     list(p.isr), list(p.offline_replicas), p.error_code)
                for p in sorted(t.partitions, key=lambda p: p.partition)
            ]  # fmt: skip
            out.append(TopicDescription(t.name, t.is_internal, parts, t.error_code))
        return out

    async def describe_cluster(self) -> ClusterMetadata:
        """Brokers, controller id and cluster id (plus every topic's partitions)."""
        return ClusterMetadata.from_response(await self._metadata(None))

    async def describe_configs(
        self, topics: Iterable[str], config_names: list[str] | None = None
    ) -> dict[str, dict[str, ConfigEntry]]:
        """{topic: {config name: ConfigEntry(name, value, read_only, is_default)}}."""
        resources = [DescribeConfigsResource(RESOURCE_TOPIC, t, config_names) for t in topics]
        resp: DescribeConfigsResponse = await self._send_admin(
            DescribeConfigsRequest(resources), self.request_timeout_ms
        )
        out = {}
        for result in resp.results:
            _raise(result.error_code, result.resource_name, result.error_message)
            out[result.resource_name] = {c.name: c for c in result.configs}
        return out

    async def describe_config_entries(
        self,
        resource_type: int,
        name: str,
        include_synonyms: bool = False,
        include_documentation: bool = False,
    ) -> list[ConfigEntry]:
        """Every config of one resource (RESOURCE_TOPIC, RESOURCE_GROUP or RESOURCE_BROKER, by
        its id) with its source, and its synonyms / documentation when asked. A broker's configs
        are asked of that broker (only it knows its file), a topic's, a group's or the cluster
        default's (the broker resource "") of any."""
        request = DescribeConfigsRequest(
            [DescribeConfigsResource(resource_type, name, None)],
            include_synonyms,
            include_documentation,
        )
        resp: DescribeConfigsResponse = await self._send_for(resource_type, name, request)
        (result,) = resp.results
        _raise(result.error_code, result.resource_name, result.error_message)
        return list(result.configs)

    async def alter_configs(
        self,
        topic: str,
        set_configs: Mapping[str, str] | None = None,
        delete: Iterable[str] = (),
        validate_only: bool = False,
        resource_type: int = RESOURCE_TOPIC,
    ) -> None:
        """Change a topic's config overrides: set `set_configs`, remove `delete` (back to the
        broker default), keep the others. Every broker applies the change to its logs of the
        topic. Raises InvalidConfigError (a bad name or value), UnknownTopicOrPartitionError.
        With `resource_type=RESOURCE_GROUP`, `topic` names a group and the change is to that
        group's configs (KIP-848: consumer.session.timeout.ms, ...); with RESOURCE_BROKER, a
        broker id (sent to that broker) or "" (the cluster default), its dynamic configs."""
        changes = [AlterableConfig(k, v, OP_SET) for k, v in (set_configs or {}).items()]
        changes += [AlterableConfig(k, None, OP_DELETE) for k in delete]
        if not changes:
            raise UsageError(f"nothing to change in the configs of {topic!r}")
        resource = AlterConfigsResource(resource_type, topic, changes)
        request = AlterConfigsRequest([resource], validate_only)
        resp: AlterConfigsResponse = await self._send_for(resource_type, topic, request)
        for result in resp.results:
            _raise(result.error_code, result.resource_name, result.error_message)

    async def _send_for(self, resource_type: int, name: str, request: Any) -> Any:
        """A config request about one resource: a broker's to that broker (Kafka's admin
        client does so: only it knows its file), any other to any broker."""
        if resource_type == RESOURCE_BROKER and name:
            await self.start()
            conn = await self._cluster.connection(int(name))
            return await conn.send(request, 2 * self.request_timeout_ms)
        return await self._send_admin(request, self.request_timeout_ms)

    async def create_partitions(
        self,
        new_counts: Mapping[str, int],
        assignments: Mapping[str, list[list[int]]] | None = None,
        timeout_ms: int | None = None,
        validate_only: bool = False,
    ) -> None:
        """Give each topic its new (larger) partition count; `assignments` may give a topic's
        added partitions' replica lists (else they are placed). Returns once the new
        partitions have leaders; raises the first per-topic error (InvalidPartitionsError...)."""
        given = assignments or {}
        topics = [
            CreatePartitionsTopic(t, n, None if t not in given else [list(r) for r in given[t]])
            for t, n in new_counts.items()
        ]
        timeout = self.request_timeout_ms if timeout_ms is None else timeout_ms
        request = CreatePartitionsRequest(topics, timeout, validate_only)
        resp: CreatePartitionsResponse = await self._send_admin(request, timeout)
        for result in resp.results:
            _raise(result.error_code, result.name, result.error_message)

    # ----- offsets ----------------------------------------------------------------------------

    async def list_offsets(
        self, query: Mapping[TopicPartition, int], isolation_level: str = READ_UNCOMMITTED
    ) -> dict[TopicPartition, OffsetAndTimestamp]:
        """{tp: timestamp ms, or -1 latest, -2 earliest} -> {tp: (offset, timestamp)}.
        `isolation_level` as Kafka's ListOffsetsOptions: with "read_committed", latest (-1) is
        the last stable offset (below the first open transaction), not the high watermark.

        As Kafka's AdminClient: a partition with no leader yet, or whose leader answers a
        retriable error (it moved; OFFSET_NOT_AVAILABLE right after an election), is asked
        again after a metadata refresh until `request_timeout_ms`, then its last error is
        raised. A topic or partition that does not exist fails at once."""
        isolation = isolation_level_code(isolation_level)  # ValueError for an unknown name
        await self.start()
        deadline = asyncio.get_running_loop().time() + self.request_timeout_ms / 1000
        pending = dict(query)
        out: dict[TopicPartition, OffsetAndTimestamp] = {}
        while True:
            meta = await self._cluster.request_update()
            failed: list[OdradekError] = []
            by_node: dict[int, dict[TopicPartition, int]] = {}
            for tp, ts in pending.items():
                if not 0 <= tp.partition < (meta.num_partitions(tp.topic) or 0):
                    raise UnknownTopicOrPartitionError(f"{tp.topic}-{tp.partition}")
                leader = meta.leader_for(tp.topic, tp.partition)
                if leader < 0:
                    failed.append(LeaderNotAvailableError(f"{tp.topic}-{tp.partition}: no leader"))
                else:
                    by_node.setdefault(leader, {})[tp] = ts
            answers = await asyncio.gather(
                *[self._list_offsets(n, q, isolation) for n, q in by_node.items()],
                return_exceptions=True,
            )
            for answer in answers:
                if isinstance(answer, BaseException):
                    if not isinstance(answer, OdradekError) or not answer.retriable:
                        raise answer
                    failed.append(answer)  # the node's connection failed: ask again
                    continue
                for tp, (code, found) in answer.items():
                    if code == 0:
                        out[tp] = found
                        pending.pop(tp)
                        continue
                    error = for_code(code)(
                        f"{tp.topic}-{tp.partition}: {for_code(code).default_message}"
                    )
                    if not error.retriable:
                        raise error
                    failed.append(error)
            if not pending:
                return out
            loop_time = asyncio.get_running_loop().time()
            if loop_time >= deadline:
                raise failed[-1]
            await asyncio.sleep(min(self._cluster.retry_backoff_ms / 1000, deadline - loop_time))

    async def _list_offsets(
        self, node: int, query: dict[TopicPartition, int], isolation: int
    ) -> dict[TopicPartition, tuple[int, OffsetAndTimestamp]]:
        by_topic: dict[str, list[ListOffsetsPartition]] = {}
        for tp, ts in query.items():
            by_topic.setdefault(tp.topic, []).append(ListOffsetsPartition(tp.partition, ts))
        topics = [ListOffsetsTopic(t, ps) for t, ps in by_topic.items()]
        request = ListOffsetsRequest(-1, topics, isolation)
        conn = await self._cluster.connection(node)
        resp: ListOffsetsResponse = await conn.send(request, self.request_timeout_ms)
        return {
            TopicPartition(t.name, p.partition): (
                p.error_code,
                OffsetAndTimestamp(p.offset, p.timestamp),
            )
            for t in resp.topics
            for p in t.partitions
        }

    # ----- deleting records (each partition's leader) ---------------------------------------

    async def delete_records(
        self, before: Mapping[TopicPartition, int], timeout_ms: int | None = None
    ) -> dict[TopicPartition, int]:
        """Delete each partition's records before the offset given (-1: the high watermark):
        its log start offset moves there. {tp: low watermark} once every live replica has
        moved too; raises the first per-partition error (OffsetOutOfRangeError above the
        high watermark, RequestTimedOutError if a replica did not follow in time, ...).
        A partition whose leader moved is retried, up to CONTROLLER_ATTEMPTS times."""
        await self.start()
        timeout = self.request_timeout_ms if timeout_ms is None else timeout_ms
        pending = dict(before)
        out: dict[TopicPartition, int] = {}
        for _ in range(CONTROLLER_ATTEMPTS):
            meta = await self._cluster.request_update()
            by_node: dict[int, dict[TopicPartition, int]] = {}
            for tp, offset in pending.items():
                if not 0 <= tp.partition < (meta.num_partitions(tp.topic) or 0):
                    raise UnknownTopicOrPartitionError(f"{tp.topic}-{tp.partition}")
                by_node.setdefault(meta.leader_for(tp.topic, tp.partition), {})[tp] = offset
            by_node.pop(-1, None)  # no leader known yet: retried after a refresh
            answers = await asyncio.gather(
                *[self._delete_records(n, q, timeout) for n, q in by_node.items()]
            )
            for answer in answers:
                for tp, (code, low, message) in answer.items():
                    if code != 0 and for_code(code).invalid_metadata:
                        continue  # the leader moved: ask the new one
                    _raise(code, f"{tp.topic}-{tp.partition}", message)
                    out[tp] = low
                    pending.pop(tp)
            if not pending:
                return out
            await asyncio.sleep(self._cluster.retry_backoff_ms / 1000)
        raise LeaderNotAvailableError(f"no leader answered for {partitions_words(list(pending))}")

    async def _delete_records(
        self, node: int, query: dict[TopicPartition, int], timeout_ms: int
    ) -> dict[TopicPartition, tuple[int, int, str | None]]:
        by_topic: dict[str, list[DeleteRecordsPartition]] = {}
        for tp, offset in query.items():
            by_topic.setdefault(tp.topic, []).append(DeleteRecordsPartition(tp.partition, offset))
        topics = [DeleteRecordsTopic(t, ps) for t, ps in by_topic.items()]
        conn = await self._cluster.connection(node)
        resp: DeleteRecordsResponse = await conn.send(
            DeleteRecordsRequest(topics, timeout_ms), timeout_ms + self.request_timeout_ms
        )
        return {
            TopicPartition(t.name, p.partition): (p.error_code, p.low_watermark, p.error_message)
            for t in resp.topics
            for p in t.partitions
        }

    # ----- leaders and reassignments (the controller answers) -----------------------------

    async def elect_leaders(
        self, topic: str | None = None, timeout_ms: int | None = None
    ) -> dict[TopicPartition, OdradekError | None]:
        """Preferred leader election for one topic's partitions (all topics if None): per
        partition None (moved) or the error (ElectionNotNeededError: replica 0 already leads,
        PreferredLeaderNotAvailableError: it is down or out of the ISR)."""
        refs = None
        if topic is not None:
            [described] = await self.describe_topics([topic])
            if described.error_code != 0:
                _raise(described.error_code, topic, None)
            refs = [TopicPartitionRef(topic, p.partition) for p in described.partitions]
        timeout = self.request_timeout_ms if timeout_ms is None else timeout_ms
        resp: ElectLeadersResponse = await self._send_controller(
            ElectLeadersRequest(refs, timeout), timeout
        )
        _raise(resp.error_code, "elect leaders", None)
        return {
            TopicPartition(r.topic, r.partition): (
                None if r.error_code == 0 else for_code(r.error_code)(r.error_message)
            )
            for r in resp.results
        }

    async def alter_partition_reassignments(
        self, targets: Mapping[TopicPartition, Iterable[int]], timeout_ms: int | None = None
    ) -> None:
        """Start moving each partition to its new replica list (preferred leader first); raises
        the first per-partition error. The move goes on in the background: see
        `list_partition_reassignments`."""
        parts = [ReassignmentTarget(tp.topic, tp.partition, list(r)) for tp, r in targets.items()]
        timeout = self.request_timeout_ms if timeout_ms is None else timeout_ms
        resp: AlterPartitionReassignmentsResponse = await self._send_controller(
            AlterPartitionReassignmentsRequest(timeout, parts), timeout
        )
        _raise(resp.error_code, "reassignment", resp.error_message)
        for r in resp.results:
            _raise(r.error_code, f"{r.topic}-{r.partition}", r.error_message)

    async def list_partition_reassignments(
        self, partitions: Iterable[TopicPartition] | None = None
    ) -> dict[TopicPartition, PartitionReassignment]:
        """The reassignments in progress (of `partitions`, or all)."""
        refs = None if partitions is None else [TopicPartitionRef(*tp) for tp in partitions]
        resp: ListPartitionReassignmentsResponse = await self._send_controller(
            ListPartitionReassignmentsRequest(self.request_timeout_ms, refs),
            self.request_timeout_ms,
        )
        _raise(resp.error_code, "list reassignments", resp.error_message)
        return {
            TopicPartition(r.topic, r.partition): PartitionReassignment(
                list(r.replicas), list(r.adding_replicas), list(r.removing_replicas)
            )
            for r in resp.reassignments
        }

    # ----- internals --------------------------------------------------------------------------

    async def _send_controller(self, request: Any, timeout_ms: float) -> Any:
        """To the controller; NOT_CONTROLLER (in the answer or as a failure) refreshes the
        metadata and tries again, up to CONTROLLER_ATTEMPTS times."""
        await self.start()
        last: OdradekError = NotControllerError("no controller is known")
        for _ in range(CONTROLLER_ATTEMPTS):
            meta = await self._cluster.request_update()
            if meta.controller_id in meta.brokers:
                try:
                    conn = await self._cluster.connection(meta.controller_id)
                    resp = await conn.send(request, timeout_ms + self.request_timeout_ms)
                except OdradekError as exc:
                    if not exc.retriable:
                        raise
                    last = exc
                else:
                    if resp.error_code != NotControllerError.code:
                        return resp
                    last = NotControllerError(f"broker {meta.controller_id} is not the controller")
            await asyncio.sleep(self._cluster.retry_backoff_ms / 1000)
        raise last

    async def _metadata(self, topics: list[str] | None) -> MetadataResponse:
        await self.start()
        resp = await self._cluster.send_to_any(MetadataRequest(topics), read=True)
        assert isinstance(resp, MetadataResponse)
        return resp

    async def _send_admin(self, request: Any, timeout_ms: float) -> Any:
        """To the controller if known, else any broker; the timeout covers the broker's wait."""
        await self.start()
        controller = self._cluster.metadata.controller_id
        wait_ms = timeout_ms + self.request_timeout_ms
        if controller in self._cluster.metadata.brokers:
            try:
                conn = await self._cluster.connection(controller)
                return await conn.send(request, wait_ms)
            except OdradekError as exc:
                if not exc.retriable:
                    raise
        return await self._cluster.send_to_any(request, wait_ms)


def _raise(code: int, name: str, message: str | None) -> None:
    if code != 0:
        error = for_code(code)
        raise error(f"{name}: {message or error.default_message}")


def _creatable(t: NewTopic) -> CreatableTopic:
    """The request's topic: its counts, or its replicas with both counts -1 (Kafka's rule)."""
    if t.replica_assignment is not None:
        if not t.name or not t.replica_assignment:
            raise UsageError(f"bad topic {t.name!r}: need a name and at least one partition")
        assigned = [ReplicaAssignment(i, list(r)) for i, r in enumerate(t.replica_assignment)]
        return CreatableTopic(t.name, -1, -1, assigned, dict(t.configs))
    if not t.name or t.num_partitions < 1 or t.replication_factor < 1:
        raise UsageError(f"bad topic {t.name!r}: need a name, partitions and RF >= 1")
    return CreatableTopic(t.name, t.num_partitions, t.replication_factor, [], dict(t.configs))
