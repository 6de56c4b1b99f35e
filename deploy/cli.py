"""The `odradek` command: run a broker, a local mini-cluster, topics, produce and consume.

    odradek broker --id N --port P --log-dir D --zookeeper HOST:PORT [--config FILE]
    odradek cluster up|status|kill ID|start ID|down      (deploy/cluster.py does the work)
    odradek topics create|list|describe|delete           (deploy/topics_cli.py; list and
                                                          describe show internal topics
                                                          unless --exclude-internal)
    odradek topics elect-leaders|reassign                (deploy/leaders_cli.py)
    odradek topics delete-records                        (deploy/records_cli.py)
    odradek topics alter-config|add-partitions           (deploy/topics_alter_cli.py)
    odradek produce TOPIC   one record per stdin line    (deploy/produce_cli.py)
    odradek consume TOPIC   one record per stdout line   (deploy/consume_cli.py; --group G
                                                          joins G; --isolation-level
                                                          read_committed)
    odradek groups list|describe|reset-offsets|delete    (deploy/cli_groups.py)
    odradek share-groups list|describe|delete            (deploy/cli_share_groups.py)
    odradek schemas list|get|register|delete|compatibility|config  (deploy/schemas_cli.py)
    odradek configs describe --topic T | --broker N      (deploy/configs_cli.py)
    odradek acls add|list|remove  kafka-acls.sh's flags  (deploy/acls_cli.py)
    odradek quotas alter|describe --entity-type users|clients ...  (deploy/quotas_cli.py)
    odradek users add|list|remove USER [--mechanism M]   (deploy/users_cli.py: SCRAM users)
    odradek transactions list|describe|describe-producers|abort|find-hanging
                                                         (deploy/transactions_cli.py)
    odradek bench produce|consume|latency                (deploy/perf.py)
    odradek chaos run|faults|check                       (deploy/chaos/)

Each command group's module registers its subcommands on the parser (`add_parser`) and holds
their handlers; this one keeps the parser's skeleton, the broker, cluster and bench commands,
and main() with the error handling every command shares.

`topics describe` prints seed 004's listing on stdout (labels aligned) and, on stderr, why
each partition without a leader has none (its replicas that are down, unclean election off or
on). Every listing command takes `-o json` (one JSON document, docs/cli.md); long operations
(produce, consume, `cluster up`) draw a progress bar on stderr when it is a terminal or
`--progress` is given (deploy/cli_output.py), and print plain lines otherwise. produce and
consume say at once what they wait for (a partition without a leader, NOT_ENOUGH_REPLICAS:
deploy/wait_notes.py), and end in an error when it never came.

`main(argv)` parses with argparse, runs one handler and returns the exit code. Every error a user
can cause ends as one line on stderr, `odradek: error: ...`, and a non-zero code: 2 for misuse
(argparse's own errors and `UsageError`), 1 for a failure (an `OdradekError` from a broker, an
`OSError`), 130 for Ctrl-C. Progress of long operations goes to stderr, results to stdout.

The commands that talk to brokers find them by `--bootstrap HOST:PORT[,...]`, else the local
cluster in `--dir D`, else $ODRADEK_BOOTSTRAP, else the cluster `odradek cluster up` recorded in
./.odradek/cluster.json. `--bootstrap` and `--dir` go before the command or after it
(`odradek --bootstrap X topics list`, `odradek topics list --bootstrap X`), as `--dir` does for
the cluster commands.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from deploy import (
    acls_cli,
    cli_groups,
    cli_share_groups,
    cli_views,
    configs_cli,
    consume_cli,
    produce_cli,
    quotas_cli,
    schemas_cli,
    topics_cli,
    transactions_cli,
    users_cli,
)
from deploy.chaos import cli as chaos_cli
from deploy.cli_common import (
    PROG,
    bootstrap_from_args,
    client_options,
    non_negative_int,
    positive_int,
    print_error,
    progress,
)
from deploy.cli_output import (
    done_text,
    emit_json,
    meter,
    output_options,
    print_lines,
    progress_options,
    wants_json,
)
from deploy.cli_parser import Parser
from deploy.cluster import DEFAULT_DIR, DEFAULT_SESSION_TIMEOUT_MS, MAX_BROKERS, LocalCluster
from deploy.console import cli as console_cli
from protocol.errors import OdradekError, UsageError

DEBUG_ENV = "ODRADEK_DEBUG"


# ----- the parser ----------------------------------------------------------------------------


_EXAMPLES = """\
a first session:
  odradek cluster up                          # ZooKeeper + 3 brokers under ./.odradek
  odradek topics create events --partitions 3
  printf 'k1:hello\\nk2:world\\n' | odradek produce events --key-separator :
  odradek consume events --from-beginning --max-messages 2 --print-key
  odradek cluster down
