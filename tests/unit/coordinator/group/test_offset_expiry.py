"""KIP-211 offset expiry (offsets.retention.minutes), a pure function of a group: only an
empty group's offsets expire, counted from the later of their commit and the group becoming
empty; when none is left the group itself gets a tombstone, and replaying the tombstones
forgets it (so the compacted __consumer_offsets forgets it too)."""

from __future__ import annotations

from coordinator.group import group as group_ops
from coordinator.group import offsets as offset_ops
from coordinator.group.group import Group, Member, OffsetEntry
from coordinator.group.records import GroupKey, OffsetKey

DAY = 24 * 3600 * 1000
T = 1_700_000_000_000


def _group() -> Group:
    g = Group("billing")
    g.offsets[("t", 0)] = OffsetEntry(5, None, T)
    g.offsets[("t", 1)] = OffsetEntry(9, None, T + 3 * DAY)
    return g


def test_only_offsets_past_retention_expire_and_the_last_takes_the_group() -> None:
    g = _group()
    result = offset_ops.expire_offsets(g, T + 7 * DAY, 7 * DAY, empty_since_ms=T)
    assert [r.key for r in result.records] == [OffsetKey("billing", "t", 0)]
    assert all(r.value is None for r in result.records)
    groups = {"billing": g}
    for r in result.records:
        group_ops.replay(groups, r, 0)
    assert set(groups["billing"].offsets) == {("t", 1)}
    result = offset_ops.expire_offsets(groups["billing"], T + 10 * DAY, 7 * DAY, empty_since_ms=T)
    assert [r.key for r in result.records] == [
        OffsetKey("billing", "t", 1),
        GroupKey("billing"),
    ]
    for r in result.records:
        group_ops.replay(groups, r, 0)
    assert "billing" not in groups


def test_retention_counts_from_when_the_group_became_empty() -> None:
    g = _group()
    assert not offset_ops.expire_offsets(
        g, T + 8 * DAY, 7 * DAY, empty_since_ms=T + 2 * DAY
    ).records


def test_a_group_with_members_keeps_its_offsets() -> None:
    g = _group()
    g.members["m"] = Member("m", "c", 10_000, 10_000, ("t",), None)
    assert not offset_ops.expire_offsets(g, T + 100 * DAY, 7 * DAY, empty_since_ms=T).records
