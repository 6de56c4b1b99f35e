"""bench_tail.py's table: its rows of latency figures made into ratios and one Markdown table.

Pure: rows in (bench_user.run_latency's latency rows with `case`, `rf`, `acks`; the NATS rows of
the peers' harness with `system` "nats" and `case` "quiet" or "loaded"), a summary out.

- `p99 / plain`: a case's p99 over the p99 of case `plain` at the same RF (the NATS loaded
  row: over NATS's quiet p99, how much the peer lost to the same load);
- `p99 / NATS`: odradek's p99 over NATS JetStream's in the same state (`plain` rows against the
  quiet NATS run, `loaded` rows against the loaded one); the issue's aim under load is <= 1.5;
- the note: what ran beside the case (bench_tail.py's `sides`: the transactional producer's
  commits, the cleaner's passes, the ACL count, the CPU hogs).
"""

from __future__ import annotations

from typing import Any

NATS_STATE = {"plain": "quiet", "loaded": "loaded"}  # odradek case -> NATS run it is set against


def _ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 2) if a is not None and b else None


def _note(case: str, sides: dict[str, Any]) -> str:
    side = sides.get(case) or {}
    if case == "txn" and "transactions" in side:
        return (f"{side['transactions']} commits beside (p99 {side['commit_ms_p99']} ms), "
                f"{side['records']:,} records")  # fmt: skip
    if case == "kafka producer" and "flushes" in side:
        return f"{side['records']:,} records beside, idempotent (txn's control)"
    if case == "writer" and "records" in side:
        return f"{side['records']:,} records beside, not compacted (compacted's control)"
    if case == "compacted" and "cleaner_passes" in side:
        passes = ", ".join(f"{k.removeprefix('broker-')}: {v}"
                           for k, v in sorted(side["cleaner_passes"].items()))  # fmt: skip
        times = [t for t in side.get("max_clean_time_secs", {}).values() if t is not None]
        took = f", max-clean-time-secs up to {max(times):.3f}" if times else ""
        return (f"{side.get('records', 0):,} records beside; the cleaner's passes over it per "
                f"broker {passes}{took}")  # fmt: skip
    if case == "tls":
        return "native door over TLS (SSL), replication in plaintext"
    if case == "loaded" and "cpu_hogs" in side:
        return f"{len(side['cpu_hogs'])} x `yes > /dev/null` beside"
    if case == "acls" and "acls" in side:
        return f"{side['acls']:,} ACLs, authorizer on (a cluster of its own)"
    return side.get("error", "")


def summarize(rows: list[dict[str, Any]], sides: dict[str, Any]) -> dict[str, Any]:
    """The table's lines, in the rows' order, with the ratios worked out."""
    plain = {r["rf"]: r.get("e2e_ms_p99") for r in rows
             if r.get("system") == "odradek" and r.get("case") == "plain"}  # fmt: skip
    nats = {r["case"]: r.get("e2e_ms_p99") for r in rows if r.get("system") == "nats"}
    lines = []
    for r in rows:
        line = {"p50": r.get("e2e_ms_p50"), "p99": r.get("e2e_ms_p99"),
                "p999": r.get("e2e_ms_p999"), "max": r.get("e2e_ms_max"),
                "error": r.get("error")}  # fmt: skip
        if r.get("system") == "nats":
            line.update(case=f"NATS JetStream, {r['case']}", rf="R1 file", lag_p99=None,
                        lag_max=None, note="")  # fmt: skip
            if r["case"] != "quiet":
                line["vs_plain"] = _ratio(line["p99"], nats.get("quiet"))
        else:
            case = r["case"]
            base = plain.get(r["rf"]) if case != "plain" else None
            line.update(case=case, rf=f"RF {r['rf']} acks={r['acks']}",
                        lag_p99=r.get("loop_lag_ms_p99"), lag_max=r.get("loop_lag_ms_max"),
                        vs_plain=_ratio(line["p99"], base), note=_note(case, sides))  # fmt: skip
            if case in NATS_STATE:
                line["vs_nats"] = _ratio(line["p99"], nats.get(NATS_STATE[case]))
        lines.append(line)
    return {"lines": lines, "plain_p99": plain, "nats_p99": nats}


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def render(summary: dict[str, Any]) -> str:
    out = ["| case | rf, acks | p50 ms | p99 ms | p99.9 ms | max ms | broker loop lag p99 / max ms "
           "| p99 / plain | p99 / NATS | beside |",
           "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]  # fmt: skip
    for line in summary["lines"]:
        if line.get("error"):
            out.append(f"| {line['case']} | {line['rf']} | error: {line['error'][:80]} "
                       "| | | | | | | |")  # fmt: skip
            continue
        lag = ("-" if line["lag_p99"] is None
               else f"{_ms(line['lag_p99'])} / {_ms(line['lag_max'])}")  # fmt: skip
        ratios = [f"{v:.2f}" if (v := line.get(k)) is not None else "-"
                  for k in ("vs_plain", "vs_nats")]  # fmt: skip
        out.append(f"| {line['case']} | {line['rf']} | {_ms(line['p50'])} | {_ms(line['p99'])} "
                   f"| {_ms(line['p999'])} | {_ms(line['max'])} | {lag} | {ratios[0]} "
                   f"| {ratios[1]} | {line['note']} |")  # fmt: skip
    return "\n".join(out)