"""


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog=PROG,
        description="A Kafka-like distributed log.",
        epilog=_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    for action in client_options(default=None)._actions:
        parser._add_action(action)  # the same flags before the command
    for action in output_options(None)._actions + progress_options(None)._actions:
        parser._add_action(action)  # and these: -o json topics list, --progress produce T
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    client = client_options(default=argparse.SUPPRESS)
    _add_broker_parser(sub)
    _add_cluster_parser(sub)
    topics_cli.add_parser(sub, client)
    produce_cli.add_parser(sub, client)
    consume_cli.add_parser(sub, client)
    cli_groups.add_parser(sub, client, bootstrap_from_args)
    cli_share_groups.add_parser(sub, client, bootstrap_from_args)
    schemas_cli.add_parser(sub, client)
    configs_cli.add_parser(sub, client)
    acls_cli.add_parser(sub, client)
    quotas_cli.add_parser(sub, client)
    transactions_cli.add_parser(sub, client)
    users_cli.add_parser(sub, client)
    _add_bench_parser(sub)
    chaos_cli.add_parser(sub)
    console_cli.add_parser(sub, client, bootstrap_from_args)
    return parser


def _add_broker_parser(sub: Any) -> None:
    p = sub.add_parser("broker", help="run one broker in the foreground")
    p.add_argument("--id", type=non_negative_int, help="broker id (small integer)")
    p.add_argument("--port", type=non_negative_int, help="port to listen on")
    p.add_argument(
        "--listeners", metavar="PLAINTEXT://HOST:PORT", help="the Kafka-protocol listener"
    )
    p.add_argument(
        "--log-dir", action="append", metavar="DIR[,DIR...]",
        help="where the partitions live; repeat it (or separate with commas) for several "
        "log directories (Kafka's log.dirs)",
    )  # fmt: skip
    p.add_argument(
        "--metrics-port", type=non_negative_int, help="serve Prometheus metrics here (0: off)"
    )
    p.add_argument(
        "--schema-registry-port", type=non_negative_int,
        help="serve Confluent's Schema Registry API here (0: off)",
    )  # fmt: skip
    p.add_argument("--zookeeper", metavar="HOST:PORT[/chroot]", help="ZooKeeper connect string")
    p.add_argument("--config", type=Path, metavar="FILE", help="broker settings (TOML)")
    p.set_defaults(func=cmd_broker)


def _add_cluster_parser(sub: Any) -> None:
    p = sub.add_parser("cluster", help="a local ZooKeeper plus brokers, in the background")
    csub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    where = argparse.ArgumentParser(add_help=False)
    where.add_argument(  # SUPPRESS: keeps a --dir given before `cluster`
        "--dir", type=Path, default=argparse.SUPPRESS, help=f"cluster directory ({DEFAULT_DIR})"
    )

    bar = progress_options(argparse.SUPPRESS)
    up = csub.add_parser("up", parents=[where, bar], help="start ZooKeeper and the brokers")
    up.add_argument("--brokers", type=positive_int, default=3, help=f"1..{MAX_BROKERS} (default 3)")
    up.add_argument("--zookeeper", metavar="HOST:PORT[/chroot]", help="use this ZooKeeper")
    up.add_argument("--base-port", type=positive_int, help="broker ports from here (default: free)")
    up.add_argument(
        "--session-timeout-ms", type=positive_int, default=DEFAULT_SESSION_TIMEOUT_MS,
        help="ZooKeeper session timeout of the brokers",
    )  # fmt: skip
    up.add_argument(
        "--netns", action="store_true",
        help="each broker in its own network namespace, for network faults (root)",
    )  # fmt: skip
    up.add_argument(
        "--tmpfs-mb", type=positive_int, metavar="N",
        help="each broker's log dir on a tmpfs of N MiB, for disk-full faults (root)",
    )  # fmt: skip
    up.add_argument(
        "--log-dirs-per-broker", type=positive_int, default=1, metavar="N",
        help="each broker's log.dirs: N directories (JBOD; default 1), to try "
        "AlterReplicaLogDirs",
    )  # fmt: skip
    up.add_argument(
        "--secure", action="store_true",
        help="SASL_SSL + SCRAM-SHA-512 on every listener, its own CA, ACLs on, an admin user; "
        "prints a client.properties",
    )  # fmt: skip
    console_cli.add_up_options(up)  # --console-port, --no-console
    up.set_defaults(func=cmd_cluster_up)

    listing = output_options(argparse.SUPPRESS)
    status = csub.add_parser("status", parents=[where, listing], help="each broker's state")
    status.set_defaults(func=cmd_cluster_status)

    kill = csub.add_parser("kill", parents=[where], help="kill, stop or pause one broker")
    kill.add_argument("id", type=non_negative_int, metavar="ID")
    kill.add_argument("--signal", type=str.upper, choices=["KILL", "TERM", "STOP"], default="KILL")
    kill.set_defaults(func=cmd_cluster_kill)

    start = csub.add_parser("start", parents=[where], help="restart or resume one broker")
    start.add_argument("id", type=non_negative_int, metavar="ID")
    start.set_defaults(func=cmd_cluster_start)

    down = csub.add_parser("down", parents=[where], help="stop everything")
    down.add_argument("--purge", action="store_true", help="also delete the cluster directory")
    down.set_defaults(func=cmd_cluster_down)


def _add_bench_parser(sub: Any) -> None:
    # Listed here for `odradek --help`; main() hands `bench ...` to bench_parser(), built only
    # then, so that other commands do not import the load generators (deploy/perf.py).
    sub.add_parser("bench", help="load generators: produce, consume, latency", add_help=False)


def bench_parser() -> argparse.ArgumentParser:
    """`odradek bench MODE ...`: deploy/perf.py's arguments, plus --bootstrap on every mode."""
    from deploy import perf

    parser = Parser(
        prog=f"{PROG} bench", description="Load generators (kafka-producer-perf-test style)."
    )
    perf.add_arguments(parser)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for mode_parser in action.choices.values():
                mode_parser.add_argument("--bootstrap", metavar="HOST:PORT[,...]")
                mode_parser.add_argument(
                    "--command-config", type=Path, metavar="FILE",
                    help="client properties as Kafka's tools take them (security.protocol, ...)",
                )  # fmt: skip
    parser.set_defaults(func=cmd_bench)
    return parser


