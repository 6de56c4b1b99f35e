"""bench_cluster.py's results as data (`summarize`) and as Markdown tables (`render`).

`summarize(rows, ref)` picks the best run of each case from every raw JSON row (odradek's
`odradek bench` lines, the Kafka clients', the baseline's and the peers'): a dict of lists of
plain dicts, written as-is to the JSON file; `render(summary)` prints exactly those figures.
The `user` part's latency is shown as the median of its runs beside the best run, and its
targets are judged on the medians. Its produce-async row is followed by the same loop over a
`send` that does no work (bench_user.py's produce-async-floor) and, per side, the share of
that ceiling the real producer reaches (median over median). Latency rows show each broker's
event-loop lag p99 / max over the run, the worst broker first (issue 34). Targets are printed
beside the figures; they are not assertions.
"""

from __future__ import annotations

import statistics
from typing import Any

SIZES = (100, 1024)
KAFKA_SYSTEMS = ("confluent-kafka", "kafka-python")
TARGETS = (  # (system, mode, size, records/s), as the issue states them
    ("confluent-kafka", "produce", 100, 500_000),
    ("confluent-kafka", "consume", 100, 1_000_000),
)
# issue 12, through the public Producer(linger_ms=0) and a Consumer in another process:
# (case, statistic, ceiling ms); "nats" compares with NATS JetStream's p99 in the same run
USER_LATENCY_TARGETS = (
    ("rf1 acks=1", "p50_ms", 0.25),
    ("rf1 acks=1", "p99_ms", 0.6),
    ("rf1 acks=1", "p99_ms", "nats"),
    ("rf3 acks=all", "p99_ms", 2.0),
)
USER_CASES = ("produce-sync", "produce-async", "produce-async-floor", "consume")
# bench_user.py's produce-async loop over a send that does no work: (its case, the real case)
USER_FLOOR = ("produce-async-floor", "produce-async")


def best(rows: list[dict], **match: object) -> dict | None:
    cands = [r for r in rows if all(r.get(k) == v for k, v in match.items()) and "error" not in r]
    return max(cands, key=lambda r: r.get("msgs_per_s", 0), default=None)


def _line(system: str, case: str, r: dict, partitions: Any = 1, runs: int = 1) -> dict:
    rate, size = float(r["msgs_per_s"]), int(r.get("size") or 0)
    return {
        "system": system, "case": case, "size": size, "partitions": partitions,
        "records_per_s": round(rate), "MB_per_s": round(rate * size / 1e6, 1),
        "MiB_per_s": round(rate * size / 2**20, 1), "runs": runs,
    }  # fmt: skip


def _runs(rows: list[dict], **match: object) -> int:
    return sum(1 for r in rows if all(r.get(k) == v for k, v in match.items()) and "error" not in r)


def _ours(rows: list[dict]) -> list[dict]:
    out = []
    for size in SIZES:
        for parts in (1, 8):
            for mode, api in (("produce", "bulk"), ("produce", "send"), ("consume", "poll")):
                match = dict(system="odradek", mode=mode, api=api, size=size, partitions=parts,
                             side=None)  # fmt: skip
                r = best(rows, **match)
                if r:
                    out.append(_line("odradek", f"{mode} ({api})", r, parts, _runs(rows, **match)))
    for system in KAFKA_SYSTEMS:
        for size in SIZES:
            for mode in ("produce", "consume"):
                r = best(rows, system=system, mode=mode, size=size)
                if r:
                    runs = _runs(rows, system=system, mode=mode, size=size)
                    out.append(_line(system, f"{mode} ({r['api']})", r, 1, runs))
    return out


def _peer_key(r: dict) -> tuple:
    fields = ("peer", "mode", "client", "appendfsync", "size", "consumer", "window")
    return tuple(r.get(f) for f in fields)


def _peers(rows: list[dict]) -> list[dict]:
    peers = [r for r in rows if "peer" in r and "msgs_per_s" in r and r.get("mode") != "latency"]
    out, seen = [], set()
    for r in peers:
        key = _peer_key(r)
        if key in seen:
            continue
        seen.add(key)
        group = [x for x in peers if _peer_key(x) == key]
        top = max(group, key=lambda x: x["msgs_per_s"])
        fields = [top.get(f) for f in ("mode", "client", "appendfsync", "consumer", "window")]
        label = " ".join(str(v) for v in fields if v is not None)
        out.append(_line(str(top.get("peer")), label, top, 1, len(group)))
    return out


