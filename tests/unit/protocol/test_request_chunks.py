"""A request's frame as pieces (codec.encode_request_chunks): big record batches are pieces of
their own, handed to the socket as they are; the joined pieces are encode_request's bytes."""

from __future__ import annotations

from protocol.api.metadata import MetadataRequest
from protocol.api.produce import ProducePartition, ProduceRequest, ProduceTopic
from protocol.codec import (
    BIG_RECORDS_BYTES,
    decode_request,
    encode_request,
    encode_request_chunks,
)
from protocol.framing import FrameDecoder
from protocol.schema import Records, holds_records


def produce(*sizes: int) -> tuple[ProduceRequest, list[bytes]]:
    batches = [bytes([i]) * n for i, n in enumerate(sizes)]
    parts = [ProducePartition(i, Records(b)) for i, b in enumerate(batches)]
    topics = [ProduceTopic("t", parts[:2]), ProduceTopic("u", parts[2:])]
    return ProduceRequest(1, 30_000, topics, None), batches


def test_big_batches_are_pieces_of_their_own_not_copies() -> None:
    # bin32 (>= 64 KiB), bin16 (32-64 KiB) and a small one packed into the envelope
    request, batches = produce(300_000, BIG_RECORDS_BYTES, 10, 70_000)
    chunks = encode_request_chunks(request, 7, "c")
    assert b"".join(chunks) == encode_request(request, 7, "c")
    own = [c for c in chunks if any(c is b for b in batches)]
    assert [len(c) for c in own] == [300_000, BIG_RECORDS_BYTES, 70_000]
    assert sum(len(c) for c in chunks if not any(c is b for b in batches)) < 200
    [frame] = FrameDecoder().feed(b"".join(chunks))
    assert decode_request(frame).body == request


def test_small_requests_stay_one_frame() -> None:
    request, _ = produce(100, 200)
    assert encode_request_chunks(request, 1) == [encode_request(request, 1)]
    assert encode_request_chunks(MetadataRequest(["a"]), 2) == [
        encode_request(MetadataRequest(["a"]), 2)
    ]


def test_only_messages_with_records_are_walked() -> None:
    assert holds_records(ProduceRequest)
    assert not holds_records(MetadataRequest)
