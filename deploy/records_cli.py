"""`odradek topics delete-records TOPIC --partition P --before OFFSET` and the offsets that
`odradek topics describe --offsets` adds (client.Admin does the work; deploy/cli.py registers
the subcommand through `add_parsers`).

delete-records moves the partition's log start offset to OFFSET (`hw`: the high watermark):
records before it are gone for every reader, and each replica deletes the segments wholly below
it. It prints the partition's low watermark (the smallest log start offset over its live
replicas) once every live replica has moved. `describe --offsets` appends each partition's log
start offset and high watermark (ListOffsets earliest and latest) to its line. delete-records
takes `-o json` (docs/cli.md).
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from typing import Any

from deploy.cli_common import admin_from_args, non_negative_int
from deploy.cli_output import emit_json, output_options, wants_json
from protocol.api.delete_records import DELETE_TO_HIGH_WATERMARK
from protocol.api.list_offsets import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP

HIGH_WATERMARK_WORDS = ("hw", "-1")
Offsets = dict[tuple[str, int], tuple[int, int]]  # (topic, partition) -> (log start, HW)


def before_offset(text: str) -> int:
    """argparse type: an offset >= 0, or `hw` (-1) for the high watermark."""
    if text.strip().lower() in HIGH_WATERMARK_WORDS:
        return DELETE_TO_HIGH_WATERMARK
    return non_negative_int(text)


def add_parsers(tsub: Any, client: argparse.ArgumentParser) -> None:
    p = tsub.add_parser(
        "delete-records",
        parents=[client, output_options(argparse.SUPPRESS)],
        help="delete a partition's records before an offset",
    )
    p.add_argument("name", metavar="TOPIC")
    p.add_argument("--partition", type=non_negative_int, required=True)
    p.add_argument(
        "--before", type=before_offset, required=True, metavar="OFFSET",
        help="the new first offset (hw: the high watermark, deleting everything committed)",
    )  # fmt: skip
    p.set_defaults(func=cmd_delete_records)


def cmd_delete_records(args: argparse.Namespace) -> int:
    from client.types import TopicPartition

    tp = TopicPartition(args.name, args.partition)
    with admin_from_args(args) as admin:
        low = admin.delete_records({tp: args.before})[tp]
    if wants_json(args):
        emit_json({"topic": args.name, "partition": args.partition, "low_watermark": low})
    else:
        print(f"Topic: {args.name} Partition: {args.partition} LowWatermark: {low}")
    return 0


def partition_offsets(admin: Any, descriptions: Iterable[Any]) -> Offsets:
    """(log start offset, high watermark) of every partition that has a leader."""
    from client.types import TopicPartition

    tps = [
        TopicPartition(d.name, p.partition)
        for d in descriptions
        for p in d.partitions
        if p.leader >= 0
    ]
    if not tps:
        return {}
    starts = admin.list_offsets({tp: EARLIEST_TIMESTAMP for tp in tps})
    ends = admin.list_offsets({tp: LATEST_TIMESTAMP for tp in tps})
    return {(tp.topic, tp.partition): (starts[tp].offset, ends[tp].offset) for tp in tps}


def with_offsets(line: str, offsets: tuple[int, int] | None) -> str:
    """A `topics describe` partition line with its offsets, before any marker like
    "  (under-replicated)"; unchanged when the offsets are not known (offline)."""
    if offsets is None:
        return line
    base, sep, marker = line.partition("  (")
    return f"{base} LogStartOffset: {offsets[0]} HighWatermark: {offsets[1]}{sep}{marker}"
