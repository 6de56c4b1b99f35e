"""Test scaffolding: a tiny in-memory cluster of fake brokers for the client's network tests.

Each `FakeBroker` is an asyncio server on 127.0.0.1:0 that decodes request frames with
protocol.codec.decode_request and answers Metadata, Produce, Fetch, ListOffsets and
InitProducerId from a shared `FakeState` (topic -> partitions -> list of stamped batches;
leaders per partition; producer ids from an in-memory block). Hooks let a test inject faults:
per-api delays, error codes for the next N produce/fetch/InitProducerId answers, dropped
responses, and leader moves. It is deliberately simple: one log per partition, no replication.

Idempotent batches meet the broker's own rules (broker/producer_state.py, one table per
partition): a retry of a stored batch is answered with its first offsets, a sequence gap is
OUT_OF_ORDER_SEQUENCE_NUMBER and an older epoch INVALID_PRODUCER_EPOCH, nothing stored. A
test scripts the fate of particular batches with `produce_script(tp, header)`: None lets the
batch through, a `Refusal` answers its error code, with the batch stored first or not (stored:
as NOT_ENOUGH_REPLICAS_AFTER_APPEND, or an answer lost on the way). `arrivals` lists every
produced batch as the leader saw it, in arrival order, with the code it answered.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple, cast

from broker.producer_state import ProducerStateTable
from coordinator.cluster.producer_ids import MemoryBlockSource, ProducerIdManager
from protocol.api.admin import (
    CreatableTopicResult,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeletableTopicResult,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
)
from protocol.api.fetch import (
    FetchPartitionResponse,
    FetchRequest,
    FetchResponse,
    FetchTopicResponse,
)
from protocol.api.list_offsets import (
    ListOffsetsPartitionResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    ListOffsetsTopicResponse,
)
from protocol.api.metadata import (
    BrokerInfo,
    MetadataRequest,
    MetadataResponse,
    PartitionMetadata,
    TopicMetadata,
)
from protocol.api.produce import (
    ProducePartitionResponse,
    ProduceRequest,
    ProduceResponse,
    ProduceTopicResponse,
)
from protocol.api.producer_ids import InitProducerIdRequest, InitProducerIdResponse
from protocol.batch import BatchHeader, read_header, stamp, validate
from protocol.codec import decode_request, encode_response
from protocol.errors import OdradekError
from protocol.framing import FrameDecoder
from protocol.schema import Records

NOT_LEADER = 6
UNKNOWN_TOPIC = 3
OFFSET_OUT_OF_RANGE = 1


@dataclass(frozen=True)
class Refusal:
    """A scripted produce answer: `code`, with the batch stored first (`stored`) or not."""

    code: int
    stored: bool = False


class Arrival(NamedTuple):
    """One produced batch as its leader saw it, and the code it answered."""

    tp: tuple[str, int]
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int
    code: int


ProduceScript = Callable[[tuple[str, int], BatchHeader], Refusal | None]


@dataclass
class FakeState:
    topics: dict[str, int] = field(default_factory=dict)
    leaders: dict[tuple[str, int], int] = field(default_factory=dict)
    logs: dict[tuple[str, int], list[bytes]] = field(default_factory=dict)
    log_start: dict[tuple[str, int], int] = field(default_factory=dict)
    log_end: dict[tuple[str, int], int] = field(default_factory=dict)  # past the last batch
    brokers: dict[int, FakeBroker] = field(default_factory=dict)
    requests: Counter[str] = field(default_factory=Counter)
    produce_errors: list[int] = field(default_factory=list)  # next produce answers, per partition
    fetch_errors: list[int] = field(default_factory=list)
    delay_ms: dict[str, float] = field(default_factory=dict)  # api name -> answer delay
    drop: set[str] = field(default_factory=set)  # api names whose answers are never sent
    paused: set[int] = field(default_factory=set)  # brokers that accept but never answer
    gates: dict[str, asyncio.Event] = field(default_factory=dict)  # api name -> wait for it
    fetch_log: list[tuple[int, list[tuple[str, int, int]]]] = field(default_factory=list)
    data_arrived: asyncio.Event = field(default_factory=asyncio.Event)
    producer_ids: ProducerIdManager = field(
        default_factory=lambda: ProducerIdManager(0, MemoryBlockSource())
    )  # InitProducerId, answered as a real broker would
    init_producer_id_errors: list[int] = field(default_factory=list)  # next InitProducerIds
    producers: dict[tuple[str, int], ProducerStateTable] = field(default_factory=dict)
    produce_script: ProduceScript | None = None
    arrivals: list[Arrival] = field(default_factory=list)

    def create_topic(self, name: str, partitions: int, leader: int | None = None) -> None:
        self.topics[name] = partitions
        ids = sorted(self.brokers)
        for p in range(partitions):
            self.leaders[(name, p)] = leader if leader is not None else ids[p % len(ids)]
            self.logs[(name, p)] = []
            self.log_start[(name, p)] = 0

    def end_offset(self, tp: tuple[str, int]) -> int:
        log = self.logs[tp]
        last = read_header(log[-1]).next_offset if log else self.log_start[tp]
        return max(last, self.log_end.get(tp, last))

    def store(self, tp: tuple[str, int], batches: list[bytes], log_end: int | None = None) -> None:
        """Batches kept as they are, base offsets included: a compacted log (records gone from
        inside batches, empty batches, gaps between batches: tests/unit/compacted_batches.py).
        `log_end`: where the log ends when the batches that ended it were cleaned away."""
        self.logs[tp].extend(batches)
        if log_end is not None:
            self.log_end[tp] = log_end
        self.data_arrived.set()

    def append(self, tp: tuple[str, int], batch: bytes) -> int:
        h = validate(batch)
        base = self.end_offset(tp)
        buf = bytearray(batch[: h.size])
        stamp(buf, base, 0)
        self.logs[tp].append(bytes(buf))
        table = self.producers.setdefault(tp, ProducerStateTable())
        table.record(h.producer_id, h.producer_epoch, h.base_sequence, h.record_count, base,
                     base + h.last_offset_delta)  # fmt: skip
        self.data_arrived.set()
        return base

    def produce(self, tp: tuple[str, int], batch: bytes) -> tuple[int, int]:
        """A leader's append: (error code, base offset), by the script and the producer rules."""
        h = validate(batch)
        refusal = self.produce_script(tp, h) if self.produce_script is not None else None
        code, base = 0, -1
        if refusal is not None and not refusal.stored:
            code = refusal.code
        else:
            table = self.producers.setdefault(tp, ProducerStateTable())
            try:
                first = table.admit(h.producer_id, h.producer_epoch, h.base_sequence,
                                    h.record_count)  # fmt: skip
            except OdradekError as exc:
                code = exc.code
            else:
                base = first.base_offset if first is not None else self.append(tp, batch)
            if refusal is not None and code == 0:
                code, base = refusal.code, -1
        arrival = Arrival(tp, h.producer_id, h.producer_epoch, h.base_sequence, h.record_count,
                          code)  # fmt: skip
        self.arrivals.append(arrival)
        return code, base

    def records_from(self, tp: tuple[str, int], offset: int, max_bytes: int) -> bytes:
        out = bytearray()
        for batch in self.logs[tp]:
            header = read_header(batch)
            if header.next_offset <= offset:
                continue
            if out and len(out) + len(batch) > max_bytes:
                break
            out += batch
        return bytes(out)