# ----- handlers --------------------------------------------------------------------------------


def cmd_broker(args: argparse.Namespace) -> int:
    from broker.config import load_config
    from broker.daemon import run_forever

    config = load_config(
        args.config,
        broker_id=args.id,
        port=args.port,
        **log_dir_settings(args.log_dir),
        zookeeper=args.zookeeper,
        listeners=args.listeners,
        metrics_port=args.metrics_port,
        schema_registry_port=args.schema_registry_port,
    )
    return run_forever(config)


def log_dir_settings(given: list[str] | None) -> dict[str, Any]:
    """--log-dir, repeated or comma-separated: log_dir for one directory, else log_dirs."""
    dirs = [d for value in given or () for d in value.split(",") if d]
    if not dirs:
        return {}
    return {"log_dir": Path(dirs[0])} if len(dirs) == 1 else {"log_dirs": dirs}


def cluster_dir(args: argparse.Namespace) -> Path:
    """--dir (before or after `cluster`), else ./.odradek."""
    return args.dir if getattr(args, "dir", None) is not None else Path(DEFAULT_DIR)


def cmd_cluster_up(args: argparse.Namespace) -> int:
    cluster = LocalCluster(
        cluster_dir(args),
        brokers=args.brokers,
        zookeeper=args.zookeeper,
        base_port=args.base_port,
        session_timeout_ms=args.session_timeout_ms,
        progress=progress,
        network="netns" if args.netns else "loopback",
        tmpfs_mb=args.tmpfs_mb or 0,
        secure=args.secure,
        log_dirs_per_broker=args.log_dirs_per_broker,
    )
    with meter(args, "cluster up", total=args.brokers) as bar:
        if bar.live:  # counts on the bar instead of "waiting for brokers" lines

            def waiting(registered: int, ready: int, brokers: int) -> None:
                counts = f"{done_text(registered, brokers, 'registered')}, {ready} ready"
                bar.update(ready, brokers, counts)

            cluster.on_waiting = waiting
        bootstrap = cluster.up()
    progress(f"cluster is up in {cluster.dir}; bootstrap address (odradek clients):")
    print(bootstrap, flush=True)
    progress("Kafka clients (kcat, kafka-python, confluent-kafka, aiokafka):")
    print(f"bootstrap.servers={cluster.kafka_bootstrap}", flush=True)
    if cluster.schema_registry_urls:
        progress("Schema registry (confluent_kafka.schema_registry's url):")
        print(",".join(cluster.schema_registry_urls), flush=True)
    if cluster.secure:
        _print_secure_configs(cluster)
    console_cli.start_beside(cluster, args)  # prints the console's URL
    return 0


