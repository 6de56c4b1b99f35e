"""Golden bytes for the SASL APIs on each door (broker/codecs/{native,kafka}/sasl.py; harness
in golden.py): the native frame and Kafka's lowest and highest version served (SaslHandshake
v0, v1; SaslAuthenticate v0, v2). Read against Kafka's schemas: SaslHandshake's answer is an
error code and the mechanisms (a string array); SaslAuthenticate's an error code, message and
the server's token (bytes), v1+ with the session lifetime (int64 ms), v2 flexible. v0 of the
handshake tells the operation the tokens would come raw. An answer that closes the connection
goes out as a Refusal carrying the same frame (tested last).
"""

from __future__ import annotations

import dataclasses

import pytest

from broker.operations import sasl_authenticate, sasl_handshake
from broker.session import Refusal
from protocol.api import sasl
from protocol.kafka import versions as v

from .golden import Case, check, kio, roundtrip

SHAKEN = sasl_handshake.SaslHandshakeResult(0, ("PLAIN", "SCRAM-SHA-512"))
PLAINTEXT = sasl_handshake.SaslHandshakeResult(34, ())
AUTHENTICATED = sasl_authenticate.SaslAuthenticateResult(0, None, b"v=ok", 3600000)

CASES = [
    Case("SaslHandshake native", v.SASL_HANDSHAKE, -1, lambda: sasl.SaslHandshakeRequest("PLAIN"),
         sasl_handshake.SaslHandshake("PLAIN"), SHAKEN,
         "0000000d95110007a16391a5504c41494e",
         "0000001a930700920092a5504c41494ead534352414d2d5348412d353132"),
    Case("SaslHandshake v0", v.SASL_HANDSHAKE, 0, kio(v.SASL_HANDSHAKE, 0, mechanism="PLAIN"),
         sasl_handshake.SaslHandshake("PLAIN", raw_tokens=True), PLAINTEXT,
         "00000018001100000000000700076f64726164656b0005504c41494e",
         "0000000a00000007002200000000"),
    Case("SaslHandshake v1", v.SASL_HANDSHAKE, 1, kio(v.SASL_HANDSHAKE, 1, mechanism="PLAIN"),
         sasl_handshake.SaslHandshake("PLAIN"), SHAKEN,
         "00000018001100010000000700076f64726164656b0005504c41494e",
         "00000020000000070000000000020005504c41494e000d534352414d2d5348412d353132"),
    Case("SaslAuthenticate native", v.SASL_AUTHENTICATE, -1,
         lambda: sasl.SaslAuthenticateRequest(b"\0alice\0pw"),
         sasl_authenticate.SaslAuthenticate(b"\0alice\0pw"), AUTHENTICATED,
         "0000001295240007a16391c40900616c696365007077",
         "000000119307009400c0c404763d6f6bce0036ee80"),
    Case("SaslAuthenticate v0", v.SASL_AUTHENTICATE, 0,
         kio(v.SASL_AUTHENTICATE, 0, auth_bytes=b"\0alice\0pw"),
         sasl_authenticate.SaslAuthenticate(b"\0alice\0pw"), AUTHENTICATED,
         "0000001e002400000000000700076f64726164656b0000000900616c696365007077",
         "00000010000000070000ffff00000004763d6f6b"),
    Case("SaslAuthenticate v2", v.SASL_AUTHENTICATE, 2,
         kio(v.SASL_AUTHENTICATE, 2, auth_bytes=b"\0alice\0pw"),
         sasl_authenticate.SaslAuthenticate(b"\0alice\0pw"), AUTHENTICATED,
         "0000001d002400020000000700076f64726164656b000a00616c69636500707700",
         "00000016000000070000000005763d6f6b000000000036ee8000"),
]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_golden_bytes(case: Case) -> None:
    check(case)


@pytest.mark.parametrize("case", [CASES[0], CASES[2], CASES[3], CASES[5]],
                         ids=lambda c: c.name)  # fmt: skip
def test_an_answer_that_closes_is_a_refusal_carrying_the_doors_frame(case: Case) -> None:
    failed = dataclasses.replace(case.result, error_code=58)
    _, _, frame = roundtrip(dataclasses.replace(case, result=failed))
    closing = dataclasses.replace(failed, close_why="authentication failed")
    with pytest.raises(Refusal) as refused:
        roundtrip(dataclasses.replace(case, result=closing))
    assert (refused.value.why, refused.value.code) == ("authentication failed", 58)
    assert refused.value.logged and refused.value.reply == frame