def _latency(rows: list[dict]) -> list[dict]:
    return [
        {"system": r.get("system") or r.get("peer"), "rate": r.get("rate"),
         "appendfsync": r.get("appendfsync", ""), "size": r.get("size"),
         "p50_ms": r.get("e2e_ms_p50"), "p99_ms": r.get("e2e_ms_p99"),
         "max_ms": r.get("e2e_ms_max"), **_loop_lag(r)}
        for r in rows if r.get("mode") == "latency" and "error" not in r
    ]  # fmt: skip


def _loop_lag(row: dict) -> dict:
    """The brokers' event-loop lag over a latency run (bench_user.loop_lag_fields), if read."""
    return {k: row[k] for k in ("loop_lag", "loop_lag_ms_p99", "loop_lag_ms_max") if k in row}


def lag_cell(x: dict) -> str:
    """`p99 / max` ms of each broker's loop lag, the worst broker first ("-": not read)."""
    per = x.get("loop_lag") or {}
    order = sorted(per, key=lambda b: (-per[b]["max_ms"], -per[b]["p99_ms"], b))
    return ", ".join(f"{b}: {per[b]['p99_ms']} / {per[b]['max_ms']}" for b in order) or "-"


def _side_runs(rows: list[dict], side: str, mode: str, api: str) -> list[dict]:
    return [r for r in rows if r.get("side") == side and r.get("mode") == mode
            and r.get("api") == api and "msgs_per_s" in r]  # fmt: skip


def _baseline(rows: list[dict], ref: str) -> list[dict]:
    out = []
    for mode, api in (("produce", "bulk"), ("produce", "send"), ("consume", "poll")):
        entry: dict[str, Any] = {"case": f"{mode} ({api})", "size": 100, "partitions": 1}
        for side in ("baseline", "new"):
            runs = _side_runs(rows, side, mode, api)
            rates = [r["msgs_per_s"] for r in runs]
            entry[side] = {
                "ref": runs[0]["ref"] if runs else (ref if side == "baseline" else "working tree"),
                "best": round(max(rates)) if rates else None,
                "median": round(statistics.median(rates)) if rates else None,
                "client_cpu_s_median": statistics.median(
                    [r["client_cpu_s"] for r in runs if "client_cpu_s" in r] or [0.0]
                ),
                "runs": [round(x) for x in rates],
            }
        old, new = entry["baseline"], entry["new"]
        if old["runs"] or new["runs"]:
            for stat in ("best", "median"):
                ok = old[stat] and new[stat]
                entry[f"new_over_baseline_{stat}"] = round(new[stat] / old[stat], 2) if ok else None
            out.append(entry)
    return out


def _targets(throughput: list[dict]) -> list[dict]:
    out = []
    for system, mode, size, want in TARGETS:
        got = next((t for t in throughput if t["system"] == system and t["size"] == size
                    and t["case"].startswith(mode)), None)  # fmt: skip
        out.append(
            {
                "target": f"{system} {mode} >= {want:,} records/s at {size} B",
                "records_per_s": got["records_per_s"] if got else None,
                "met": None if got is None else got["records_per_s"] >= want,
            }
        )
    return out


def _settings(rows: list[dict]) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for r in rows:
        if "settings" in r:
            out.setdefault(f"{r['system']} {r['mode']}", r["settings"])
    return out


def _user_throughput(rows: list[dict]) -> list[dict]:
    out = []
    for case in USER_CASES:
        entry: dict[str, Any] = {"case": case, "api": None}
        for side in ("baseline", "new"):
            runs = [r for r in rows if r.get("mode") == "user" and r.get("case") == case
                    and r.get("side") == side and "msgs_per_s" in r]  # fmt: skip
            rates = [r["msgs_per_s"] for r in runs]
            entry["api"] = entry["api"] or (runs[0]["api"] if runs else None)
            median = round(statistics.median(rates)) if rates else None
            entry[side] = {"ref": runs[0]["ref"] if runs else None, "runs": rates,
                           "best": max(rates, default=None), "median": median}  # fmt: skip
        old, new = entry["baseline"]["median"], entry["new"]["median"]
        entry["new_over_baseline_median"] = round(new / old, 2) if old and new else None
        if entry["api"]:
            out.append(entry)
    _add_floor_share(out)
    return out


def _add_floor_share(entries: list[dict]) -> None:
    """On the floor's entry, per side: the real case's median over the floor's (the share of
    the loop shape's ceiling that the producer reaches)."""
    by_case = {e["case"]: e for e in entries}
    floor, real = (by_case.get(case) for case in USER_FLOOR)
    if floor is None or real is None:
        return
    shares = {}
    for side in ("baseline", "new"):
        got, ceiling = real[side]["median"], floor[side]["median"]
        shares[side] = round(got / ceiling, 2) if got and ceiling else None
    floor["real_over_floor_median"] = shares


