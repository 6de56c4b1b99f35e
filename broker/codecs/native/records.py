"""The native door's codecs of the record APIs, Produce and Fetch (see
broker/codecs/native/__init__.py). Record batches pass through as they came (a memoryview of
the request frame; the bytes or file slices a read gave): never copied, never decoded here.

Fetch: the native request is the replica manager's own (topics by name), passed as it is, and
the answer is the operation's response as it is (the door writes it as chunks, FileSlices sent
from the segment files, broker/doors.py); no leader hints.

Produce: the native answer has no leader hints (KIP-951), which are dropped, and no throttle
field to fill (the server raises it, broker/quota/throttle.py); a refused batch's bad records
are answered in `record_errors`, as the Kafka door's (KIP-467).
"""

from __future__ import annotations

from broker.codecs import Codec
from broker.operations import fetch, produce
from protocol.api.fetch import FetchResponse
from protocol.api.produce import (
    ProducePartitionResponse,
    ProduceRequest,
    ProduceResponse,
    ProduceTopicResponse,
)
from protocol.codec import Request

# ----- Produce --------------------------------------------------------------------------------


def _produce_in(request: Request) -> produce.Produce:
    req: ProduceRequest = request.body
    topics = tuple(
        produce.TopicData(
            t.name, tuple(produce.PartitionData(p.partition, p.records) for p in t.partitions)
        )
        for t in req.topics
    )
    return produce.Produce(req.acks, req.timeout_ms, topics, req.transactional_id)


def _produce_out(request: Request, result: produce.ProduceResult | None) -> ProduceResponse | None:
    if result is None:  # acks=0: no answer
        return None
    return ProduceResponse([
        ProduceTopicResponse(t.name, [
            ProducePartitionResponse(p.partition, p.error_code, p.base_offset,
                                     p.log_append_time_ms, p.log_start_offset, p.error_message,
                                     list(p.record_errors))
            for p in t.partitions
        ])
        for t in result.topics
    ])  # fmt: skip


PRODUCE = Codec(_produce_in, _produce_out)

# ----- Fetch ----------------------------------------------------------------------------------


def _fetch_in(request: Request) -> fetch.Fetch:
    return fetch.Fetch(request.body)


def _fetch_out(request: Request, result: fetch.FetchResult) -> FetchResponse:
    return result.response


FETCH = Codec(_fetch_in, _fetch_out)
