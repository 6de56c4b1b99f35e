"""`odradek transactions list|describe|describe-producers|abort|find-hanging`, as Kafka's
`kafka-transactions.sh` (same subcommands, same column names; client/txn_admin.py does the work
through client.Admin; deploy/cli.py registers it).

    list [--state S]... [--producer-id N]... [--duration-filter MS]
        TransactionalId Coordinator ProducerId TransactionState
    describe --transactional-id ID
        CoordinatorId TransactionalId ProducerId ProducerEpoch TransactionState
        TransactionTimeoutMs CurrentTransactionStartTimeMs TransactionDurationMs TopicPartitions
    describe-producers --topic T --partition P [--broker-id N]
        ProducerId ProducerEpoch LatestCoordinatorEpoch LastSequence LastTimestamp
        CurrentTransactionStartOffset
    abort --topic T --partition P (--start-offset N
                                   | --producer-id N --producer-epoch N --coordinator-epoch N)
        one line saying which producer's transaction was aborted
    find-hanging [--broker-id N | --topic T [--partition P]] [--max-transaction-timeout MIN]
                 [--max-age MS]
        Topic Partition ProducerId ProducerEpoch CoordinatorEpoch StartOffset LastTimestamp
        Duration(min) TransactionalId Reason

`abort --start-offset` is Kafka's form: DescribeProducers finds the producer whose open
transaction starts at that offset, and its epoch and coordinator epoch go into the marker.
A value the broker reports as absent (no open transaction, no sequence) shows as "-". describe's
start time is that of the id's current or last transaction, as Kafka's coordinator keeps it
(absent only in Empty, before any began); its duration is now minus that start, as Kafka's tool
computes it, so a CompleteAbort/CompleteCommit id shows how long ago its last one began. Every
subcommand takes `-o json` (docs/cli.md); errors are one line, as for every command.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from typing import Any

from deploy.cli_common import admin_from_args, non_negative_int, positive_int
from deploy.cli_output import emit_json, output_options, print_lines, table_lines, wants_json
from protocol.errors import OdradekError, UsageError, for_code

LIST_COLUMNS = ("TransactionalId", "Coordinator", "ProducerId", "TransactionState")
DESCRIBE_COLUMNS = ("CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch",
                    "TransactionState", "TransactionTimeoutMs", "CurrentTransactionStartTimeMs",
                    "TransactionDurationMs", "TopicPartitions")  # fmt: skip
PRODUCER_COLUMNS = ("ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch", "LastSequence",
                    "LastTimestamp", "CurrentTransactionStartOffset")  # fmt: skip
HANGING_COLUMNS = ("Topic", "Partition", "ProducerId", "ProducerEpoch", "CoordinatorEpoch",
                   "StartOffset", "LastTimestamp", "Duration(min)", "TransactionalId",
                   "Reason")  # fmt: skip
DEFAULT_MAX_TIMEOUT_MIN = 15  # Kafka's transaction.max.timeout.ms, as its tool's default


class NoSuchTransactionError(OdradekError):
    """abort --start-offset: no open transaction starts there (exit code 1)."""

    name = "NO_SUCH_TRANSACTION"


def add_parser(sub: Any, client: argparse.ArgumentParser) -> None:
    p = sub.add_parser("transactions", help="list, describe, abort and find hanging transactions")
    tsub = p.add_subparsers(dest="transactions_command", metavar="ACTION", required=True)
    parents = [client, output_options(argparse.SUPPRESS)]
    lst = tsub.add_parser("list", parents=parents, help="every transactional id and its state")
    lst.add_argument("--state", action="append", type=state_name, metavar="STATE",
                     help="e.g. Ongoing (repeat for more)")  # fmt: skip
    lst.add_argument("--producer-id", action="append", type=non_negative_int, metavar="N")
    lst.add_argument("--duration-filter", type=non_negative_int, metavar="MS",
                     help="only transactions open longer than this")  # fmt: skip
    lst.set_defaults(func=cmd_list)
    desc = tsub.add_parser("describe", parents=parents, help="one id at its coordinator")
    desc.add_argument("--transactional-id", required=True, metavar="ID")
    desc.set_defaults(func=cmd_describe)
    prod = tsub.add_parser("describe-producers", parents=parents,
                           help="a partition's active producers")  # fmt: skip
    _partition_args(prod)
    prod.add_argument("--broker-id", type=non_negative_int, metavar="N",
                      help="ask this broker instead of the leader")  # fmt: skip
    prod.set_defaults(func=cmd_describe_producers)
    abort = tsub.add_parser("abort", parents=parents, help="end a partition's open transaction")
    _partition_args(abort)
    abort.add_argument("--start-offset", type=non_negative_int, metavar="N",
                       help="where its open transaction starts (describe-producers)")  # fmt: skip
    for flag in ("--producer-id", "--producer-epoch", "--coordinator-epoch"):
        abort.add_argument(flag, type=int, metavar="N")
    abort.set_defaults(func=cmd_abort)
    hang = tsub.add_parser("find-hanging", parents=parents, help="open transactions stuck open")
    hang.add_argument("--broker-id", type=non_negative_int, metavar="N",
                      help="only partitions with a replica on this broker")  # fmt: skip
    hang.add_argument("--topic", metavar="TOPIC")
    hang.add_argument("--partition", type=non_negative_int, metavar="P")
    hang.add_argument("--max-transaction-timeout", type=positive_int, metavar="MINUTES",
                      default=DEFAULT_MAX_TIMEOUT_MIN,
                      help="the brokers' transaction.max.timeout.ms in minutes (default 15); "
                           "older than this plus 5 minutes is hanging")  # fmt: skip
    hang.add_argument("--max-age", type=non_negative_int, metavar="MS",
                      help="instead: report any transaction open longer than this")  # fmt: skip
    hang.set_defaults(func=cmd_find_hanging)


def state_name(text: str) -> str:
    """argparse type: one of Kafka's transaction state names."""
    from client.txn_admin import STATES

    if text not in STATES:
        raise argparse.ArgumentTypeError(f"{text!r} is not a state ({', '.join(STATES)})")
    return text


