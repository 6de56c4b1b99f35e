"""What `odradek topics list|describe` and `odradek cluster status` show, as data: each command
builds its JSON document here (field names are the contract, docs/cli.md) and its table lines
from the same values, so the two outputs cannot disagree. Pure functions of what the Admin
client and LocalCluster returned; deploy/cli.py does the I/O.

`topics list` and `topics describe` (without a name) show the internal topics unless
--exclude-internal is given (`shown_topics`), as kafka-topics.sh does.

Partition status words: "ok", "under-replicated" (ISR smaller than the replica list),
"offline" (no leader). The table shows the last two as seed 004's markers.
"""

from __future__ import annotations

from typing import Any

from deploy.cli_output import Fields, field_lines, table_lines
from deploy.records_cli import Offsets

STATUS_COLUMNS = ("ID", "PID", "PORT", "KAFKA", "METRICS", "REGISTRY", "STATE", "ROLE", "LOG_DIRS")


def partition_status(p: Any) -> str:
    if p.leader < 0:
        return "offline"
    return "under-replicated" if len(p.isr) < len(p.replicas) else "ok"


def partition_doc(topic: str, p: Any, offsets: Offsets | None) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "partition": p.partition,
        "leader": None if p.leader < 0 else p.leader,
        "replicas": list(p.replicas),
        "isr": list(p.isr),
        "status": partition_status(p),
    }
    if offsets is not None:  # --offsets: null for a partition without a leader
        start, hw = offsets.get((topic, p.partition), (None, None))
        doc["log_start_offset"], doc["high_watermark"] = start, hw
    return doc


def topic_doc(description: Any, configs: dict[str, str], offsets: Offsets | None) -> dict[str, Any]:
    """One topic of `topics describe -o json`: its own config overrides and its partitions."""
    partitions = sorted(description.partitions, key=lambda p: p.partition)
    return {
        "name": description.name,
        "partition_count": len(partitions),
        "replication_factor": max((len(p.replicas) for p in partitions), default=0),
        "configs": dict(sorted(configs.items())),
        "partitions": [partition_doc(description.name, p, offsets) for p in partitions],
    }


def partition_fields(topic: str, p: Any, offsets: Offsets | None) -> tuple[Fields, str]:
    """Seed 004's fields of one partition line (plus its offsets) and its marker."""
    fields = [
        ("Topic", topic),
        ("Partition", str(p.partition)),
        ("Leader", "none" if p.leader < 0 else str(p.leader)),
        ("Replicas", ",".join(map(str, p.replicas))),
        ("Isr", ",".join(map(str, p.isr))),
    ]
    known = (offsets or {}).get((topic, p.partition))
    if known is not None:
        fields += [("LogStartOffset", str(known[0])), ("HighWatermark", str(known[1]))]
    status = partition_status(p)
    return fields, "" if status == "ok" else f"({status})"


def describe_lines(
    descriptions: list[Any], headers: dict[str, str], offsets: Offsets | None
) -> list[str]:
    """Each topic's header line (`headers[name]`, seed 004's), then its partition lines, padded
    so that every label starts at the same column on every partition line of the listing."""
    ordered = sorted(descriptions, key=lambda d: d.name)
    rows = [
        partition_fields(d.name, p, offsets)
        for d in ordered
        for p in sorted(d.partitions, key=lambda p: p.partition)
    ]
    aligned = iter(field_lines(rows))
    out = []
    for d in ordered:
        out.append(headers[d.name])
        out.extend(next(aligned) for _ in d.partitions)
    return out


def shown_topics(descriptions: list[Any], exclude_internal: bool) -> list[Any]:
    """The topics `topics list|describe` show: every one, or all but the internal ones
    (__consumer_offsets, __transaction_state) with --exclude-internal, as kafka-topics.sh."""
    return [d for d in descriptions if not (exclude_internal and d.is_internal)]


def topics_list_doc(descriptions: list[Any]) -> dict[str, Any]:
    """`topics list -o json`: every topic with its partition count, replication factor and
    whether it is internal."""
    topics = []
    for d in sorted(descriptions, key=lambda d: d.name):
        rf = max((len(p.replicas) for p in d.partitions), default=0)
        topics.append({"name": d.name, "partitions": len(d.partitions), "replication_factor": rf,
                       "internal": bool(d.is_internal)})  # fmt: skip
    return {"topics": topics}


def status_doc(cluster: Any, zookeeper_state: str, brokers: list[Any]) -> dict[str, Any]:
    """`cluster status -o json`; `brokers`: LocalCluster.status()."""
    state = cluster.state
    log_dirs = {b.id: b.log_dirs for b in state.brokers}
    return {
        "dir": str(cluster.dir),
        "zookeeper": {
            "connect": state.zookeeper.connect,
            "pid": state.zookeeper.pid,  # null: a ZooKeeper given with --zookeeper
            "state": zookeeper_state,
        },
        "bootstrap": cluster.bootstrap,
        "kafka_bootstrap": cluster.kafka_bootstrap,
        # every listener's, both doors: PLAINTEXT, or SASL_SSL for `cluster up --secure`
        "security_protocol": getattr(cluster, "security_protocol", "PLAINTEXT"),
        # every broker's schema registry URL (https on a secure cluster; [] when none)
        "schema_registry": list(getattr(cluster, "schema_registry_urls", [])),
        "brokers": [
            {
                "id": s.id,
                "pid": s.pid,
                "port": s.port,
                "kafka_port": s.kafka_port or None,
                "metrics_port": s.metrics_port or None,  # Prometheus, http://host:port/metrics
                # the schema registry, http://host:port (docs/schema-registry.md)
                "registry_port": getattr(s, "registry_port", 0) or None,
                "state": s.state,
                "controller": s.controller,
                "log_dirs": log_dirs.get(s.id, []),  # log.dirs, in order
            }
            for s in brokers
        ],
    }


def status_lines(doc: dict[str, Any]) -> list[str]:
    """The table form of `status_doc`: three lines about the cluster (four with a schema
    registry: its URLs), then one per broker."""
    zk = doc["zookeeper"]
    zk_pid = "given" if zk["pid"] is None else f"pid {zk['pid']}"
    rows = [
        (b["id"], b["pid"], b["port"], b["kafka_port"], b["metrics_port"], b["registry_port"],
         b["state"], "controller" if b["controller"] else "-", ",".join(b["log_dirs"]) or "-")
        for b in doc["brokers"]
    ]  # fmt: skip
    urls = doc.get("schema_registry") or []
    registry = [f"schema registry {','.join(urls)}"] if urls else []
    return [
        f"ZooKeeper {zk['connect']} ({zk_pid}): {zk['state']}",
        f"bootstrap {doc['bootstrap']}  ({doc['security_protocol']})",
        f"kafka bootstrap.servers={doc['kafka_bootstrap']}  ({doc['security_protocol']})",
        *registry,
        *table_lines(STATUS_COLUMNS, rows),
    ]
