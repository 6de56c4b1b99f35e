"""Helpers every `odradek` subcommand module shares (deploy/cli.py, deploy/leaders_cli.py):
where the brokers are (--bootstrap, else the local cluster in --dir D, else $ODRADEK_BOOTSTRAP,
else the local cluster recorded in ./.odradek/cluster.json; both flags are accepted before the
command or after it, see `client_options`), how to reach them (`--command-config FILE`:
Kafka tools' client properties, client/command_config.py), an Admin client for them, argparse
number types, the partitions of the topic produce or consume is given (or its error), the
partition line `topics describe` prints (and why a partition has no leader), and progress lines
on stderr (results go to stdout) and the one error line a command ends with (`print_error`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from deploy.cluster import DEFAULT_DIR, LocalCluster
from protocol.errors import UsageError, for_code

PROG = "odradek"
BOOTSTRAP_ENV = "ODRADEK_BOOTSTRAP"


def progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def print_error(message: str) -> None:
    """A user's error as the one line on stderr every command ends with: `odradek: error: ...`."""
    print(f"{PROG}: error: {message}", file=sys.stderr, flush=True)


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


def client_options(default: Any) -> argparse.ArgumentParser:
    """--bootstrap and --dir, for the top-level parser (`default` None) and, as a parent, for
    every client command (`default` argparse.SUPPRESS: a flag not given after the command
    leaves the value given before it, where argparse would overwrite it with the default)."""
    options = argparse.ArgumentParser(add_help=False)
    options.add_argument(
        "--bootstrap", metavar="HOST:PORT[,...]", default=default,
        help=f"brokers to ask first (default: --dir, else ${BOOTSTRAP_ENV}, else ./{DEFAULT_DIR})",
    )  # fmt: skip
    options.add_argument(
        "--dir", type=Path, metavar="D", default=default,
        help=f"the local cluster in D (`{PROG} cluster up --dir D`): its brokers",
    )  # fmt: skip
    options.add_argument(
        "--command-config", type=Path, metavar="FILE", default=default,
        help="client properties as Kafka's tools take them (security.protocol, sasl.*, ssl.*)",
    )  # fmt: skip
    return options


def resolve_bootstrap(
    flag: str | None,
    environ: dict[str, str] | os._Environ[str],
    cwd: Path,
    cluster_dir: Path | None = None,
) -> str:
    """--bootstrap, else the local cluster in `cluster_dir` (--dir), else $ODRADEK_BOOTSTRAP,
    else the local cluster recorded under cwd."""
    if flag and cluster_dir is not None:
        raise UsageError("give --bootstrap or --dir, not both")
    if flag:
        return parse_bootstrap(flag)
    if cluster_dir is not None:
        if not (cluster_dir / "cluster.json").exists():
            raise UsageError(f"no local cluster in {cluster_dir} (`{PROG} cluster up --dir` it)")
        return _local_bootstrap(cluster_dir)
    if environ.get(BOOTSTRAP_ENV):
        return parse_bootstrap(environ[BOOTSTRAP_ENV])
    cluster_dir = cwd / DEFAULT_DIR
    if not (cluster_dir / "cluster.json").exists():
        raise UsageError(
            "no bootstrap address: pass --bootstrap HOST:PORT or --dir D, set "
            f"${BOOTSTRAP_ENV}, or start a local cluster here with `{PROG} cluster up`"
        )
    return _local_bootstrap(cluster_dir)


def _local_bootstrap(cluster_dir: Path) -> str:
    cluster = LocalCluster.open(cluster_dir)
    if all(state == "dead" for state in cluster.broker_states().values()):
        raise UsageError(
            f"the local cluster in {cluster_dir} is not running (`{PROG} cluster up` to start it)"
        )
    return cluster.bootstrap


def bootstrap_from_args(args: argparse.Namespace) -> str:
    flag, cluster_dir = getattr(args, "bootstrap", None), getattr(args, "dir", None)
    return resolve_bootstrap(flag, os.environ, Path.cwd(), cluster_dir)


def security_from_args(args: argparse.Namespace) -> dict[str, Any]:
    """The client's security keyword arguments from --command-config ({} without it; a
    UsageError saying which file to give when the arguments point at a local secure cluster,
    whose listeners would refuse a plaintext client)."""
    path = getattr(args, "command_config", None)
    if path is None:
        secure = _secure_local_dir(args)
        if secure is not None:
            raise UsageError(
                f"the local cluster in {secure} is secure (SASL_SSL): pass "
                f"--command-config {secure / 'client.properties'}"
            )
        return {}
    from client.command_config import load_command_config

    return load_command_config(path).client_options()


def _secure_local_dir(args: argparse.Namespace) -> Path | None:
    """The local cluster the arguments point at (--dir, else ./.odradek when neither --bootstrap
    nor $ODRADEK_BOOTSTRAP says otherwise), when it was started with --secure."""
    if getattr(args, "bootstrap", None):
        return None
    where = getattr(args, "dir", None)
    if where is None:
        if os.environ.get(BOOTSTRAP_ENV):
            return None
        where = Path.cwd() / DEFAULT_DIR
    try:
        state = json.loads((Path(where) / "cluster.json").read_text())
    except (OSError, ValueError):
        return None
    return Path(where) if isinstance(state, dict) and state.get("secure") else None


def admin_from_args(args: argparse.Namespace) -> Any:
    """A `client.Admin` for the brokers the arguments point at (use it with `with`)."""
    bootstrap = bootstrap_from_args(args)
    from client import Admin

    return Admin(bootstrap_servers=bootstrap, **security_from_args(args))


TOPIC_GRACE_S = 3.0  # a topic created a moment ago may not be in every broker's metadata yet


def existing_partitions(args: argparse.Namespace, grace_s: float = 0.0) -> list[int]:
    """For produce and consume: the partitions of args.topic, or the topic's error at once
    (after `grace_s` of asking again): a producer would wait max_block_ms (60 s) for a topic
    that is not there, and the native door never creates one. A UsageError when
    args.partition is not one of them."""
    deadline = time.monotonic() + grace_s
    with admin_from_args(args) as admin:
        while True:
            (description,) = admin.describe_topics([args.topic])
            if not description.error_code or time.monotonic() >= deadline:
                break
            time.sleep(0.2)
    if description.error_code:
        raise for_code(description.error_code)(f"topic {args.topic!r}")
    partitions = sorted(p.partition for p in description.partitions)
    if args.partition is not None and args.partition not in partitions:
        raise UsageError(f"topic {args.topic!r} has no partition {args.partition}")
    return partitions


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


UNCLEAN_CONFIG = "unclean.leader.election.enable"


def leaderless_notes(admin: Any, descriptions: list[Any], configs: dict[str, Any]) -> list[str]:
    """For `topics describe`: one sentence per partition without a leader, saying why (the live
    brokers come from one more Metadata request, made only when some partition has no leader).
    `configs`: describe_configs' answer, {topic: {name: ConfigEntry}}."""
    offline = [(d, p) for d in descriptions for p in d.partitions if p.leader < 0]
    if not offline:
        return []
    from client.explain import why_no_leader

    live = admin.describe_cluster().brokers
    notes = []
    for d, p in sorted(offline, key=lambda dp: (dp[0].name, dp[1].partition)):
        entry = configs.get(d.name, {}).get(UNCLEAN_CONFIG)
        unclean = None if entry is None else str(entry.value).lower() == "true"
        name = f"{d.name}-{p.partition}"
        notes.append(why_no_leader(name, p.replicas, p.isr, live, unclean))
    return notes


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
