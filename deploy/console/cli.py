"""`odradek console [--dir D | --bootstrap HOST:PORT,...] [--host H] [--port P]
[--hanging-after-ms MS] [--command-config FILE] [--registry URL[,URL...]]`.

Serves the console (server.py) in the foreground until Ctrl-C or SIGTERM. With --dir (or, given
neither flag nor $ODRADEK_BOOTSTRAP, the local cluster in ./.odradek) it is a local cluster's
console: it shows each broker's process state and offers kill, pause and start. It listens on
127.0.0.1 unless told otherwise; the controls stay off on another address unless
--allow-control is given. With --command-config (a secured cluster's client properties; `cluster
up --secure` passes its admin's) its page asks for a login, one of the cluster's own SASL
users (server.py, auth.py), and the console reads the cluster as that user, over the user's own
SASL session (views.py); the file lends only the TLS and SASL settings. The schema registry
(its subjects, and the browser's decoding of framed values) is --registry, else the local
cluster's.
"""

from __future__ import annotations

import argparse
import asyncio
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from deploy.cli_common import BOOTSTRAP_ENV, non_negative_int
from deploy.cluster import DEFAULT_DIR, DEFAULT_HOST

DEFAULT_PORT = 8780


def add_parser(sub: Any, client: argparse.ArgumentParser, bootstrap: Callable[..., str]) -> None:
    p = sub.add_parser("console", parents=[client], help="a live web console of the cluster")
    p.add_argument("--host", default=DEFAULT_HOST, help=f"address to listen on ({DEFAULT_HOST})")
    p.add_argument("--port", type=non_negative_int, default=DEFAULT_PORT,
                   help=f"port to listen on ({DEFAULT_PORT}; 0: any free port)")  # fmt: skip
    p.add_argument("--interval-ms", type=non_negative_int, default=400,
                   help="how often the snapshot is refreshed (400)")  # fmt: skip
    p.add_argument("--hanging-after-ms", type=non_negative_int, metavar="MS",
                   help="list a transaction as hanging once open this long (default: Kafka's "
                        "15 minutes max timeout plus 5)")  # fmt: skip
    p.add_argument("--registry", metavar="URL[,URL...]",
                   help="the schema registry (default: the local cluster's)")  # fmt: skip
    p.add_argument(
        "--allow-control",
        action="store_true",
        help="offer kill/pause/start even when listening on a non-loopback address",
    )
    p.set_defaults(func=lambda a: cmd_console(a, bootstrap))


def local_dir(args: argparse.Namespace) -> Path | None:
    """The local cluster the console controls: --dir, else ./.odradek when nothing else
    points elsewhere."""
    if getattr(args, "dir", None) is not None:
        return Path(args.dir).resolve()
    if getattr(args, "bootstrap", None) or os.environ.get(BOOTSTRAP_ENV):
        return None
    here = Path(DEFAULT_DIR)
    return here.resolve() if (here / "cluster.json").exists() else None


def cmd_console(args: argparse.Namespace, bootstrap: Callable[..., str]) -> int:
    from deploy.cli_common import security_from_args
    from deploy.console.server import serve

    servers = bootstrap(args)
    interval_s = max(args.interval_ms, 50) / 1000
    asyncio.run(serve(servers, local_dir(args), args.host, args.port,
                      allow_control=args.allow_control, interval_s=interval_s,
                      hanging_max_age_ms=args.hanging_after_ms,
                      security=security_from_args(args),
                      registry_urls=registry_urls(args)))  # fmt: skip
    return 0


def registry_urls(args: argparse.Namespace) -> list[str]:
    """--registry, else the local cluster's registries (none: no schema pages)."""
    if args.registry:
        return [u.strip().rstrip("/") for u in args.registry.split(",") if u.strip()]
    where = local_dir(args)
    if where is None:
        return []
    from deploy.cluster import LocalCluster

    return LocalCluster.open(where).schema_registry_urls


def add_up_options(up: argparse.ArgumentParser) -> None:
    """`cluster up`'s console options."""
    up.add_argument("--console-port", type=non_negative_int, default=0,
                    help="the console's port (default: a free one)")  # fmt: skip
    up.add_argument("--no-console", action="store_true", help="do not start the web console")


def start_beside(cluster: Any, args: argparse.Namespace) -> None:
    """After `cluster up`: start the console in the background and print its URL (stdout)."""
    if getattr(args, "no_console", False):
        return
    from deploy.cli_common import progress
    from deploy.cluster import ClusterError
    from deploy.console.launch import start_console

    try:
        url = start_console(cluster, getattr(args, "console_port", 0) or 0)
    except ClusterError as exc:  # the cluster is up all the same: say so and go on
        progress(f"the web console did not start: {exc.message}")
        return
    progress("web console (stopped by `odradek cluster down`):")
    print(f"console={url}", flush=True)
