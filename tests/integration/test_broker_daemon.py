"""A real broker process against a real ZooKeeper: start, elect itself controller, create a
topic, produce and fetch, survive bad input, stop cleanly on SIGTERM and come back with its data.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgpack
import pytest

from protocol.api.admin import CreatableTopic, CreateTopicsRequest
from protocol.api.metadata import MetadataRequest, MetadataResponse
from protocol.codec import split_response
from protocol.errors import InvalidRequestError, NetworkError
from protocol.framing import encode_frame
from tests.fixtures.zk import free_port
from tests.unit.broker.harness import RawClient
from tests.unit.broker.helpers import batch, fetch, produce, stamped
from transport.connection import BrokerConnection

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 20.0
BROKER_ID = 1


class BrokerProcess:
    def __init__(self, log_dir: Path, zookeeper: str, port: int) -> None:
        self.log_dir = log_dir
        self.zookeeper = zookeeper
        self.port = port
        self.settings = ""  # more settings, as load_config keyword arguments ("name=value, ")
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        code = (
            "import sys\n"
            "from broker.config import load_config\n"
            "from broker.daemon import run_forever\n"
            f"config = load_config(None, broker_id={BROKER_ID}, port={self.port}, "
            f"log_dir={str(self.log_dir)!r}, zookeeper={self.zookeeper!r}, {self.settings}"
            "zookeeper_session_timeout_ms=4000)\n"
            "sys.exit(run_forever(config))\n"
        )
        stderr = open(self.log_dir.parent / "broker.stderr", "ab")  # noqa: SIM115
        self.proc = subprocess.Popen([sys.executable, "-c", code], cwd=REPO, stderr=stderr)
        stderr.close()

    def stop(self, sig: int = signal.SIGTERM) -> int:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(STOP_TIMEOUT_S)
            raise

    def stderr_text(self) -> str:
        return (self.log_dir.parent / "broker.stderr").read_text(errors="replace")


@pytest.fixture
def broker_process(tmp_path: Path, zk_chroot: str) -> Iterator[BrokerProcess]:
    proc = BrokerProcess(tmp_path / "logs", zk_chroot, free_port())
    proc.log_dir.mkdir()
    try:
        yield proc
    finally:
        if proc.proc is not None and proc.proc.poll() is None:
            proc.proc.kill()
            proc.proc.wait(STOP_TIMEOUT_S)


async def _connect_when_ready(b: BrokerProcess, topic: str | None = None) -> BrokerConnection:
    """Connect, then wait until this broker is controller (and `topic`'s partitions led)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + START_TIMEOUT_S
    while True:
        assert b.proc is not None and b.proc.poll() is None, b.stderr_text()
        try:
            conn = await BrokerConnection.connect("127.0.0.1", b.port, connect_timeout_ms=1000)
            meta: MetadataResponse = await conn.send(MetadataRequest(None), timeout_ms=2000)
            led = topic is None or any(
                t.name == topic
                and t.partitions
                and all(p.leader == BROKER_ID for p in t.partitions)
                for t in meta.topics
            )
            if meta.controller_id == BROKER_ID and led:
                return conn
            await conn.close()
        except NetworkError:
            pass
        assert loop.time() < deadline, f"broker not ready:\n{b.stderr_text()}"
        await asyncio.sleep(0.1)


async def _produce_all(conn: BrokerConnection, topic: str, partitions: int) -> dict[int, bytes]:
    expected = {}
    for p in range(partitions):
        data = batch(20, fill=bytes([97 + p]))
        resp: Any = await conn.send(produce(topic, p, data))
        part = resp.topics[0].partitions[0]
        assert part.error_code == 0
        expected[p] = stamped(data, part.base_offset, _epoch_of(data, part))
    return expected


def _epoch_of(_data: bytes, _part: Any) -> int:
    return 0  # a new topic's first leader epoch


async def test_broker_process_lifecycle(broker_process: BrokerProcess) -> None:
    b = broker_process
    b.start()
    conn = await _connect_when_ready(b)
    created: Any = await conn.send(
        CreateTopicsRequest([CreatableTopic("d", 2, 1, [], {"flush.messages": "1"})], 20_000)
    )
    assert created.topics[0].error_code == 0, created
    expected = await _produce_all(conn, "d", 2)
    got: Any = await conn.send(fetch("d", {0: 0, 1: 0}))
    assert [bytes(p.records) for p in got.topics[0].partitions] == [expected[0], expected[1]]

    # bad input on a live broker: that connection closes, the others carry on
    raw = await RawClient.connect(b.port)
    raw.send_bytes(encode_frame(msgpack.packb([999, 0, 5, None, []])))
    corr, code, _ = split_response(await raw.read_frame())
    assert (corr, code) == (5, InvalidRequestError.code)
    assert await raw.at_eof()
    await raw.close()
    assert (await conn.send(MetadataRequest(["d"]))).topics[0].error_code == 0
    await conn.close()

    assert b.stop(signal.SIGTERM) == 0, b.stderr_text()
    assert (b.log_dir / "d-0" / "clean-shutdown").exists()

    b.start()
    conn = await _connect_when_ready(b, topic="d")
    again: Any = await conn.send(fetch("d", {0: 0, 1: 0}))
    assert [bytes(p.records) for p in again.topics[0].partitions] == [expected[0], expected[1]]
    await conn.close()
    assert b.stop(signal.SIGTERM) == 0, b.stderr_text()


async def test_debug_mode_names_the_loop_steps_over_its_threshold(
    broker_process: BrokerProcess,
) -> None:
    """loop_debug_slow_ms = 1: the broker runs on broker/slow_steps.py's DebugLoop. Its start-up
    step that freezes the heap (a full collection of every module's objects, always well over
    1 ms) is named by its coroutine; the broker serves and stops as ever, and logs at shutdown
    its loop's CPU by step name."""
    b = broker_process
    b.settings = "loop_debug_slow_ms=1, "
    b.start()
    conn = await _connect_when_ready(b)
    created: Any = await conn.send(
        CreateTopicsRequest([CreatableTopic("dbg", 1, 1, [], {})], 20_000)
    )
    assert created.topics[0].error_code == 0, created
    await _produce_all(conn, "dbg", 1)
    await conn.close()
    assert b.stop(signal.SIGTERM) == 0, b.stderr_text()
    steps = [line for line in b.stderr_text().splitlines() if "odradek.broker.loop: " in line]
    assert any(" ms in coroutine broker.daemon._main (task " in line for line in steps), steps
    said = [line.split("odradek.broker.loop: ")[1] for line in steps]
    assert all(line.startswith(("slow loop step: ", "waited loop step: ", "loop steps"))
               for line in said), said  # fmt: skip
    # at shutdown, the loop's CPU by step name: the requests' reads among them
    assert any(line.startswith("loop steps: ") for line in said), said
    assert any(line.startswith("loop steps of broker.server.Connection.data_received: ")
               for line in said), said  # fmt: skip
