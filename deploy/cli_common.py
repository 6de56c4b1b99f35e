"""Helpers every `odradek` subcommand module shares (deploy/cli.py, deploy/leaders_cli.py):
where the brokers are (--bootstrap, else $ODRADEK_BOOTSTRAP, else the local cluster recorded
in ./.odradek/cluster.json), an Admin client for them, argparse number types, the partition
line `topics describe` prints, and progress lines on stderr (results go to stdout).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from deploy.cluster import DEFAULT_DIR, LocalCluster
from protocol.errors import UsageError

PROG = "odradek"
BOOTSTRAP_ENV = "ODRADEK_BOOTSTRAP"


def progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def parse_bootstrap(servers: str) -> str:
    """Check "host:port[,host:port...]" and return it normalised; UsageError when malformed."""
    out = []
    for item in (i.strip() for i in servers.split(",")):
        if not item:
            continue
        host, sep, port = item.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise UsageError(f"bootstrap address {item!r} is not HOST:PORT")
        out.append(f"{host}:{int(port)}")
    if not out:
        raise UsageError("the bootstrap address is empty")
    return ",".join(out)


def resolve_bootstrap(
    flag: str | None, environ: dict[str, str] | os._Environ[str], cwd: Path
) -> str:
    """--bootstrap, else $ODRADEK_BOOTSTRAP, else the local cluster recorded under cwd."""
    if flag:
        return parse_bootstrap(flag)
    if environ.get(BOOTSTRAP_ENV):
        return parse_bootstrap(environ[BOOTSTRAP_ENV])
    cluster_dir = cwd / DEFAULT_DIR
    if not (cluster_dir / "cluster.json").exists():
        raise UsageError(
            "no bootstrap address: pass --bootstrap HOST:PORT, set $ODRADEK_BOOTSTRAP, "
            f"or start a local cluster here with `{PROG} cluster up`"
        )
    cluster = LocalCluster.open(cluster_dir)
    if all(state == "dead" for state in cluster.broker_states().values()):
        raise UsageError(
            f"the local cluster in {cluster_dir} is not running (`{PROG} cluster up` to start it)"
        )
    return cluster.bootstrap


def bootstrap_from_args(args: argparse.Namespace) -> str:
    return resolve_bootstrap(args.bootstrap, os.environ, Path.cwd())


def admin_from_args(args: argparse.Namespace) -> Any:
    """A `client.Admin` for the brokers the arguments point at (use it with `with`)."""
    bootstrap = bootstrap_from_args(args)
    from client import Admin

    return Admin(bootstrap_servers=bootstrap)


def format_partition(topic: str, p: Any) -> str:
    """Seed 004's line, plus a marker for an offline or under-replicated partition."""
    leader = "none" if p.leader < 0 else str(p.leader)
    line = (
        f"Topic: {topic} Partition: {p.partition} Leader: {leader} "
        f"Replicas: {','.join(map(str, p.replicas))} Isr: {','.join(map(str, p.isr))}"
    )
    if p.leader < 0:
        line += "  (offline)"
    elif len(p.isr) < len(p.replicas):
        line += "  (under-replicated)"
    return line


def positive_int(text: str) -> int:
    """argparse type: an integer > 0."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be positive")
    return value


def non_negative_int(text: str) -> int:
    """argparse type: an integer >= 0."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} must not be negative")
    return value
