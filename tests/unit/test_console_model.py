"""The console's pure parts: partition status and cause, record rendering and search, start
positions, paging merge, lag history, staleness, the chaos events file, and the snapshot a
Gatherer builds from given sections (no network: its clients are never started)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from client.cluster import ClusterMetadata, PartitionInfo
from deploy.console import model, timeline
from deploy.console.gather import Gatherer
from deploy.netns import is_loopback
from protocol.api.metadata import BrokerInfo
from protocol.errors import UsageError

# ----- partitions --------------------------------------------------------------------------


def test_partition_ok_under_replicated_and_offline() -> None:
    assert model.partition_status("t-0", 1, [1, 2, 3], [1, 2, 3], {1, 2, 3}) == ("ok", None)
    status, cause = model.partition_status("t-0", 1, [1, 2, 3], [1, 3], {1, 3})
    assert status == "under-replicated"
    assert cause == "partition t-0: replica 2 is out of the ISR [1,3] (broker 2 down)"
    status, cause = model.partition_status("t-0", 1, [1, 2, 3], [1], {1, 2, 3})
    assert cause is not None and "replicas 2,3 are out" in cause and "catching up" in cause


def test_offline_cause_is_the_clis() -> None:
    status, cause = model.partition_status("t-1", -1, [2, 3], [3], {1}, unclean=False)
    assert status == "offline"
    assert (
        cause
        == "partition t-1 has no leader: its replicas 2,3 are down and unclean election is off"
    )
    # a leader the brokers still name but that is not alive is no leader
    status, _ = model.partition_status("t-1", 2, [2, 3], [2, 3], {3})
    assert status == "offline"


# ----- records -----------------------------------------------------------------------------


def test_render_text_json_hex_null_and_cut() -> None:
    assert model.render_bytes(None)["kind"] == "null"
    assert model.render_bytes(b"hello") == {
        "kind": "text", "text": "hello", "size": 5, "truncated": False,
    }  # fmt: skip
    pretty = model.render_bytes(b'{"a":[1,2]}')
    assert pretty["kind"] == "json" and pretty["text"] == '{\n  "a": [\n    1,\n    2\n  ]\n}'
    assert model.render_bytes(b"{not json")["kind"] == "text"
    assert model.render_bytes(b"\xff\x00\x10") == {
        "kind": "hex", "text": "ff 00 10", "size": 3, "truncated": False,
    }  # fmt: skip
    cut = model.render_bytes(b"x" * 100, limit=10)
    assert cut == {"kind": "text", "text": "x" * 10, "size": 100, "truncated": True}
    # a multi-byte character cut at the limit is dropped, not turned into hex
    euro = model.render_bytes("ab€".encode() * 10, limit=4)
    assert euro["kind"] == "text" and euro["text"] == "ab" and euro["truncated"]


def test_search_matches_key_value_and_headers() -> None:
    headers = [("trace", b"abc-123"), ("Source", None)]
    assert model.record_matches(b"k", b"v", headers, "ABC-1")
    assert model.record_matches(b"k", b"v", headers, "source")
    assert model.record_matches(b"user-9", None, None, "user")
    assert model.record_matches(None, b"Hello", None, "hello")
    assert model.record_matches(None, b"\xff\xfe", None, "fffe")  # binary: as hex
    assert not model.record_matches(b"k", b"v", headers, "nothing")
    assert model.record_matches(None, None, None, "")


def test_start_positions() -> None:
    assert model.parse_start("earliest") == model.Start("earliest")
    assert model.parse_start(" latest ") == model.Start("latest")
    assert model.parse_start("offset:42") == model.Start("offset", 42)
    assert model.parse_start("time:1700000000000") == model.Start("time", 1700000000000)
    assert model.parse_start("time:2023-11-14T22:13:20Z") == model.Start("time", 1700000000000)
    for bad in ("offset:-1", "offset:x", "time:yesterday", "middle", ""):
        with pytest.raises(UsageError):
            model.parse_start(bad)


def test_partitions_picked() -> None:
    assert model.parse_partitions("", 3, 8) == [0, 1, 2]
    assert model.parse_partitions("all", 2, 8) == [0, 1]
    assert model.parse_partitions("2, 0,2", 3, 8) == [0, 2]
    with pytest.raises(UsageError, match="partition 3 does not exist"):
        model.parse_partitions("3", 3, 8)
    with pytest.raises(UsageError, match="numbers"):
        model.parse_partitions("a", 3, 8)
    with pytest.raises(UsageError, match="at most 2"):
        model.parse_partitions("", 3, 2)


class Rec(NamedTuple):
    partition: int
    offset: int
    timestamp: int


def test_merge_page_forward_and_back() -> None:
    per = {0: [Rec(0, 0, 10), Rec(0, 1, 30)], 1: [Rec(1, 5, 20), Rec(1, 6, 40)]}
    assert model.merge_page(per, 3, last=False) == [Rec(0, 0, 10), Rec(1, 5, 20), Rec(0, 1, 30)]
    assert model.merge_page(per, 2, last=True) == [Rec(0, 1, 30), Rec(1, 6, 40)]


# ----- lag and staleness ---------------------------------------------------------------------


def test_lag_history_one_point_a_step_and_bounded() -> None:
    h = model.LagHistory(step_ms=1000, max_points=3)
    assert h.add(0, 5)
    assert not h.add(500, 7)  # within the step: replaces the last
    assert h.as_list() == [[0, 7]]
    for t in range(1, 6):
        h.add(t * 1000, t)
    assert h.as_list() == [[3000, 3], [4000, 4], [5000, 5]]


def test_lag_history_spans_five_minutes_whatever_the_refresh_pace() -> None:
    """Refreshes 1.2 s apart (a loaded console): the chart still spans the docs' five minutes,
    not 300 points' 360 s."""
    h = model.LagHistory()
    for i in range(1000):
        h.add(i * 1200, i)
    points = h.as_list()
    assert points[-1][0] - points[0][0] <= model.LAG_WINDOW_MS == 5 * 60 * 1000
    assert points[-1][0] - points[0][0] > model.LAG_WINDOW_MS - 1200
    assert len(points) <= model.LAG_POINTS_MAX


