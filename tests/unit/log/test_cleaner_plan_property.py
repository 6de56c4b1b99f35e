"""The cleaner's plan as pure functions, property-based: for any sequence of keyed writes and
tombstones, passes of `plan.one_pass` (the specification the cleaner is tested against) leave
the latest non-tombstone value of every key, in offset order; tombstones past their delete
horizon are gone after the next pass; the dirty section past a pass's end is unchanged."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from broker.log.cleaner.plan import Rec, one_pass

KEYS = [b"a", b"b", b"c", b"d"]
values = st.one_of(st.none(), st.binary(min_size=1, max_size=4))
writes = st.lists(st.tuples(st.sampled_from(KEYS), values), min_size=1, max_size=80)
RETENTION = 100


def latest_live(records: list[Rec]) -> dict[bytes, bytes]:
    out: dict[bytes, bytes | None] = {}
    for r in records:
        assert r.key is not None
        out[r.key] = r.value
    return {k: v for k, v in out.items() if v is not None}


@given(writes=writes, cuts=st.lists(st.floats(0, 1), min_size=1, max_size=4))
def test_passes_keep_the_latest_live_value_of_every_key(
    writes: list[tuple[bytes, bytes | None]], cuts: list[float]
) -> None:
    records = [Rec(i, k, v) for i, (k, v) in enumerate(writes)]
    want = latest_live(records)
    now, first_dirty = 0, 0
    for cut in cuts:
        end = max(first_dirty, int(cut * len(records)))
        after = one_pass(records, first_dirty, end, now, RETENTION)
        assert [r for r in after if r.offset >= end] == [r for r in records if r.offset >= end]
        below = [r.key for r in after if r.offset < end]
        assert len(below) == len(set(below))  # each key once below the pass's end
        assert [r.offset for r in after] == sorted({r.offset for r in after})
        assert latest_live(after) == want
        records, first_dirty, now = after, end, now + RETENTION // 2 + 1
    end = len(writes)
    records = one_pass(records, first_dirty, end, now, RETENTION)
    records = one_pass(records, end, end, now + 2 * RETENTION, RETENTION)  # past every horizon
    assert latest_live(records) == want
    assert all(r.value is not None for r in records)  # expired tombstones are gone
    assert {r.key for r in records} == set(want)
