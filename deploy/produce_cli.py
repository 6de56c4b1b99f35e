"""`odradek produce TOPIC`: one record per stdin line (client.Producer does the work; deploy/cli.py
registers the command through `add_parser`).

The topic is checked first (`existing_partitions`, with TOPIC_GRACE_S for a topic created a
moment ago): a producer would wait max_block_ms for a topic that is not there. Lines are read
from stdin in chunks (deploy/cli_lines.py); without --key-separator a chunk goes in one
`send_batch` call, with it each line is split into key and value and sent on its own. At most
MAX_PENDING_SENDS records are unacknowledged at a time; each one's error is raised as it is
collected, so the command ends with the first record that could not be delivered. One request
is in flight per partition, so a retried batch cannot overtake a later line. A progress bar on
stderr (a terminal, or --progress) shows the bytes of a file read and the record rate; what the
producer waits for meanwhile (a partition without a leader, NOT_ENOUGH_REPLICAS) is said on
stderr at once (deploy/wait_notes.py). The summary line goes to stderr.
"""

from __future__ import annotations

import argparse
import sys
from collections import deque
from typing import Any

from deploy.cli_common import (
    TOPIC_GRACE_S,
    bootstrap_from_args,
    existing_partitions,
    non_negative_int,
    positive_int,
    progress,
    security_from_args,
)
from deploy.cli_lines import split_line, stdin_chunks
from deploy.cli_output import RateCounter, meter, produced_text, progress_options, stdin_file_bytes
from deploy.wait_notes import on_stderr, watching

MAX_PENDING_SENDS = 10_000  # unacknowledged records before we wait on the oldest
DELIVERY_TIMEOUT_MS = 120_000  # --timeout-ms: Kafka's delivery.timeout.ms
REQUEST_TIMEOUT_MS = 30_000
ACKS = {"0": 0, "1": 1, "all": -1, "-1": -1}


def add_parser(sub: Any, client: argparse.ArgumentParser) -> None:
    bar = progress_options(argparse.SUPPRESS)
    p = sub.add_parser("produce", parents=[client, bar], help="send one record per stdin line")
    p.add_argument("topic", metavar="TOPIC")
    p.add_argument("--key-separator", metavar="SEP", help="split each line into key SEP value")
    p.add_argument("--partition", type=non_negative_int, help="send every line to this partition")
    p.add_argument("--acks", choices=["0", "1", "all"], default="1")
    p.add_argument(
        "--timeout-ms", type=positive_int, default=DELIVERY_TIMEOUT_MS,
        help="give up on a record not acknowledged by then (delivery.timeout.ms; default 120000)",
    )  # fmt: skip
    p.set_defaults(func=cmd_produce)


def cmd_produce(args: argparse.Namespace) -> int:
    bootstrap = bootstrap_from_args(args)
    from client import Producer

    existing_partitions(args, TOPIC_GRACE_S)

    sep = args.key_separator.encode() if args.key_separator else None
    pending: deque[Any] = deque()
    count = 0
    stdin = sys.stdin.buffer
    total, start = stdin_file_bytes(stdin)  # a file's size: the bar shows how much is sent
    sent = RateCounter("records")
    until = f"retrying until --timeout-ms {args.timeout_ms} runs out"
    # One request in flight per partition: a retried batch cannot overtake a later line.
    with meter(args, f"producing to {args.topic}", total) as bar, Producer(
        bootstrap_servers=bootstrap, acks=ACKS[args.acks], max_in_flight_per_partition=1,
        delivery_timeout_ms=args.timeout_ms,
        request_timeout_ms=min(REQUEST_TIMEOUT_MS, args.timeout_ms),
        **security_from_args(args),
    ) as producer, watching(producer.waiting, on_stderr(until, bar)):  # fmt: skip
        for lines in stdin_chunks(stdin):
            if sep is None:  # the bulk path: one call per chunk
                pending.append(producer.send_batch(args.topic, lines, args.partition))
            else:
                for i, line in enumerate(lines, start=count + 1):
                    key, value = split_line(line, sep, i)
                    pending.append(producer.send(args.topic, value, key, args.partition))
            count += len(lines)
            if bar.live:
                sent.add(len(lines))
                bar.update(None if total is None else stdin.tell() - start, total, sent.text())
            while len(pending) > MAX_PENDING_SENDS:
                pending.popleft().result()  # raises the record's error, if any
        producer.flush()
        while pending:
            pending.popleft().result()
    progress(produced_text(count, args.topic, args.acks))
    return 0