def test_txn_marks() -> None:
    committed = {0, 1, 4}
    # below the last stable offset (5), read by read_committed up to 5
    assert [model.txn_mark(o, 5, 5, committed) for o in range(5)] == [
        None, None, "aborted", "aborted", None,
    ]  # fmt: skip
    assert model.txn_mark(5, 5, 5, committed) == "open"  # at or past the LSO
    assert model.txn_mark(9, 5, 5, committed) == "open"
    assert model.txn_mark(3, 5, 2, {0, 1}) is None  # past where that read got: no claim


def test_refused_sections_apart_from_stale() -> None:
    sizes = model.Section("sizes")
    sizes.refused = "CLUSTER_AUTHORIZATION_FAILED: Cluster authorization failed. (DescribeLogDirs)"
    configs = model.Section("configs")
    configs.ok({}, 1000)
    assert model.refused_sections([sizes, configs]) == [{"section": "sizes", "why": sizes.refused}]
    assert model.stale_sections([sizes, configs], 2000, None) == []
    sizes.ok({}, 3000)  # allowed again (an ACL added): no longer refused
    assert model.refused_sections([sizes]) == []


def test_stale_sections_with_age() -> None:
    ok = model.Section("groups")
    ok.ok([], 1000)
    failed = model.Section("offsets")
    failed.ok({}, 1000)
    failed.failed("no answer in time")
    never = model.Section("sizes")
    never.failed("refused")
    assert model.stale_sections([ok, failed, never], 4000, None) == [
        {"section": "offsets", "age_ms": 3000, "why": "no answer in time"},
        {"section": "sizes", "age_ms": None, "why": "refused"},
    ]
    [down] = model.stale_sections([ok], 4000, 2500)
    assert down["section"] == "metadata" and down["age_ms"] == 1500
    assert "controller is down" in down["why"]


# ----- the chaos events file -------------------------------------------------------------------


def test_events_append_and_tail(tmp_path: Path) -> None:
    timeline.append_event(tmp_path, "injected", kind="term", target="broker 2")
    timeline.append_event(tmp_path, "healed", kind="term")
    events = timeline.read_tail(tmp_path)
    assert [e["event"] for e in events] == ["injected", "healed"]
    assert events[0]["target"] == "broker 2" and isinstance(events[0]["t"], float)
    assert timeline.read_tail(tmp_path / "none") == []
    # a tail that starts mid-line, and a line being written, are skipped
    cut = b'ted", "kind": "x"}\n{"t": 1, "event": "healed"}\n{"t": 2, "ev'
    assert timeline.parse_tail(cut) == [{"t": 1, "event": "healed"}]
    many = b"".join(json.dumps({"event": str(i)}).encode() + b"\n" for i in range(10))
    assert [e["event"] for e in timeline.parse_tail(many, limit=2)] == ["8", "9"]


