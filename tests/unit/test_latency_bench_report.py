"""bench_report's `user` tables: medians and best runs per side, and the issue's targets met or
missed (on the medians)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from bench_report import render, summarize


def _lat(side: str, case: str, p50: float, p99: float) -> dict:
    return {"system": "odradek", "mode": "user-latency", "case": case, "side": side,
            "ref": "abc" if side == "baseline" else "working tree", "rate": 1000,
            "e2e_ms_p50": p50, "e2e_ms_p99": p99, "e2e_ms_max": p99 * 2}  # fmt: skip


def test_user_latency_targets_are_judged_on_the_median_of_the_new_runs() -> None:
    rows = [
        _lat("new", "rf1 acks=1", 0.2, 0.9),
        _lat("new", "rf1 acks=1", 0.3, 0.5),  # the best run (lowest p99), shown whole
        _lat("new", "rf1 acks=1", 0.26, 0.7),
        _lat("baseline", "rf1 acks=1", 3.0, 6.0),
        _lat("new", "rf3 acks=all", 1.0, 2.5),
        {
            "peer": "nats-jetstream",
            "mode": "latency",
            "size": 100,
            "rate": 1000,
            "e2e_ms_p50": 0.2,
            "e2e_ms_p99": 0.45,
            "e2e_ms_max": 1.0,
        },
    ]
    summary = summarize(rows, "abc")
    measured = {t["target"]: (t["measured_ms"], t["met"]) for t in summary["user_targets"]}
    assert measured == {
        "rf1 acks=1 p50 <= 0.25 ms": (0.26, False),  # the median, not the best run's 0.3
        "rf1 acks=1 p99 <= 0.6 ms": (0.7, False),  # the best run's 0.5 would have met it
        "rf1 acks=1 p99 <= NATS JetStream's p99 in this run": (0.7, False),
        "rf3 acks=all p99 <= 2.0 ms": (2.5, False),
    }
    text = render(summary)
    assert "| rf1 acks=1 | new working tree | 1000 | 0.26 (0.3) | 0.7 (0.5) | 1.0 |" in text
    assert "| rf1 acks=1 | baseline abc | 1000 | 3.0 (3.0) | 6.0 (6.0) |" in text
    assert "**missed**" in text


def test_user_throughput_compares_medians_and_ignores_failed_runs() -> None:
    base = {"system": "odradek", "mode": "user", "case": "produce-sync", "api": "sync"}
    rows = [
        {**base, "side": "baseline", "ref": "abc", "msgs_per_s": 100},
        {**base, "side": "baseline", "ref": "abc", "msgs_per_s": 300},
        {**base, "side": "new", "ref": "working tree", "msgs_per_s": 400},
        {**base, "side": "new", "ref": "working tree", "error": "boom"},
    ]
    (entry,) = summarize(rows, "abc")["user_throughput"]
    assert entry["baseline"]["median"] == 200 and entry["new"]["median"] == 400
    assert entry["new_over_baseline_median"] == 2.0


def test_the_hop_stamps_of_the_shown_run_make_the_where_the_time_goes_table() -> None:
    hops = {"hop_us_send_to_write_p50": 52.1, "hop_us_send_to_write_p99": 95.0,
            "hop_us_send_to_arrival_p50": 205.0, "hop_us_send_to_arrival_p99": 410.0,
            "hop_us_arrival_to_poll_p50": 90.5, "hop_us_arrival_to_poll_p99": 140.0}  # fmt: skip
    rows = [
        {**_lat("new", "rf1 acks=1", 0.3, 0.9), "hop_us_send_to_write_p50": 999.0},
        {**_lat("new", "rf1 acks=1", 0.3, 0.5), **hops},  # the lower p99: its hops are shown
        _lat("baseline", "rf1 acks=1", 3.0, 6.0),  # no stamps: no hop row
    ]
    text = render(summarize(rows, "abc"))
    assert "| rf1 acks=1 | new working tree | 52.1 / 95.0 | 205.0 / 410.0 | 90.5 / 140.0 |" in text
    assert "999.0" not in text and "| rf1 acks=1 | baseline abc | None" not in text


def test_the_async_loop_shape_floor_is_shown_beside_the_async_row_with_the_share_reached() -> None:
    def row(case: str, side: str, rate: int) -> dict:
        api = "async send+gather/1000" + (", send does no work" if "floor" in case else "")
        ref = "abc" if side == "baseline" else "working tree"
        return {"system": "odradek", "mode": "user", "case": case, "api": api, "side": side,
                "ref": ref, "msgs_per_s": rate}  # fmt: skip

    rows = [
        row("produce-async", "baseline", 200_000),
        row("produce-async", "new", 350_000),
        row("produce-async", "new", 330_000),
        row("produce-async-floor", "baseline", 800_000),
        row("produce-async-floor", "new", 700_000),
        row("produce-async-floor", "new", 700_000),
    ]
    summary = summarize(rows, "abc")
    cases = [u["case"] for u in summary["user_throughput"]]
    assert cases == ["produce-async", "produce-async-floor"]
    assert summary["user_throughput"][1]["real_over_floor_median"] == {
        "baseline": 0.25,
        "new": 0.49,  # 340,000 / 700,000
    }
    lines = render(summary).splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("| produce-async ("))
    assert lines[at + 1] == (
        "| produce-async-floor: async loop shape alone (no producer work) "
        "| 800,000 (800,000) | 700,000 (700,000, 700,000) | 0.88 |"
    )
    assert lines[at + 2] == (
        "| produce-async / loop shape alone: share of its ceiling, medians | 0.25 | 0.49 | |"
    )


def test_results_from_before_the_floor_case_print_without_its_rows() -> None:
    base = {"system": "odradek", "mode": "user", "case": "produce-async", "api": "async"}
    rows = [{**base, "side": "new", "ref": "working tree", "msgs_per_s": 350_000}]
    summary = summarize(rows, "abc")
    text = render(summary)
    assert "| produce-async (async) | - (-) | 350,000 (350,000) | None |" in text
    assert "loop shape" not in text


def test_latency_rows_show_each_brokers_loop_lag_the_worst_first() -> None:
    import bench_user

    from broker.histograms import BucketCounts
    from deploy.loop_lag import lag_buckets
    from tests.unit.deploy.test_loop_lag_reading import rendered

    def reading(extra_s: list[float]) -> dict:
        counts = BucketCounts()
        for s in [0.00005] * 100 + extra_s:
            counts.record(s)
        return lag_buckets(rendered(counts)) or {}

    before = {1: reading([]), 2: reading([]), 3: None}  # broker 3 exports no lag
    after = {1: reading([0.0004] * 2), 2: reading([0.0009, 0.024]), 3: None}
    fields = bench_user.loop_lag_fields(before, after)
    assert set(fields["loop_lag"]) == {"1", "2"} and fields["loop_lag_ms_max"] == 25.0
    assert fields["loop_lag"]["1"]["samples"] == 2 and fields["loop_lag"]["1"]["max_ms"] == 0.4
    assert bench_user.loop_lag_fields({1: None}, {1: reading([])}) == {}  # no first reading
    rows = [{**_lat("new", "rf1 acks=1", 0.3, 0.5), **fields}, _lat("baseline", "rf1 acks=1", 3, 6)]
    text = render(summarize(rows, "abc"))
    assert "| best run: broker loop lag p99 / max ms |" in text
    new_row = next(line for line in text.splitlines() if "| new working tree |" in line)
    p99 = {b: lag["p99_ms"] for b, lag in fields["loop_lag"].items()}
    assert new_row.endswith(f"| 2: {p99['2']} / 25.0, 1: {p99['1']} / 0.4 |")
    old_row = next(line for line in text.splitlines() if "| baseline abc |" in line)
    assert old_row.endswith("| - |")  # a tree whose brokers export no lag
    native = {"system": "odradek", "mode": "latency", "rate": 1000, "size": 100,
              "e2e_ms_p50": 1.0, "e2e_ms_p99": 2.0, "e2e_ms_max": 3.0, **fields}  # fmt: skip
    assert "| 3.0 | 2: " in render(summarize([native], "abc"))
