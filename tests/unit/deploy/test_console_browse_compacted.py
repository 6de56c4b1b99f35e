"""The console's message browser (deploy/console/browse.py) paging a compacted partition served
by the client tests' fake broker (batches as Kafka's log cleaner leaves them:
tests/unit/compacted_batches.py). Pages are full where records are left, a stretch of gone
offsets is passed (never an empty page shown again, never a wait for offsets that will not
come), and paging reaches both ends."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from client.admin import AsyncAdmin
from deploy.console.browse import browse
from protocol.batch import build_batch, stamp
from tests.unit.client.fake_broker import FakeState, bootstrap, start_cluster, stop_cluster
from tests.unit.compacted_batches import compact_log

TS = 1_700_000_000_000
# 0-29 keep every fourth offset; 30-39 gone (a gap); 40-49 kept empty (its producer's last
# batch); 50-59 keep 50, 51 and 59 (60 is the end)
KEPT = [*range(0, 30, 4), 50, 51, 59]
END = 60


@pytest.fixture
async def fake1() -> AsyncIterator[FakeState]:
    state = await start_cluster(1)
    yield state
    await stop_cluster(state)


def _batch(base: int, producer_id: int = -1) -> bytes:
    rows = [(b"k%d" % o, b"v%d" % o, None, TS + o) for o in range(base, base + 10)]
    idempotent = producer_id >= 0
    raw = bytearray(build_batch(rows, producer_id=producer_id, producer_epoch=0 if idempotent
                                else -1, base_sequence=0 if idempotent else -1))  # fmt: skip
    stamp(raw, base, 0)
    return bytes(raw)


def _compacted(state: FakeState) -> None:
    state.create_topic("c", 1)
    log = [_batch(b, producer_id=5 if b == 40 else -1) for b in range(0, END, 10)]
    state.store(("c", 0), compact_log(log, lambda o: o in KEPT))


def _offsets(page: dict[str, Any]) -> list[int]:
    return [r["offset"] for r in page["records"]]


async def test_pages_forward_and_back_over_gone_offsets(fake1: FakeState) -> None:
    _compacted(fake1)
    boot = bootstrap(fake1)
    async with AsyncAdmin(boot) as admin:
        started = time.monotonic()
        pages = [await browse(admin, boot, "c", start="earliest", limit=4)]
        while not pages[-1]["at_end"] and len(pages) < 10:
            pages.append(await browse(admin, boot, "c", cursor=pages[-1]["end"], limit=4))
        assert [_offsets(p) for p in pages] == [[0, 4, 8, 12], [16, 20, 24, 28], [50, 51, 59]]
        assert pages[-1]["end"] == {"0": END}
        back = [await browse(admin, boot, "c", cursor=pages[-1]["end"], direction="back",
                             limit=4)]  # fmt: skip
        while not back[-1]["at_start"] and len(back) < 10:
            back.append(await browse(admin, boot, "c", cursor=back[-1]["start"],
                                     direction="back", limit=4))  # fmt: skip
        assert [_offsets(p) for p in back] == [[28, 50, 51, 59], [12, 16, 20, 24], [0, 4, 8]]
        assert back[-1]["start"] == {"0": 0}
        assert time.monotonic() - started < 5  # no read waited for its deadline


async def test_a_page_of_gone_offsets_moves_its_cursor_past_them(fake1: FakeState) -> None:
    _compacted(fake1)
    boot = bootstrap(fake1)
    async with AsyncAdmin(boot) as admin:
        page = await browse(admin, boot, "c", start="offset:30", limit=2)
        assert _offsets(page) == [50, 51] and page["end"] == {"0": 52}
        page = await browse(admin, boot, "c", start="offset:52", limit=5)
        assert _offsets(page) == [59] and page["at_end"]
        page = await browse(admin, boot, "c", cursor={"0": 50}, direction="back", limit=1)
        assert _offsets(page) == [28] and page["start"] == {"0": 28}
        latest = await browse(admin, boot, "c", start="latest", limit=4)
        assert _offsets(latest) == [28, 50, 51, 59] and latest["at_end"]
        found = await browse(admin, boot, "c", start="offset:29", search="v5", limit=10)
        assert _offsets(found) == [50, 51, 59] and found["search"]["done"]