def _user_latency(rows: list[dict]) -> list[dict]:
    """Per case and side: the median p50 and p99 of the runs (what the targets are judged on),
    and the run with the lowest p99, shown whole (its max, ack and hop figures)."""
    out = []
    for case in {r["case"]: 0 for r in rows if r.get("mode") == "user-latency"}:
        for side in ("baseline", "new"):
            runs = [r for r in rows if r.get("mode") == "user-latency" and r.get("case") == case
                    and r.get("side") == side and r.get("e2e_ms_p99") is not None]  # fmt: skip
            if not runs:
                continue
            top = min(runs, key=lambda r: r["e2e_ms_p99"])
            out.append({"case": case, "side": side, "ref": top.get("ref"), "rate": top["rate"],
                        "p50_ms": top["e2e_ms_p50"], "p99_ms": top["e2e_ms_p99"],
                        "max_ms": top["e2e_ms_max"], "ack_p50_ms": top.get("ack_ms_p50"),
                        "ack_p99_ms": top.get("ack_ms_p99"), "received": top.get("received"),
                        "runs": len(runs),
                        "p50_median_ms": _median_of(runs, "e2e_ms_p50"),
                        "p99_median_ms": _median_of(runs, "e2e_ms_p99"), **_loop_lag(top),
                        **{k: v for k, v in top.items() if k.startswith("hop_us_")}})  # fmt: skip
    return out


def _median_of(runs: list[dict], key: str) -> float:
    return round(statistics.median(r[key] for r in runs), 3)


def _user_targets(latency: list[dict], peers: list[dict]) -> list[dict]:
    nats = [p["p99_ms"] for p in peers if str(p["system"]).startswith("nats")
            and p["size"] == 100 and p["p99_ms"] is not None]  # fmt: skip
    out = []
    for case, stat, want in USER_LATENCY_TARGETS:
        median = stat.replace("_ms", "_median_ms")  # the median of the new side's runs
        got = next((x[median] for x in latency if x["case"] == case and x["side"] == "new"), None)
        ceiling = (min(nats) if nats else None) if want == "nats" else want
        label = "NATS JetStream's p99 in this run" if want == "nats" else f"{want} ms"
        out.append({"target": f"{case} {stat.removesuffix('_ms')} <= {label}",
                    "ceiling_ms": ceiling, "measured_ms": got,
                    "met": None if got is None or ceiling is None else got <= ceiling})  # fmt: skip
    return out


def summarize(rows: list[dict], ref: str) -> dict[str, Any]:
    throughput = _ours(rows) + _peers(rows)
    latency = _latency(rows)
    user_latency = _user_latency(rows)
    return {
        "throughput": throughput,
        "latency": latency,
        "user_throughput": _user_throughput(rows),
        "user_latency": user_latency,
        # the targets read the user part's runs: without them (--only without `user`) no table
        "user_targets": _user_targets(user_latency, latency) if user_latency else [],
        "baseline": _baseline(rows, ref),
        "targets": _targets(throughput),
        "client_settings": _settings(rows),
    }


def render(summary: dict[str, Any]) -> str:
    lines: list[str] = []
    if summary["throughput"]:
        lines += ["| system | case | size | partitions | records/s | MB/s | MiB/s |",
                  "| --- | --- | --- | --- | --- | --- | --- |"]  # fmt: skip
    for t in summary["throughput"]:
        lines.append(f"| {t['system']} | {t['case']} | {t['size']} | {t['partitions']} | "
                     f"{t['records_per_s']:,} | {t['MB_per_s']} | {t['MiB_per_s']} |")  # fmt: skip
    if summary["latency"]:
        lines += [
            "",
            "| system | latency case | size | e2e p50 ms | e2e p99 ms | max ms "
            "| broker loop lag p99 / max ms |",
            "| --- | --- | --- | --- | --- | --- | --- |",
        ]
        for r in summary["latency"]:
            lines.append(
                f"| {r['system']} | {r['rate']}/s {r['appendfsync']} | {r['size']} | "
                f"{r['p50_ms']} | {r['p99_ms']} | {r['max_ms']} | {lag_cell(r)} |"
            )
    lines += _render_user(summary)
    if summary["baseline"]:
        ref = summary["baseline"][0]["baseline"]["ref"]
        lines += ["", f"| native, 100 B, 1 partition, records/s | baseline {ref}: best / median "
                  "| new: best / median | new / baseline: best, median "
                  "| client CPU s, median: baseline / new | runs |",
                  "| --- | --- | --- | --- | --- | --- |"]  # fmt: skip
        for b in summary["baseline"]:
            old, new = b["baseline"], b["new"]
            lines.append(
                f"| {b['case']} | {_n(old['best'])} / {_n(old['median'])} | "
                f"{_n(new['best'])} / {_n(new['median'])} | {b['new_over_baseline_best']}, "
                f"{b['new_over_baseline_median']} | {old['client_cpu_s_median']} / "
                f"{new['client_cpu_s_median']} | {len(old['runs'])} + {len(new['runs'])} |"
            )
    if any(t["records_per_s"] is not None for t in summary["targets"]):
        lines += ["", "| target (not an assertion) | measured records/s | |", "| --- | --- | --- |"]
        for t in summary["targets"]:
            met = "" if t["met"] is None else "met" if t["met"] else "**missed**"
            got = "-" if t["records_per_s"] is None else f"{t['records_per_s']:,}"
            lines.append(f"| {t['target']} | {got} | {met} |")
    if summary["client_settings"]:
        lines += ["", "Kafka client settings (everything else at the client's default):"]
        for who, conf in summary["client_settings"].items():
            lines.append(f"- {who}: " + ", ".join(f"{k}={v}" for k, v in conf.items()))
    return "\n".join(lines).lstrip("\n")