def test_loopback() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("10.1.2.3")
    assert not is_loopback("example.org")


# ----- the snapshot from given sections ----------------------------------------------------------


def _meta(controller: int, brokers: list[int], leader: int) -> ClusterMetadata:
    infos = {b: BrokerInfo(b, "127.0.0.1", 9000 + b, None, "127.0.0.1", 9100 + b) for b in brokers}
    part = PartitionInfo("t", 0, leader, 3, (1, 2, 3), (1, 2, 3), (), 0)
    return ClusterMetadata(infos, {"t": [part]}, {}, controller, "cid")


def _gatherer(now: list[float]) -> Gatherer:
    return Gatherer("127.0.0.1:1", Path("/nonexistent"), clock=lambda: now[0])


def test_snapshot_marks_a_paused_controller_and_its_partitions(tmp_path: Path) -> None:
    now = [100.0]
    g = _gatherer(now)
    g.sections["metadata"].ok(_meta(1, [1, 2, 3], 1), 100_000)
    g.sections["processes"].ok({1: "alive", 2: "alive", 3: "alive"}, 100_000)
    g.offsets[("t", 0)] = (0, 10, 12)
    snap = g.snapshot()
    assert snap["controller"] == 1 and snap["stale"] == []
    [row] = snap["topics"][0]["partitions"]
    assert (row["leader"], row["hw"], row["log_end"], row["status"]) == (1, 10, 12, "ok")
    assert [b["controller"] for b in snap["brokers"]] == [True, False, False]
    assert snap["brokers"][0]["endpoints"] == ["127.0.0.1:9001", "kafka://127.0.0.1:9101"]
    assert snap["brokers"][0]["leaders"] == 1 and snap["brokers"][1]["partitions"] == 1
    # broker 1 is paused: the others still name it controller and leader
    g.sections["processes"].ok({1: "paused", 2: "alive", 3: "alive"}, 100_500)
    now[0] = 101.0
    snap = g.snapshot()
    now[0] = 103.5
    snap = g.snapshot()
    assert snap["controller"] is None
    [stale] = snap["stale"]
    assert stale["section"] == "metadata" and stale["age_ms"] == 2500
    assert snap["brokers"][0]["state"] == "paused"
    [row] = snap["topics"][0]["partitions"]
    assert row["leader"] is None and row["status"] == "offline"
    # a new controller: fresh again
    g.sections["metadata"].ok(_meta(2, [2, 3], 2), 104_000)
    snap = g.snapshot()
    assert snap["controller"] == 2 and snap["stale"] == []


def test_snapshot_keeps_a_failed_sections_data_and_says_so() -> None:
    now = [50.0]
    g = _gatherer(now)
    g.sections["metadata"].ok(_meta(1, [1, 2], 1), 50_000)
    g.sections["groups"].ok([{"id": "g"}], 50_000)
    now[0] = 52.0
    g.sections["groups"].failed("no answer in time")
    snap: dict[str, Any] = g.snapshot()
    assert snap["groups"] == [{"id": "g"}]
    assert snap["stale"] == [{"section": "groups", "age_ms": 2000, "why": "no answer in time"}]


def test_snapshot_shows_each_topics_cleanup_policy() -> None:
    g = _gatherer([10.0])
    g.sections["metadata"].ok(_meta(1, [1, 2, 3], 1), 10_000)
    assert g.snapshot()["topics"][0]["cleanup_policy"] is None  # not described yet
    g.sections["configs"].ok({"t": "compact,delete"}, 10_000)
    assert g.snapshot()["topics"][0]["cleanup_policy"] == "compact,delete"


# ----- dirty ratios, from the leaders' metrics ---------------------------------------------------

METRICS_TEXT = """# HELP odradek_log_cleaner_dirty_ratio Dirty bytes over cleanable bytes.
# TYPE odradek_log_cleaner_dirty_ratio gauge
odradek_log_cleaner_dirty_ratio{partition="0",topic="kv"} 0.25
odradek_log_cleaner_dirty_ratio{partition="1",topic="kv"} 0.75
odradek_log_cleaner_dirty_ratio{partition="x",topic="kv"} 0.5
odradek_log_cleaner_dirty_ratio{partition="2",topic="kv"} NaN
# HELP odradek_log_cleaner_max_dirty_percent Kafka's max-dirty-percent.
# TYPE odradek_log_cleaner_max_dirty_percent gauge
odradek_log_cleaner_max_dirty_percent 75.0
# HELP odradek_bytes_in_total Bytes in.
# TYPE odradek_bytes_in_total counter
odradek_bytes_in_total{topic="kv"} 1234.0
"""