def _print_secure_configs(cluster: LocalCluster) -> None:
    """The admin's client.properties (also in the cluster dir) and the same as Python."""
    from deploy.cluster_security import SecureLayout

    layout = cluster.secure_layout
    assert isinstance(layout, SecureLayout)
    progress(f"SASL_SSL + SCRAM-SHA-512; the admin's client properties ({layout.properties_path}")
    progress("for --command-config of odradek and kafka-*.sh):")
    print(layout.properties_path.read_text(), flush=True)
    progress("Python (confluent-kafka, and odradek's native client):")
    registry = ",".join(cluster.schema_registry_urls)
    print(layout.python_snippet(cluster.kafka_bootstrap, cluster.bootstrap, registry), flush=True)


def cmd_cluster_status(args: argparse.Namespace) -> int:
    cluster = LocalCluster.open(cluster_dir(args))
    assert cluster.state is not None
    doc = cli_views.status_doc(cluster, cluster.zookeeper_state(), cluster.status())
    if wants_json(args):
        emit_json(doc)
    else:
        print_lines(cli_views.status_lines(doc))
    return 0


def cmd_cluster_kill(args: argparse.Namespace) -> int:
    cluster = LocalCluster.open(cluster_dir(args), progress=progress)
    cluster.kill(args.id, args.signal, reload=True)  # the PID as it is once we hold the lock
    return 0


def cmd_cluster_start(args: argparse.Namespace) -> int:
    LocalCluster.open(cluster_dir(args), progress=progress).start(args.id)
    return 0


def cmd_cluster_down(args: argparse.Namespace) -> int:
    if args.purge and not (cluster_dir(args) / "cluster.json").exists():
        cluster = LocalCluster(cluster_dir(args), progress=progress)
    else:
        cluster = LocalCluster.open(cluster_dir(args), progress=progress)
    cluster.down(purge=args.purge)
    progress("cluster is down")
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    from deploy import perf

    args.bootstrap = bootstrap_from_args(args)
    return perf.run(args)


# ----- entry point -------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv[:1] == ["bench"]:
            args = bench_parser().parse_args(argv[1:])
        else:
            args = build_parser().parse_args(argv)
    except ImportError as exc:  # a broken install: say which module is missing
        print_error(f"cannot load a module the command needs: {exc}")
        return 1
    try:
        return int(args.func(args) or 0)
    except UsageError as exc:
        print_error(exc.message)
        return 2
    except OdradekError as exc:
        print_error(str(exc))
        return 1
    except BrokenPipeError:
        # stdout was closed (`odradek consume ... | head`): stop quietly, and keep Python from
        # complaining when it flushes stdout at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except OSError as exc:
        where = f": {exc.filename}" if exc.filename else ""
        print_error(f"{exc.strerror or exc}{where}")
        return 1
    except KeyboardInterrupt:
        print_error("interrupted")
        return 130
    except Exception as exc:  # a bug: still one line, unless asked for the traceback
        if os.environ.get(DEBUG_ENV):
            traceback.print_exc()
        print_error(f"internal error: {type(exc).__name__}: {exc} (set {DEBUG_ENV}=1 for details)")
        return 1


if __name__ == "__main__":
    sys.exit(main())
