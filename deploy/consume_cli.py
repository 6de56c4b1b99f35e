"""`odradek consume TOPIC`: one record per stdout line (client.Consumer does the work;
deploy/cli.py registers the command through `add_parser`).

Without --group the consumer is assigned the topic's partitions (or --partition's) and starts at
the end, the oldest record (--from-beginning) or --offset; with --group G it subscribes and the
coordinator hands out the partitions, the group's committed offsets saying where to start
(auto-committed every second). `_consume_loop` polls in steps of POLL_STEP_MS and prints until
--max-messages, --timeout-ms without a record, or Ctrl-C; a bar of the records read and their
rate goes to stderr on a terminal or with --progress, and so does what the consumer waits for
(a partition without a leader, deploy/wait_notes.py). A Ctrl-C while a polled batch is printed
is held back until the batch is printed and counted (`_CtrlCHeld`). The summary line
("Processed a total of N messages") goes to stderr; the command ends in an error when it read
less than asked and a partition it was to read still has no leader.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from deploy.cli_common import (
    bootstrap_from_args,
    existing_partitions,
    non_negative_int,
    positive_int,
    progress,
    security_from_args,
)
from deploy.cli_lines import format_record
from deploy.cli_output import NullMeter, RateCounter, meter, progress_options
from deploy.wait_notes import WaitNotes, on_stderr, unread_error
from protocol.errors import OdradekError, UsageError

POLL_STEP_MS = 500
ISOLATION_LEVELS = ("read_uncommitted", "read_committed")  # the default first, as Kafka's


def add_parser(sub: Any, client: argparse.ArgumentParser) -> None:
    bar = progress_options(argparse.SUPPRESS)
    p = sub.add_parser("consume", parents=[client, bar], help="print one record per line")
    p.add_argument("topic", metavar="TOPIC")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--from-beginning", action="store_true", help="start at the oldest record")
    where.add_argument("--offset", type=non_negative_int, help="start here (needs --partition)")
    p.add_argument("--partition", type=non_negative_int, help="only this partition (default: all)")
    p.add_argument("--max-messages", type=positive_int, help="stop after this many records")
    p.add_argument("--timeout-ms", type=positive_int, help="stop after this long without a record")
    p.add_argument("--print-key", action="store_true", help="print KEY<TAB>VALUE")
    p.add_argument("--print-offset", action="store_true", help="prefix PARTITION:OFFSET<TAB>")
    p.add_argument("--group", metavar="G", help="join consumer group G (commits its offsets)")
    p.add_argument("--session-timeout-ms", type=positive_int, default=10_000, help="with --group")
    p.add_argument(
        "--isolation-level", choices=ISOLATION_LEVELS, default=ISOLATION_LEVELS[0],
        help="read_committed: only committed transactions' records, up to the last stable "
        "offset (kafka-console-consumer's flag; default read_uncommitted)",
    )  # fmt: skip
    p.set_defaults(func=cmd_consume)


def _assign(consumer: Any, args: argparse.Namespace, partitions: list[int]) -> None:
    from client.types import TopicPartition

    chosen = [args.partition] if args.partition is not None else partitions
    tps = [TopicPartition(args.topic, p) for p in chosen]
    consumer.assign(tps)
    if args.offset is not None:
        consumer.seek(tps[0], args.offset)
    elif args.from_beginning:
        consumer.seek_to_beginning(*tps)
    else:
        consumer.seek_to_end(*tps)


def cmd_consume(args: argparse.Namespace) -> int:
    if args.group is not None:
        return _consume_group(args)
    if args.offset is not None and args.partition is None:
        raise UsageError("--offset needs --partition")
    bootstrap = bootstrap_from_args(args)
    from client import Consumer

    partitions = existing_partitions(args)
    with Consumer(
        bootstrap_servers=bootstrap, isolation_level=args.isolation_level,
        **security_from_args(args),
    ) as consumer:  # fmt: skip
        _assign(consumer, args, partitions)
        return _print_records(consumer, args)


def _consume_group(args: argparse.Namespace) -> int:
    """--group: subscribe; partitions come from the coordinator, offsets from the group."""
    if args.partition is not None or args.offset is not None:
        raise UsageError("--group cannot be combined with --partition or --offset")
    from client import Consumer

    reset = "earliest" if args.from_beginning else "latest"
    heartbeat_ms = max(1, args.session_timeout_ms // 3)
    with Consumer(
        bootstrap_servers=bootstrap_from_args(args), group_id=args.group, auto_offset_reset=reset,
        session_timeout_ms=args.session_timeout_ms, heartbeat_interval_ms=heartbeat_ms,
        auto_commit_interval_ms=1000, isolation_level=args.isolation_level,
        **security_from_args(args),
    ) as consumer:  # fmt: skip
        consumer.subscribe([args.topic])
        return _print_records(consumer, args)


def _print_records(consumer: Any, args: argparse.Namespace) -> int:
    """Print what `consumer` reads until the loop ends (or Ctrl-C), then the count; raise the
    error of a partition left unread (no leader) after the count, as the last line."""
    count, unread = 0, None
    try:
        count, unread = _consume_loop(consumer, args, lambda r: print(r, flush=False))
    except KeyboardInterrupt:
        pass
    finally:
        sys.stdout.flush()
    progress(f"Processed a total of {count} messages")
    if unread is not None:
        raise unread
    return 0


def _consume_loop(
    consumer: Any, args: argparse.Namespace, emit: Callable[[str], None]
) -> tuple[int, OdradekError | None]:
    """Poll and print until --max-messages, or --timeout-ms without a record (or Ctrl-C); a bar
    of the records read (of --max-messages) and their rate on a terminal or with --progress,
    and what it waits for meanwhile (a partition without a leader). Returns the count and, when
    it ended short with partitions still leaderless, the error to end with."""
    until = "polling until Ctrl-C"
    if args.timeout_ms is not None:
        until = f"polling until --timeout-ms {args.timeout_ms} passes without a record"
    with meter(args, f"consuming {args.topic}", args.max_messages) as bar:
        notes = on_stderr(until, bar)
        try:
            count = _poll_loop(consumer, args, emit, bar, notes)
        finally:
            notes.clear()
    if args.max_messages is not None and count >= args.max_messages:
        return count, None
    return count, unread_error(notes.reasons and consumer.waiting())


def _poll_loop(
    consumer: Any, args: argparse.Namespace, emit: Callable[[str], None], bar: NullMeter,
    notes: WaitNotes | None = None,
) -> int:  # fmt: skip
    count = 0
    read = RateCounter("records")
    last_record = time.monotonic()
    try:  # Ctrl-C ends the loop, and the summary still counts what was printed
        while args.max_messages is None or count < args.max_messages:
            wait_ms = POLL_STEP_MS
            if args.timeout_ms is not None:
                left_ms = args.timeout_ms - (time.monotonic() - last_record) * 1000
                if left_ms <= 0:
                    break
                wait_ms = int(min(wait_ms, max(left_ms, 1)))
            limit = None if args.max_messages is None else args.max_messages - count
            records = _records(consumer.poll(timeout_ms=wait_ms, max_records=limit))
            if notes is not None and notes.due():
                notes.show(consumer.waiting())
            if not records:
                continue
            if notes is not None:
                notes.make_room()  # a record printed must not land on the line in place
            with _CtrlCHeld():  # a record written is a record counted
                for record in records[:limit]:
                    emit(format_record(record, args.print_key, args.print_offset))
                    count += 1
                sys.stdout.flush()
            last_record = time.monotonic()
            if bar.live:
                read.add(len(records[:limit]))
                bar.update(count, args.max_messages, read.text())
    except KeyboardInterrupt:
        pass
    return count


class _CtrlCHeld:
    """Ctrl-C held back while a polled batch is printed and counted, and raised once it is: with
    stdout unbuffered (PYTHONUNBUFFERED), a KeyboardInterrupt between a record's write and its
    count made the summary miss a record that was printed. A second Ctrl-C is raised at once
    (stdout may be a pipe nobody reads), and the previous handler is put back before it is
    raised: it may land in __exit__, where signal.signal() runs a pending handler before it
    swaps, and a _hold left installed for the rest of the process turns a later Ctrl-C (the
    consumer's final commit, leaving the group) into a KeyboardInterrupt inside an event-loop
    callback (client/caller_loop.py takes Ctrl-C over only from default_int_handler)."""

    def __init__(self) -> None:
        self.caught = False
        self.previous: Any = None

    def __enter__(self) -> None:
        if (
            threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGINT) is signal.default_int_handler
        ):
            self.previous = signal.signal(signal.SIGINT, self._hold)

    def _hold(self, signum: int, frame: Any) -> None:
        if self.caught:
            self._restore()  # first: the raise may come out of __exit__ before it restores
            raise KeyboardInterrupt
        self.caught = True

    def _restore(self) -> None:
        # signal.signal() runs _hold for a Ctrl-C that is pending: if it is the second, _hold
        # restores (this again, nested) and raises, and this swap is skipped but already done.
        signal.signal(signal.SIGINT, self.previous)

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if self.previous is not None:
            self._restore()
        if self.caught and exc_type is None:
            raise KeyboardInterrupt


def _records(polled: Any) -> list[Any]:
    """poll() may give a list of records or (kafka-python style) a dict of lists by partition."""
    if isinstance(polled, dict):
        return [r for batch in polled.values() for r in batch]
    return list(polled)