def test_dirty_ratios_from_a_metrics_text() -> None:
    assert model.dirty_ratios(METRICS_TEXT) == {("kv", 0): 0.25, ("kv", 1): 0.75}
    assert model.dirty_ratios("") == {}
    with pytest.raises(ValueError):
        model.dirty_ratios("odradek_log_cleaner_dirty_ratio{topic= 1\n")
    assert model.is_compacted("compact") and model.is_compacted("compact,delete")
    assert not model.is_compacted("delete") and not model.is_compacted(None)


def test_share_partition_counts_read_back_from_the_leaders_metrics() -> None:
    """The text a leader serves for its share partitions (broker/share/metrics.py) read back
    by the console: each one's in-flight and archived counts, by (group, topic, partition)."""
    from prometheus_client import CollectorRegistry, generate_latest

    from broker.share.metrics import ShareMetrics, share_families

    held = {("jobs", "t", 0): (7, 2), ("jobs", "t", 1): (0, 0), ("other", "u", 3): (1, 5)}

    class Share:
        def collect(self) -> Any:
            return share_families(ShareMetrics(partitions=held), {})

    registry = CollectorRegistry()
    registry.register(Share())  # type: ignore[arg-type]
    text = generate_latest(registry).decode() + METRICS_TEXT
    dirty, counts = model.leader_readings(text)
    assert dirty == {("kv", 0): 0.25, ("kv", 1): 0.75}
    assert counts == {k: {"in_flight": f, "archived": a} for k, (f, a) in held.items()}


def _two_topics() -> ClusterMetadata:
    ids = (1, 2, 3)
    infos = {b: BrokerInfo(b, "127.0.0.1", 9000 + b, None, "127.0.0.1", 9100 + b) for b in ids}
    kv = [PartitionInfo("kv", p, p + 1, 3, (1, 2, 3), (1, 2, 3), (), 0) for p in range(3)]
    logs = [PartitionInfo("logs", 0, 1, 3, (1, 2, 3), (1, 2, 3), (), 0)]
    return ClusterMetadata(infos, {"kv": kv, "logs": logs}, {}, 1, "cid")


async def test_dirty_ratio_of_each_compacted_partition_from_its_leader() -> None:
    """Broker 1 leads kv-0, broker 2 kv-1, broker 3 kv-2; every broker holds a copy of each,
    and its metrics give a ratio for all of them: only the leader's is taken. Broker 3's
    metrics port is not known: kv-2 shows nothing, and broker 3 is never asked."""
    answers: dict[int, str | Exception] = {
        1: METRICS_TEXT,
        2: METRICS_TEXT.replace("0.75", "0.5"),
    }
    asked: list[tuple[str, int]] = []

    async def scrape(host: str, port: int, timeout_s: float) -> str:
        asked.append((host, port))
        answer = answers[port - 9200]
        if isinstance(answer, Exception):
            raise answer
        return answer

    g = Gatherer("127.0.0.1:1", Path("/nonexistent"), clock=lambda: 10.0, scrape=scrape)
    g.sections["metadata"].ok(_two_topics(), 10_000)
    g.sections["configs"].ok({"kv": "compact", "logs": "delete"}, 10_000)
    g.metrics_at = {1: ("127.0.0.1", 9201), 2: ("127.0.0.1", 9202)}
    await g._bounded("dirty", g._dirty())
    assert sorted(asked) == [("127.0.0.1", 9201), ("127.0.0.1", 9202)]
    snap = g.snapshot()
    [kv, logs] = snap["topics"]
    assert [p["dirty_ratio"] for p in kv["partitions"]] == [0.25, 0.5, None]
    assert [p["dirty_ratio"] for p in logs["partitions"]] == [None]  # not compacted
    assert snap["stale"] == []
    # broker 2 stops answering: kv-1 keeps its last ratio, and the part is stale
    answers[2] = OSError("connection refused")
    answers[1] = METRICS_TEXT.replace("0.25", "0.125")
    await g._bounded("dirty", g._dirty())
    snap = g.snapshot()
    assert [p["dirty_ratio"] for p in snap["topics"][0]["partitions"]] == [0.125, 0.5, None]
    [stale] = snap["stale"]
    assert stale["section"] == "dirty" and "broker 2: OSError: connection refused" in stale["why"]
    # a topic whose policy is no longer compact shows no ratio
    g.sections["configs"].ok({"kv": "delete", "logs": "delete"}, 11_000)
    assert [p["dirty_ratio"] for p in g.snapshot()["topics"][0]["partitions"]] == [None] * 3
    # against a cluster that is not local, no metrics port is known: nothing is asked
    g.metrics_at, asked[:] = {}, []
    await g._bounded("dirty", g._dirty())
    assert asked == [] and g.dirty == {}


