#!/usr/bin/env python3
"""Produce throughput with 10,000 ACLs loaded, as a ratio of the same produce with no
authorizer (issue 25's aim: at least 95%).

    python bench/bench_acls.py [--messages N] [--rounds R] [--acls 10000] [--json FILE]

Two one-broker clusters of this tree run side by side in a temporary directory: `plain`
without an authorizer, `acls` with `authorizer_class_name` set and --acls ACLs loaded through
CreateAcls: half on literal topics and half on prefixes that match nothing produced, ten
principals each (so the index holds many names and many prefix lengths), plus the ACL that
lets the producer write: ALLOW User:ANONYMOUS All on the prefix `bench-`. The producer is not
a super user, so every produce request goes through the ACL lookup. (The first ACL, ANONYMOUS
All on the cluster, is allowed by allow_everyone_if_no_acl_found, which applies only while a
resource has no ACL at all; the bench topics have theirs.)

Cases, alternating between the clusters in each round: `odradek bench produce` of 100 B
records with the bulk API and with send() per record (more, smaller requests), acks=1, one
partition. A case's figure is its median round; the ratio is acls / plain.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

AUTHORIZER = {
    "authorizer_class_name": "kafka.security.authorizer.AclAuthorizer",
    "allow_everyone_if_no_acl_found": True,
}
BATCH = 500  # creations per CreateAcls request


def log(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _produce(bootstrap: str, topic: str, n: int, per_record: bool) -> dict[str, Any]:
    cmd = [
        sys.executable,
        "-m",
        "deploy.cli",
        "bench",
        "produce",
        "--topic",
        topic,
        "--num-records",
        str(n),
        "--record-size",
        "100",
        "--bootstrap",
        bootstrap,
    ]
    if per_record:
        cmd.append("--per-record")
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900)
    if out.returncode != 0:
        return {"error": out.stderr.strip()[-300:]}
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def load_acls(bootstrap: str, count: int) -> int:
    """The producer's ACLs, then `count` others; returns how many the broker holds."""
    from client import Admin
    from protocol.acl import (
        AclBinding,
        AclBindingFilter,
        AclOperation,
        AclPermissionType,
        PatternType,
        ResourceType,
    )
    from protocol.principal import KafkaPrincipal

    allow, op = AclPermissionType.ALLOW, AclOperation
    anon = KafkaPrincipal.user("ANONYMOUS")
    with Admin(bootstrap) as admin:
        admin.create_acls(
            [
                AclBinding(
                    ResourceType.CLUSTER,
                    "kafka-cluster",
                    PatternType.LITERAL,
                    anon,
                    "*",
                    op.ALL,
                    allow,
                )
            ]
        )
        admin.create_acls(
            [
                AclBinding(
                    ResourceType.TOPIC, "bench-", PatternType.PREFIXED, anon, "*", op.ALL, allow
                )
            ]
        )
        others: list[AclBinding] = []
        for i in range(count // 10):
            literal = i % 2 == 0
            name = f"other-topic-{i}" if literal else f"zz{i}-"
            pattern = PatternType.LITERAL if literal else PatternType.PREFIXED
            others += [
                AclBinding(
                    ResourceType.TOPIC,
                    name,
                    pattern,
                    KafkaPrincipal.user(f"u{j}"),
                    "*",
                    op.READ,
                    allow,
                )
                for j in range(10)
            ]
        for start in range(0, len(others), BATCH):
            admin.create_acls(others[start : start + BATCH])
        return len(admin.describe_acls(AclBindingFilter()))


def run(messages: int, rounds: int, acls: int, report: Callable[[dict], None] = print) -> dict:
    from client import Admin, NewTopic
    from deploy.cluster import LocalCluster

    tmp = Path(tempfile.mkdtemp(prefix="odradek-bench-acls-"))
    plain = LocalCluster(tmp / "plain", brokers=1, progress=log)
    secured = LocalCluster(tmp / "acls", brokers=1, progress=log, broker_settings=AUTHORIZER)
    rows: list[dict[str, Any]] = []
    try:
        boot = {"plain": plain.up(), "acls": secured.up()}
        t = time.monotonic()
        loaded = load_acls(boot["acls"], acls)
        log(f"{loaded} ACLs loaded in {time.monotonic() - t:.1f} s")
        for r in range(rounds):
            for api in ("bulk", "send"):
                n = messages if api == "bulk" else max(messages // 4, 1000)
                for side in ("plain", "acls") if r % 2 == 0 else ("acls", "plain"):
                    topic = f"bench-{api}-{r}"
                    with Admin(boot[side]) as admin:
                        admin.create_topics([NewTopic(topic, 1, 1)])
                    row = _produce(boot[side], topic, n, api == "send")
                    row.update(side=side, api=api, round=r, acls=loaded if side == "acls" else 0)
                    rows.append(row)
                    report(row)
    finally:
        for cluster in (plain, secured):
            try:
                cluster.down(purge=True)
            except Exception as exc:  # keep the figures; say what failed to stop
                log(f"stopping {cluster.dir}: {exc}")
        shutil.rmtree(tmp, ignore_errors=True)
    return summarize(rows)


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    summary: dict[str, Any] = {"rows": rows, "cases": {}, "ratios": {}}
    for api in ("bulk", "send"):
        med = {}
        for side in ("plain", "acls"):
            got = [
                r["msgs_per_s"]
                for r in rows
                if r["api"] == api and r["side"] == side and "msgs_per_s" in r
            ]
            med[side] = statistics.median(got) if got else None
            summary["cases"][f"{api} {side}"] = med[side]
        if med["plain"] and med["acls"]:
            summary["ratios"][f"{api}: acls / plain"] = med["acls"] / med["plain"]
    return summary


def render(summary: dict[str, Any]) -> str:
    lines = ["| case | records/s (median) |", "| --- | ---: |"]
    for case, value in summary["cases"].items():
        lines.append(f"| {case} | {'error' if value is None else f'{value:,.0f}'} |")
    lines += [""] + [f"- {k}: {v:.3f}" for k, v in summary["ratios"].items()]
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--messages", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--acls", type=int, default=10_000)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    summary = run(args.messages, args.rounds, args.acls, report=lambda r: log(json.dumps(r)))
    if args.json:
        args.json.write_text(json.dumps(summary, indent=1) + "\n")
    print(render(summary))
    errors = [r for r in summary["rows"] if "error" in r]
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
