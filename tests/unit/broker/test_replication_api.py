"""OffsetForLeaderEpoch (api key 23) on the wire: golden bytes of a request frame and the
decode of its response, so a change to the replication protocol cannot go unnoticed."""

from __future__ import annotations

from protocol.api.replication import (
    OFFSETS_FOR_LEADER_EPOCH,
    EpochEndOffset,
    OffsetForLeaderPartition,
    OffsetForLeaderTopic,
    OffsetForLeaderTopicResult,
    OffsetsForLeaderEpochRequest,
    OffsetsForLeaderEpochResponse,
)
from protocol.codec import decode_request, decode_response, encode_request, encode_response
from protocol.framing import FrameDecoder
from tests.unit.protocol.test_golden import unhex

REQUEST_FRAME = unhex("""
    00 00 00 11               # frame length: 17 bytes follow
    95                        # array(5): [api_key, api_version, correlation_id, client_id, body]
    17                        # api_key 23: OffsetForLeaderEpoch
    00                        # api_version 0
    07                        # correlation_id 7
    a1 72                     # client_id "r"
    92                        # body: array(2)
    02                        #   replica_id 2
    91 92 a1 74               #   topics: [["t",
    91 93 00 05 04            #     [[partition 0, current_leader_epoch 5, leader_epoch 4]]]]
""")

REQUEST = OffsetsForLeaderEpochRequest(
    2, [OffsetForLeaderTopic("t", [OffsetForLeaderPartition(0, 5, 4)])]
)


def test_request_golden_bytes() -> None:
    assert OFFSETS_FOR_LEADER_EPOCH.key == 23
    assert encode_request(REQUEST, 7, "r") == REQUEST_FRAME
    (frame,) = FrameDecoder().feed(REQUEST_FRAME)
    decoded = decode_request(frame)
    assert decoded.body == REQUEST and decoded.header.correlation_id == 7


def test_response_round_trip() -> None:
    response = OffsetsForLeaderEpochResponse(
        [OffsetForLeaderTopicResult("t", [EpochEndOffset(0, 0, 4, 1234)])]
    )
    (frame,) = FrameDecoder().feed(encode_response(7, response))
    assert decode_response(frame, OffsetsForLeaderEpochResponse) == (7, response)