async def test_scrape_metrics_over_http_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    from aiohttp import web

    from deploy.console import gather
    from protocol.errors import OdradekError

    async def metrics(_request: web.Request) -> web.Response:
        return web.Response(text=METRICS_TEXT)

    app = web.Application()
    app.router.add_get("/metrics", metrics)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        assert await gather.scrape_metrics("127.0.0.1", port, 5.0) == METRICS_TEXT
        monkeypatch.setattr(gather, "METRICS_BYTES_MAX", 100)
        with pytest.raises(OdradekError, match="over 100 bytes"):
            await gather.scrape_metrics("127.0.0.1", port, 5.0)
    finally:
        await runner.cleanup()


# ----- transactions ------------------------------------------------------------------------


def test_transactions_view_ages_from_now_and_leaves_out_ended_ones() -> None:
    from client.txn_admin import HangingTxn, TxnDescription
    from client.types import TopicPartition as Tp

    old = TxnDescription(2, "old", 7, 1, "Ongoing", 60000, 1000, [Tp("t", 0), Tp("t", 1)])
    young = TxnDescription(1, "young", 8, 0, "PrepareCommit", 60000, 4000, [Tp("u", 0)])
    ended = TxnDescription(1, "ended", 9, 0, "CompleteCommit", 60000, 2000, [])
    hung = HangingTxn("t", 0, 7, 1, 3, 40, 500, 0, "old", "why")
    view = model.transactions_view([young, ended, old], [hung], 5000)
    assert [(r["id"], r["age_ms"], r["state"]) for r in view["open"]] == [
        ("old", 4000, "Ongoing"), ("young", 1000, "PrepareCommit")]  # fmt: skip
    assert view["open"][0]["partitions"] == ["t-0", "t-1"]
    assert view["open"][0]["coordinator"] == 2 and view["open"][0]["producer_epoch"] == 1
    [h] = view["hanging"]
    assert (h["topic"], h["partition"], h["start_offset"], h["age_ms"]) == ("t", 0, 40, 4500)
    assert h["transactional_id"] == "old" and h["reason"] == "why"
    assert model.transactions_view([], [], 0) == {"open": [], "hanging": []}


def test_group_kind_view_shows_a_consumer_groups_epochs_and_targets() -> None:
    from protocol.api.group import GroupDescription, MemberDescription, TopicPartitions

    classic = GroupDescription(0, "c", "Stable", 3, "range", [])
    assert model.group_kind_view(classic) == {"type": "classic"}
    member = MemberDescription("m1", "cid", [TopicPartitions("t", [0])], "", None, 4,
                               [TopicPartitions("t", [0, 1])])  # fmt: skip
    kip848 = GroupDescription(0, "k", "Reconciling", 5, "uniform", [member], "consumer",
                              "Reconciling", "consumer", 5, 5)  # fmt: skip
    assert model.group_kind_view(kip848) == {
        "type": "consumer", "group_epoch": 5, "target_epoch": 5,
        "members": {"m1": {"epoch": 4, "target": ["t-0", "t-1"]}},
    }  # fmt: skip