def _partition_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--topic", required=True, metavar="TOPIC")
    p.add_argument("--partition", type=non_negative_int, required=True, metavar="P")


# ----- rows (pure) ---------------------------------------------------------------------------


def _absent(value: int) -> int | None:
    return None if value < 0 else value


def list_rows(listed: Sequence[Any]) -> list[tuple[Any, ...]]:
    return [(t.transactional_id, t.coordinator_id, t.producer_id, t.state) for t in listed]


def describe_row(d: Any, now_ms: int) -> tuple[Any, ...]:
    parts = ",".join(f"{tp.topic}-{tp.partition}" for tp in d.partitions)
    return (d.coordinator_id, d.transactional_id, d.producer_id, d.producer_epoch, d.state,
            d.timeout_ms, _absent(d.start_time_ms), d.duration_ms(now_ms),
            parts or None)  # fmt: skip


def producer_rows(producers: Sequence[Any]) -> list[tuple[Any, ...]]:
    return [(p.producer_id, p.producer_epoch, _absent(p.coordinator_epoch),
             _absent(p.last_sequence), _absent(p.last_timestamp),
             _absent(p.current_txn_start_offset))
            for p in sorted(producers, key=lambda p: p.producer_id)]  # fmt: skip


def hanging_rows(hanging: Sequence[Any]) -> list[tuple[Any, ...]]:
    return [(h.topic, h.partition, h.producer_id, h.producer_epoch, _absent(h.coordinator_epoch),
             h.start_offset, h.last_timestamp, h.duration_ms // 60_000, h.transactional_id,
             h.reason) for h in hanging]  # fmt: skip


def producer_for_offset(producers: Sequence[Any], start_offset: int, where: str) -> Any:
    """The active producer whose open transaction starts at `start_offset` (abort's Kafka form);
    NoSuchTransactionError naming the open ones when none does."""
    for p in producers:
        if p.current_txn_start_offset == start_offset:
            return p
    open_ones = [f"{p.current_txn_start_offset} (producer {p.producer_id})"
                 for p in producers if p.current_txn_start_offset >= 0]  # fmt: skip
    have = f"open ones start at {', '.join(open_ones)}" if open_ones else "none is open"
    raise NoSuchTransactionError(
        f"no open transaction on {where} starts at offset {start_offset} ({have})"
    )


def _doc(row: tuple[Any, ...], keys: Sequence[str]) -> dict[str, Any]:
    return dict(zip(keys, row, strict=True))


# ----- the commands --------------------------------------------------------------------------