class FakeBroker(asyncio.Protocol):
    def __init__(self, node_id: int, state: FakeState) -> None:
        self.node_id = node_id
        self.state = state
        self.server: asyncio.Server | None = None
        self.port = 0
        self.transports: list[asyncio.Transport] = []

    @classmethod
    async def start(cls, node_id: int, state: FakeState) -> FakeBroker:
        broker = cls(node_id, state)
        loop = asyncio.get_running_loop()
        broker.server = await loop.create_server(
            lambda: _Conn(broker), "127.0.0.1", 0, reuse_address=True
        )
        broker.port = broker.server.sockets[0].getsockname()[1]
        state.brokers[node_id] = broker
        return broker

    async def stop(self) -> None:
        assert self.server is not None
        self.server.close()
        for t in self.transports:
            t.close()
        await self.server.wait_closed()

    def kill_connections(self) -> None:
        for t in self.transports:
            t.abort()

    # ----- handlers ---------------------------------------------------------------------------

    async def handle(self, api: str, body: Any) -> Any:
        self.state.requests[api] += 1
        delay = self.state.delay_ms.get(api)
        if delay:
            await asyncio.sleep(delay / 1000)
        gate = self.state.gates.get(api)
        if gate is not None:
            await gate.wait()
        handler = getattr(self, f"on_{api}")
        result = handler(body)
        if asyncio.iscoroutine(result):
            result = await result
        return result

    def on_Metadata(self, req: MetadataRequest) -> MetadataResponse:
        st = self.state
        brokers = [BrokerInfo(i, "127.0.0.1", b.port) for i, b in sorted(st.brokers.items())]
        names = sorted(st.topics) if req.topics is None else req.topics
        topics = []
        for name in names:
            if name not in st.topics:
                topics.append(TopicMetadata(UNKNOWN_TOPIC, name, False, []))
                continue
            parts = [
                PartitionMetadata(0, p, st.leaders[(name, p)], 0, [st.leaders[(name, p)]],
                                  [st.leaders[(name, p)]], [])
                for p in range(st.topics[name])
            ]  # fmt: skip
            topics.append(TopicMetadata(0, name, False, parts))
        return MetadataResponse(brokers, "fake", min(st.brokers), topics)

    def on_Produce(self, req: ProduceRequest) -> ProduceResponse | None:
        out = []
        for topic in req.topics:
            parts = []
            for p in topic.partitions:
                tp = (topic.name, p.partition)
                err = self._error_for(tp, self.state.produce_errors)
                base = -1
                if not err:
                    err, base = self.state.produce(tp, p.records)
                parts.append(ProducePartitionResponse(p.partition, err, base, -1, 0))
            out.append(ProduceTopicResponse(topic.name, parts))
        return None if req.acks == 0 else ProduceResponse(out)

    def _error_for(self, tp: tuple[str, int], injected: list[int]) -> int:
        if tp not in self.state.leaders:
            return UNKNOWN_TOPIC
        if self.state.leaders[tp] != self.node_id:
            return NOT_LEADER
        return injected.pop(0) if injected else 0

    async def on_Fetch(self, req: FetchRequest) -> FetchResponse:
        st = self.state
        st.fetch_log.append(
            (self.node_id, [(t.name, p.partition, p.fetch_offset) for t in req.topics
                            for p in t.partitions])
        )  # fmt: skip
        resp = self._fetch_once(req)
        if not self._has_data(resp) and req.max_wait_ms > 0:
            st.data_arrived.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(st.data_arrived.wait(), req.max_wait_ms / 1000)
            resp = self._fetch_once(req)
        return resp

    @staticmethod
    def _has_data(resp: FetchResponse) -> bool:
        return any(p.records or p.error_code for t in resp.topics for p in t.partitions)

    def _fetch_once(self, req: FetchRequest) -> FetchResponse:
        topics = []
        for t in req.topics:
            parts = []
            for p in t.partitions:
                tp = (t.name, p.partition)
                err = self._error_for(tp, self.state.fetch_errors)
                end = self.state.end_offset(tp) if tp in self.state.logs else -1
                start = self.state.log_start.get(tp, 0)
                if not err and not start <= p.fetch_offset <= end:
                    err = OFFSET_OUT_OF_RANGE
                data = b"" if err else self.state.records_from(tp, p.fetch_offset,
                                                               p.partition_max_bytes)  # fmt: skip
                parts.append(FetchPartitionResponse(p.partition, err, end, start, end,
                                                    Records(data)))  # fmt: skip
            topics.append(FetchTopicResponse(t.name, parts))
        return FetchResponse(0, topics)

    def on_ListOffsets(self, req: ListOffsetsRequest) -> ListOffsetsResponse:
        topics = []
        for t in req.topics:
            parts = []
            for p in t.partitions:
                tp = (t.name, p.partition)
                err = self._error_for(tp, [])
                offset = -1
                if not err:
                    offset = (
                        self.state.log_start[tp] if p.timestamp == -2 else self.state.end_offset(tp)
                    )
                parts.append(ListOffsetsPartitionResponse(p.partition, err, -1, offset))
            topics.append(ListOffsetsTopicResponse(t.name, parts))
        return ListOffsetsResponse(topics)

    async def on_InitProducerId(self, req: InitProducerIdRequest) -> InitProducerIdResponse:
        if self.state.init_producer_id_errors:
            return InitProducerIdResponse(self.state.init_producer_id_errors.pop(0), -1, -1)
        try:
            pid, epoch = await self.state.producer_ids.init_producer_id(
                req.transactional_id, req.producer_id, req.producer_epoch
            )
        except OdradekError as exc:
            return InitProducerIdResponse(exc.code, -1, -1, exc.message)
        return InitProducerIdResponse(0, pid, epoch)

    def on_CreateTopics(self, req: CreateTopicsRequest) -> CreateTopicsResponse:
        out = []
        for t in req.topics:
            if t.name in self.state.topics:
                out.append(CreatableTopicResult(t.name, 36, "exists", -1, -1))
                continue
            self.state.create_topic(t.name, t.num_partitions)
            out.append(CreatableTopicResult(t.name, 0, None, t.num_partitions, 1))
        return CreateTopicsResponse(out)

    def on_DeleteTopics(self, req: DeleteTopicsRequest) -> DeleteTopicsResponse:
        out = []
        for name in req.topic_names:
            if self.state.topics.pop(name, None) is None:
                out.append(DeletableTopicResult(name, UNKNOWN_TOPIC))
            else:
                out.append(DeletableTopicResult(name, 0))
        return DeleteTopicsResponse(out)