def test_share_group_view_shows_members_partitions_shared_start_offsets_and_lag() -> None:
    from client.group.share_admin import ShareOffsetRow
    from protocol.api.share import ShareAssignedTopic, ShareGroupDescription, ShareMemberDescription

    def member(mid: str, client: str, parts: list[int]) -> ShareMemberDescription:
        return ShareMemberDescription(mid, None, 3, client, "/10.0.0.1", ["t"],
                                      [ShareAssignedTopic("t", "id", parts)])  # fmt: skip

    desc = ShareGroupDescription("jobs", 0, None, "Stable", 3, 3, "simple",
                                 [member("m1", "w1", [0, 1]), member("m2", "w2", [0])])  # fmt: skip
    rows = [ShareOffsetRow("t", 0, 10, 0, 5), ShareOffsetRow("t", 1, None, None, None),
            ShareOffsetRow("hidden", 0, 0, 0, 7)]  # fmt: skip
    view = model.share_group_view(desc, rows, lambda topic: topic != "hidden")
    assert (view["type"], view["state"], view["generation"], view["assignor"]) == (
        "share",
        "Stable",
        3,
        "simple",
    )
    assert view["shared_partitions"] == 2  # t-0 is held by both members: shared, counted once
    assert [(m["owner"], m["epoch"], m["assignment"]) for m in view["members"]] == [
        ("w1@/10.0.0.1", 3, ["t-0", "t-1"]), ("w2@/10.0.0.1", 3, ["t-0"])
    ]  # fmt: skip
    assert [(o["partition"], o["committed"], o["lag"]) for o in view["offsets"]] == [
        (0, 10, 5),
        (1, None, None),
    ]  # a topic the reader may not see is left out, and its lag with it
    assert view["lag"] == 5


# ----- each broker's event-loop lag, from its metrics --------------------------------------------


def _lag_text(samples_s: list[float]) -> str:
    from prometheus_client import CollectorRegistry, generate_latest
    from prometheus_client.registry import Collector

    from broker.histograms import BucketCounts
    from broker.loop_lag import lag_histogram

    counts = BucketCounts()
    for s in samples_s:
        counts.record(s)

    class One(Collector):
        def collect(self) -> Any:
            return iter([lag_histogram(counts.snapshot())])

    registry = CollectorRegistry()
    registry.register(One())
    return generate_latest(registry).decode()


async def test_each_brokers_loop_lag_between_two_readings_of_its_metrics() -> None:
    idle = [0.00005] * 100
    answers: dict[int, str | Exception] = {1: _lag_text(idle), 2: _lag_text(idle)}

    async def scrape(host: str, port: int, timeout_s: float) -> str:
        answer = answers[port - 9200]
        if isinstance(answer, Exception):
            raise answer
        return answer

    g = Gatherer("127.0.0.1:1", Path("/nonexistent"), clock=lambda: 10.0, scrape=scrape)
    g.sections["metadata"].ok(_two_topics(), 10_000)
    g.metrics_at = {1: ("127.0.0.1", 9201), 2: ("127.0.0.1", 9202)}
    await g._bounded("loop_lag", g._loop_lag())
    brokers = g.snapshot()["brokers"]
    assert [b["loop_lag"] for b in brokers] == [None, None, None]  # one reading: no interval yet
    answers[1] = _lag_text(idle + [0.00005] * 98 + [0.0009, 0.030])  # a 30 ms stall
    answers[2] = _lag_text(idle + [0.00005] * 100)
    await g._bounded("loop_lag", g._loop_lag())
    one, two, three = g.snapshot()["brokers"]
    assert one["loop_lag"]["samples"] == 100 and one["loop_lag"]["max_ms"] == 31.5
    assert 0.8 <= one["loop_lag"]["p99_ms"] <= 1.0
    assert two["loop_lag"]["max_ms"] == 0.1 and three["loop_lag"] is None  # no metrics port
    # broker 2 stops answering: it keeps its last interval, and the part is stale
    answers[2] = OSError("connection refused")
    await g._bounded("loop_lag", g._loop_lag())
    snap = g.snapshot()
    assert snap["brokers"][1]["loop_lag"]["max_ms"] == 0.1
    assert snap["brokers"][0]["loop_lag"] is None  # broker 1: no tick since its last reading
    [stale] = snap["stale"]
    assert (
        stale["section"] == "loop_lag" and "broker 2: OSError: connection refused" in stale["why"]
    )
    # broker 2 is dead (the local cluster's process table): not asked, shown as "-", not stale
    g.sections["processes"].ok({1: "alive", 2: "dead", 3: "alive"}, 10_000)
    answers[1] = _lag_text(idle + [0.00005] * 300)
    await g._bounded("loop_lag", g._loop_lag())
    snap = g.snapshot()
    assert [b["loop_lag"] is None for b in snap["brokers"]] == [False, True, True]
    assert snap["stale"] == []
