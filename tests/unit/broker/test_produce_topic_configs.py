"""The produce path in effect for a topic's compression.type, message.timestamp.* and
cleanup.policy configs, through a broker (the native door): what is stored, what is answered
(a refused batch's bad records by index, KIP-467)."""

from __future__ import annotations

from pathlib import Path

from protocol import compression
from protocol.api.produce import RecordError
from protocol.batch import TIMESTAMP_TYPE_BIT, build_batch, decode_all, iter_batches
from protocol.clock import ManualClock
from protocol.errors import InvalidRecordError, InvalidTimestampError
from tests.unit.broker.harness import FakeTopicStore, running_broker
from tests.unit.broker.helpers import fetch, produce

NOW = 1_800_000_000_000
VALUES = [b"value-%d" % i * 10 for i in range(20)]


def _batch(ts: int) -> bytes:
    return build_batch([(b"k", v, None, ts) for v in VALUES])


async def test_compression_log_append_time_and_timestamp_bounds(tmp_path: Path) -> None:
    store = FakeTopicStore(configs={
        "zstd": {"compression.type": "zstd"},
        "lat": {"message.timestamp.type": "LogAppendTime"},
        "bounded": {"message.timestamp.before.max.ms": "60000"},
        "compacted": {"cleanup.policy": "compact"},
    })  # fmt: skip
    async with running_broker(tmp_path, topics=store, clock=ManualClock(time_ms=NOW)) as b:
        for topic in ("zstd", "lat", "bounded", "compacted"):
            await b.lead(topic)
        conn = await b.connect()

        last_errors: list[RecordError] = []

        async def send(topic: str, ts: int) -> tuple[int, int]:
            (p,) = (await conn.send(produce(topic, 0, _batch(ts)))).topics[0].partitions
            last_errors[:] = p.record_errors
            return p.error_code, p.log_append_time_ms

        async def stored(topic: str) -> list[tuple[int, int, list[int]]]:
            (p,) = (await conn.send(fetch(topic, {0: 0}))).topics[0].partitions
            data = bytes(p.records)
            records = [r.timestamp for r in decode_all(data)]
            return [(h.codec, h.attributes & TIMESTAMP_TYPE_BIT, records)
                    for _, h in iter_batches(data)]  # fmt: skip

        assert await send("zstd", NOW - 5) == (0, -1)
        ((codec, _, stamps),) = await stored("zstd")
        assert codec == compression.ZSTD and stamps == [NOW - 5] * len(VALUES)

        assert await send("lat", 1234) == (0, NOW)
        ((codec, bit, stamps),) = await stored("lat")
        assert (codec, bit, stamps) == (compression.NONE, TIMESTAMP_TYPE_BIT, [NOW] * len(VALUES))

        assert await send("bounded", NOW - 60_001) == (InvalidTimestampError.code, -1)
        assert [e.batch_index for e in last_errors] == list(range(len(VALUES)))
        assert await send("bounded", NOW - 60_000) == (0, -1)
        assert len(await stored("bounded")) == 1  # the refused batch was not appended

        mixed = [(None if i % 7 == 3 else b"k", v, None, NOW) for i, v in enumerate(VALUES)]
        (p,) = (await conn.send(produce("compacted", 0, build_batch(mixed)))).topics[0].partitions
        assert p.error_code == InvalidRecordError.code and p.base_offset == -1
        assert [e.batch_index for e in p.record_errors] == [3, 10, 17]
        assert {e.message for e in p.record_errors} == {
            "a compacted topic cannot accept a record without a key"
        }
        assert p.error_message is not None and p.error_message.startswith(
            "3 of the batch's 20 records refused: record 3: a compacted topic"
        )
        assert await stored("compacted") == []
