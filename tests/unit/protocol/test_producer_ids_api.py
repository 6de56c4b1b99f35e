"""InitProducerId (api key 22) on the wire, byte by byte: if these fail, the format changed."""

from __future__ import annotations

from protocol.api.producer_ids import InitProducerIdRequest, InitProducerIdResponse
from protocol.codec import decode_request, decode_response, encode_request, encode_response
from protocol.framing import FrameDecoder
from protocol.registry import spec_for_key
from tests.unit.protocol.test_golden import unhex

BUMP_FRAME = unhex("""
    00 00 00 0e               # frame length: 14 bytes follow
    95                        # array(5): [api_key, api_version, correlation_id, client_id, body]
    16                        # api_key 22: InitProducerId
    00                        # api_version 0
    01                        # correlation_id 1
    c0                        # client_id nil
    96                        # body: InitProducerIdRequest as array(6)
    c0                        #   transactional_id nil
    cd ea 60                  #   transaction_timeout_ms 60000
    07                        #   producer_id 7
    02                        #   producer_epoch 2
    c2                        #   enable_2pc false
    c2                        #   keep_prepared_txn false
""")

GRANTED_FRAME = unhex("""
    00 00 00 0d               # frame length: 13 bytes follow
    93                        # array(3): [correlation_id, error_code, body]
    01 00                     # correlation_id 1, error_code 0
    97                        # body: InitProducerIdResponse as array(7)
    00                        #   error_code 0
    cd 03 e8                  #   producer_id 1000
    03                        #   producer_epoch 3
    c0                        #   error_message nil
    00                        #   throttle_time_ms 0
    ff                        #   ongoing_txn_producer_id -1
    ff                        #   ongoing_txn_producer_epoch -1
""")


def test_init_producer_id_request_golden() -> None:
    request = InitProducerIdRequest(None, 60_000, producer_id=7, producer_epoch=2)
    assert encode_request(request, correlation_id=1) == BUMP_FRAME
    decoded = decode_request(FrameDecoder().feed(BUMP_FRAME)[0])
    assert decoded.spec is spec_for_key(22) and decoded.spec.name == "InitProducerId"
    assert decoded.body == request
    fresh = InitProducerIdRequest("txn", 1)
    assert (fresh.producer_id, fresh.producer_epoch) == (-1, -1)  # ask for a fresh id


def test_init_producer_id_response_golden() -> None:
    response = InitProducerIdResponse(0, 1000, 3)
    assert encode_response(1, response) == GRANTED_FRAME
    assert decode_response(GRANTED_FRAME[4:], InitProducerIdResponse) == (1, response)