class _Conn(asyncio.Protocol):
    """One client connection: answers in request order, like the real broker."""

    def __init__(self, broker: FakeBroker) -> None:
        self.broker = broker
        self.decoder = FrameDecoder()
        self.transport: asyncio.Transport | None = None
        self.tail: asyncio.Future[None] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # a stream transport (uvloop's, under the Spark range reader's loop, is no subclass)
        self.transport = cast(asyncio.Transport, transport)
        self.broker.transports.append(self.transport)

    def data_received(self, data: bytes) -> None:
        for frame in self.decoder.feed(data):
            req = decode_request(frame)
            prev = self.tail
            task = asyncio.ensure_future(self._answer(req, prev))
            self.tail = task

    async def _answer(self, req: Any, prev: asyncio.Future[None] | None) -> None:
        if self.broker.node_id in self.broker.state.paused:
            return  # a SIGSTOPped broker: its kernel took the connection, nothing answers
        result = await self.broker.handle(req.spec.name, req.body)
        if prev is not None:
            await prev  # responses go out in request order
        if result is None or req.spec.name in self.broker.state.drop:
            return
        assert self.transport is not None
        if not self.transport.is_closing():
            self.transport.write(encode_response(req.header.correlation_id, result))


async def start_cluster(n: int = 1) -> FakeState:
    state = FakeState()
    for node_id in range(1, n + 1):
        await FakeBroker.start(node_id, state)
    return state


async def stop_cluster(state: FakeState) -> None:
    for broker in list(state.brokers.values()):
        await broker.stop()


def bootstrap(state: FakeState) -> str:
    return ",".join(f"127.0.0.1:{b.port}" for b in state.brokers.values())
