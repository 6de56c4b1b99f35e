#!/usr/bin/env python3
"""The schema registry's figures (issue 36): registrations and lookups by id per second.

    python bench/bench_registry.py [--seconds 5] [--json FILE]   (a 3-broker cluster of its own)

`make bench` runs it as its part `registry`, on the cluster of its native part. Each case runs
for `--seconds`, one request at a time (a serializer's or deserializer's pattern), with
confluent-kafka's SchemaRegistryClient or one keep-alive HTTP connection:

register          new Avro schemas (a new record name each: a new id) through a broker that
                  is not the `_schemas` writer, which forwards each to the writer and applies
                  the records of its answer; each is an append with acks=all
register          the same through the writer's own registry (no forward)
lookup, uncached  GET /schemas/ids/{id} over one keep-alive connection to that other broker,
                  cycling over the ids registered: its answer from its replayed state
lookup, cached    SchemaRegistryClient.get_schema(id) for ids it fetched before: its own cache
                  (what an AvroDeserializer pays per record after the first), no request

Client and brokers share the machine, so the figures are a floor.
"""

from __future__ import annotations

import argparse
import http.client
import json
import sys
import tempfile
import time
import urllib.parse
import warnings
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def log(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _client(url: str) -> Any:
    with warnings.catch_warnings():  # authlib's own warning, as tests/integration say
        warnings.simplefilter("ignore")
        from confluent_kafka.schema_registry import SchemaRegistryClient

        return SchemaRegistryClient({"url": url})


def _schema(i: int, tag: str) -> Any:
    from confluent_kafka.schema_registry import Schema

    fields = [{"name": "id", "type": "string"}, {"name": "n", "type": "long"}]
    return Schema(json.dumps({"type": "record", "name": f"Bench{tag}{i}", "fields": fields}),
                  "AVRO")  # fmt: skip


def register_rate(url: str, seconds: float, tag: str) -> tuple[float, list[int]]:
    """(registrations per second, the ids handed out)."""
    ids: list[int] = []
    with _client(url) as client:
        start = time.monotonic()
        while not ids or time.monotonic() - start < seconds:  # at least one
            ids.append(client.register_schema(f"bench-{tag}-{len(ids)}-value",
                                              _schema(len(ids), tag)))  # fmt: skip
        return len(ids) / (time.monotonic() - start), ids


def uncached_rate(url: str, ids: list[int], seconds: float) -> float:
    parsed = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(parsed.hostname or "127.0.0.1", parsed.port, timeout=10)
    done, start = 0, time.monotonic()
    try:
        while time.monotonic() - start < seconds:
            conn.request("GET", f"/schemas/ids/{ids[done % len(ids)]}")
            resp = conn.getresponse()
            body = resp.read()
            assert resp.status == 200, body
            done += 1
    finally:
        conn.close()
    return done / (time.monotonic() - start)


def seen_everywhere(url: str, schema_id: int, timeout_s: float = 30.0) -> None:
    """Wait (bounded) until the registry at `url` answers `schema_id`."""
    parsed = urllib.parse.urlsplit(url)
    deadline = time.monotonic() + timeout_s
    while True:
        conn = http.client.HTTPConnection(parsed.hostname or "", parsed.port, timeout=10)
        try:
            conn.request("GET", f"/schemas/ids/{schema_id}")
            if conn.getresponse().status == 200:
                return
        finally:
            conn.close()
        if time.monotonic() > deadline:
            raise TimeoutError(f"{url} never answered schema id {schema_id}")
        time.sleep(0.05)


def cached_rate(url: str, ids: list[int], seconds: float) -> float:
    with _client(url) as client:
        for i in ids:
            client.get_schema(i)  # fetched once: later calls are the client's cache
        done, start = 0, time.monotonic()
        while time.monotonic() - start < seconds:
            client.get_schema(ids[done % len(ids)])
            done += 1
        return done / (time.monotonic() - start)


def writer_id(bootstrap: str) -> int:
    """The broker leading `_schemas` partition 0: the registry's writer."""
    from client import Admin

    with Admin(bootstrap) as admin:
        return int(admin.describe_topics(["_schemas"])[0].partitions[0].leader)


def run(bootstrap: str, registry_of: dict[int, str], seconds: float,
        report: Any = None) -> dict[str, Any]:  # fmt: skip
    """Every case against the cluster at `bootstrap` (`registry_of`: broker id -> its
    registry URL); {"rows": [...], ...}."""
    tag = str(int(time.time()))
    _, ids = register_rate(registry_of[min(registry_of)], 0.0, tag + "0")  # makes `_schemas`
    writer = writer_id(bootstrap)
    other = min((b for b in registry_of if b != writer), default=writer)
    rows: list[dict[str, Any]] = []
    rate, more = register_rate(registry_of[other], seconds, tag + "f")
    rows.append({"case": "register", "via": f"broker {other} (forwards to the writer)",
                 "per_s": round(rate, 1)})  # fmt: skip
    ids += more
    rate, more = register_rate(registry_of[writer], seconds, tag + "w")
    rows.append({"case": "register", "via": f"broker {writer} (the writer)",
                 "per_s": round(rate, 1)})  # fmt: skip
    ids += more
    via, url = f"broker {other}", registry_of[other]
    seen_everywhere(url, max(ids))  # the writer's last registrations replayed there too
    rows.append({"case": "lookup by id, uncached", "via": via,
                 "per_s": round(uncached_rate(url, ids, seconds), 1)})  # fmt: skip
    rows.append({"case": "lookup by id, cached in the client", "via": via,
                 "per_s": round(cached_rate(url, ids, seconds), 1)})  # fmt: skip
    for r in rows:
        if report is not None:
            report(r)
    return {"rows": rows, "schemas": len(ids), "seconds": seconds}


def render(result: dict[str, Any]) -> str:
    lines = ["| schema registry | through | per second |", "|---|---|---|"]
    lines += [f"| {r['case']} | {r['via']} | {r['per_s']:,} |" for r in result["rows"]]
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=5.0, help="per case (default 5)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    from deploy.cluster import LocalCluster

    with tempfile.TemporaryDirectory(prefix="odradek-bench-registry-") as tmp:
        cluster = LocalCluster(Path(tmp) / "cluster", brokers=3, progress=log)
        try:
            cluster.up()
            result = run_on(cluster, args.seconds, log)
        finally:
            cluster.down(purge=True)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    print(render(result))
    return 0


def run_on(cluster: Any, seconds: float, report: Any = None) -> dict[str, Any]:
    """`run` against a LocalCluster that is up."""
    state = cluster.state
    registry_of = {b.id: f"http://{b.host or state.host}:{b.registry_port}"
                   for b in state.brokers if b.registry_port}  # fmt: skip
    return run(cluster.bootstrap, registry_of, seconds, report)


if __name__ == "__main__":
    sys.exit(main())
