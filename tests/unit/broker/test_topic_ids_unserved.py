"""An API or version odradek does not serve: the Kafka door refuses it (the connection closes,
as Kafka's SocketServer does) with one WARNING line naming the client, its software (from its
ApiVersions v3+) and what it asked for, at most once per interval for the same ask."""

from __future__ import annotations

import logging
import struct

import pytest

from broker.doors import UNSERVED_LOG_INTERVAL_S, KafkaDoor
from broker.session import Refusal, Session
from protocol.kafka import codec

LOGGER = "odradek.broker.server"


def _frame(key: int, version: int, client_id: str) -> bytes:
    cid = client_id.encode()
    return struct.pack(">hhih", key, version, 7, len(cid)) + cid + b"\x00"


def _api_versions_v3(client_id: str) -> bytes:
    cls = codec.request_class(18, 3)
    body = codec.make(cls, client_software_name="librdkafka", client_software_version="2.12.0")
    return codec.encode_request(18, 3, 1, body, client_id=client_id)[4:]


def _lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


def test_one_line_names_the_client_and_the_ask(caplog: pytest.LogCaptureFixture) -> None:
    now = [1000.0]
    door = KafkaDoor(monotonic=lambda: now[0])
    session = Session.accepted("PLAINTEXT", "PLAINTEXT", "10.1.2.3", 50000)
    door.route(_api_versions_v3("billing-app"), session)
    with caplog.at_level(logging.WARNING, logger="odradek.broker.server"):
        for _ in range(5):  # a client retrying in a loop
            with pytest.raises(Refusal) as refused:
                door.route(_frame(1, 99, "billing-app"), session)
            assert refused.value.logged and refused.value.reply is None
    (line,) = _lines(caplog)
    assert "'billing-app'" in line and "librdkafka 2.12.0" in line
    assert "Fetch (key 1) v99" in line and "versions 4-18" in line
    caplog.clear()
    now[0] += UNSERVED_LOG_INTERVAL_S + 1
    with caplog.at_level(logging.WARNING, logger=LOGGER), pytest.raises(Refusal):
        door.route(_frame(1, 99, "billing-app"), session)
    assert len(_lines(caplog)) == 1  # again once the interval has passed


def test_an_unknown_api_key_names_the_client(caplog: pytest.LogCaptureFixture) -> None:
    door = KafkaDoor()
    with caplog.at_level(logging.WARNING, logger=LOGGER), pytest.raises(Refusal):
        door.route(_frame(57, 0, "features-tool"), Session(peer_host="10.1.2.4"))  # UpdateFeatures
    (line,) = _lines(caplog)
    assert "'features-tool' (software unknown)" in line and "(key 57) v0" in line
    assert "an API odradek does not serve" in line