def cmd_list(args: argparse.Namespace) -> int:
    with admin_from_args(args) as admin:
        listed = admin.list_transactions(args.state, args.producer_id, args.duration_filter)
    rows = list_rows(listed)
    if wants_json(args):
        keys = ("transactional_id", "coordinator", "producer_id", "state")
        emit_json({"transactions": [_doc(r, keys) for r in rows]})
    else:
        print_lines(table_lines(LIST_COLUMNS, rows))
    return 0


def cmd_describe(args: argparse.Namespace) -> int:
    with admin_from_args(args) as admin:
        desc = admin.describe_transactions([args.transactional_id])[args.transactional_id]
    row = describe_row(desc, int(time.time() * 1000))
    if wants_json(args):
        keys = ("coordinator_id", "transactional_id", "producer_id", "producer_epoch", "state",
                "timeout_ms", "start_time_ms", "duration_ms", "partitions")  # fmt: skip
        doc = _doc(row, keys)
        doc["partitions"] = [{"topic": tp.topic, "partition": tp.partition}
                             for tp in desc.partitions]  # fmt: skip
        emit_json(doc)
    else:
        print_lines(table_lines(DESCRIBE_COLUMNS, [row]))
    return 0


def cmd_describe_producers(args: argparse.Namespace) -> int:
    from client.types import TopicPartition

    tp = TopicPartition(args.topic, args.partition)
    with admin_from_args(args) as admin:
        producers = admin.describe_producers([tp], args.broker_id)[tp]
    rows = producer_rows(producers)
    if wants_json(args):
        keys = ("producer_id", "producer_epoch", "coordinator_epoch", "last_sequence",
                "last_timestamp", "current_txn_start_offset")  # fmt: skip
        emit_json({"topic": args.topic, "partition": args.partition,
                   "producers": [_doc(r, keys) for r in rows]})  # fmt: skip
    else:
        print_lines(table_lines(PRODUCER_COLUMNS, rows))
    return 0


def cmd_abort(args: argparse.Namespace) -> int:
    from client.types import TopicPartition

    given = [args.producer_id, args.producer_epoch, args.coordinator_epoch]
    named = [v is not None for v in given]
    if any(named) if args.start_offset is not None else not all(named):
        raise UsageError("give --start-offset N, or all of --producer-id, --producer-epoch and "
                         "--coordinator-epoch")  # fmt: skip
    where = f"{args.topic}-{args.partition}"
    with admin_from_args(args) as admin:
        if args.start_offset is not None:
            tp = TopicPartition(args.topic, args.partition)
            p = producer_for_offset(admin.describe_producers([tp])[tp], args.start_offset, where)
            given = [p.producer_id, p.producer_epoch, p.coordinator_epoch]
        admin.abort_transaction(args.topic, args.partition, *given)
    pid, epoch, coordinator_epoch = given
    if wants_json(args):
        emit_json({"topic": args.topic, "partition": args.partition, "producer_id": pid,
                   "producer_epoch": epoch, "coordinator_epoch": coordinator_epoch})  # fmt: skip
    else:
        print(f"Aborted the open transaction of producer {pid} (epoch {epoch}) on {where}.")
    return 0


def cmd_find_hanging(args: argparse.Namespace) -> int:
    from client.types import TopicPartition

    if args.partition is not None and args.topic is None:
        raise UsageError("--partition needs --topic")
    if args.topic is not None and args.broker_id is not None:
        raise UsageError("give --broker-id or --topic, not both")
    with admin_from_args(args) as admin:
        partitions = None
        if args.topic is not None:
            if args.partition is not None:
                partitions = [TopicPartition(args.topic, args.partition)]
            else:
                [d] = admin.describe_topics([args.topic])
                if d.error_code != 0:
                    raise for_code(d.error_code)(f"topic {args.topic!r}")
                partitions = [TopicPartition(args.topic, p.partition) for p in d.partitions]
        hanging = admin.find_hanging_transactions(
            partitions, args.broker_id, args.max_transaction_timeout * 60_000, args.max_age
        )
    rows = hanging_rows(hanging)
    if wants_json(args):
        keys = ("topic", "partition", "producer_id", "producer_epoch", "coordinator_epoch",
                "start_offset", "last_timestamp", "duration_min", "transactional_id",
                "reason")  # fmt: skip
        docs = [_doc(r, keys) | {"duration_ms": h.duration_ms}
                for r, h in zip(rows, hanging, strict=True)]  # fmt: skip
        emit_json({"hanging": docs})
    else:
        print_lines(table_lines(HANGING_COLUMNS, rows))
    return 0