HOPS = (  # bench_user.py's hop stamps: (row key prefix, column)
    ("hop_us_send_to_write", "send() -> request written (producer)"),
    ("hop_us_send_to_arrival", "send() -> answer arrives (consumer; the broker in between)"),
    ("hop_us_arrival_to_poll", "arrival -> poll() returns (consumer)"),
)


def _render_user(summary: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    if summary.get("user_throughput"):
        ref = next((u["baseline"]["ref"] for u in summary["user_throughput"]
                    if u["baseline"]["ref"]), "baseline")  # fmt: skip
        lines += ["", f"| user path, 100 B, 1 partition, acks 1, records/s | baseline {ref}: "
                  "median (runs) | new: median (runs) | new / baseline |",
                  "| --- | --- | --- | --- |"]  # fmt: skip
        for u in summary["user_throughput"]:
            old, new = u["baseline"], u["new"]
            label = f"{u['case']} ({u['api']})"
            if u["case"] == USER_FLOOR[0]:
                label = f"{u['case']}: async loop shape alone (no producer work)"
            lines.append(f"| {label} | {_n(old['median'])} ({_runs_text(old)}) "
                         f"| {_n(new['median'])} ({_runs_text(new)}) | "
                         f"{u['new_over_baseline_median']} |")  # fmt: skip
            share = u.get("real_over_floor_median")
            if share:
                lines.append(f"| {USER_FLOOR[1]} / loop shape alone: share of its ceiling, "
                             f"medians | {share['baseline']} | {share['new']} | |")  # fmt: skip
    if summary.get("user_latency"):
        lines += ["", "| user e2e latency, Producer(linger_ms=0) -> Consumer.poll, 100 B | side "
                  "| rate/s | p50 ms: median of runs (best run) | p99 ms: median of runs "
                  "(best run) | best run: max ms | best run: ack p50 / p99 ms | runs "
                  "| best run: broker loop lag p99 / max ms |",
                  "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]  # fmt: skip
        for x in summary["user_latency"]:
            lines.append(f"| {x['case']} | {x['side']} {x['ref']} | {x['rate']} | "
                         f"{x['p50_median_ms']} ({x['p50_ms']}) | {x['p99_median_ms']} "
                         f"({x['p99_ms']}) | {x['max_ms']} | {x['ack_p50_ms']} / "
                         f"{x['ack_p99_ms']} | {x['runs']} | {lag_cell(x)} |")  # fmt: skip
    hops = [x for x in summary.get("user_latency", []) if any(k + "_p50" in x for k, _ in HOPS)]
    if hops:
        lines += ["", "| where a record's time goes (same runs), p50 / p99 us | side "
                  + "".join(f"| {label} " for _, label in HOPS) + "|",
                  "| --- | --- " + "| --- " * len(HOPS) + "|"]  # fmt: skip
        for x in hops:
            cells = "".join(f"| {x.get(k + '_p50')} / {x.get(k + '_p99')} " for k, _ in HOPS)
            lines.append(f"| {x['case']} | {x['side']} {x['ref']} {cells}|")
    if summary.get("user_targets"):
        lines += ["", "| user latency target (issue 12, not an assertion) | ceiling ms "
                  "| measured ms (median of runs) | |", "| --- | --- | --- | --- |"]  # fmt: skip
        for t in summary["user_targets"]:
            met = "" if t["met"] is None else "met" if t["met"] else "**missed**"
            lines.append(f"| {t['target']} | {t['ceiling_ms']} | {t['measured_ms']} | {met} |")
    return lines


def _runs_text(side: dict) -> str:
    return ", ".join(f"{x:,}" for x in side["runs"]) or "-"


def _n(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"
