"""`odradek groups list|describe|reset-offsets|delete` (client/group/admin.py does the work).

odradek groups list            GROUP STATE KIND, tab-separated (KIND: a Kafka group's protocol
                               type, "consumer"; "odradek" for a native group; "-" without
                               members)
odradek groups describe G      seed 004's columns: GROUP TOPIC PARTITION CURRENT-OFFSET
                               LOG-END-OFFSET LAG OWNER, after a line with the group's
                               state, generation and assignor
odradek groups reset-offsets G --topic T (--to-earliest | --to-latest | --to-offset N)
                               only while the group has no members
odradek groups delete G        only while the group has no members

Kafka clients' groups are shown too: their state by Kafka's names (Stable, PreparingRebalance,
CompletingRebalance, Empty), and OWNER as `client-id@host` (e.g. `consumer-1@/127.0.0.1`). They
are reset and deleted as Kafka's tool does it: only when Empty.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Callable
from typing import Any

COLUMNS = ("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "OWNER")


def add_parser(sub: Any, client: argparse.ArgumentParser, bootstrap: Callable[..., str]) -> None:
    p = sub.add_parser("groups", help="list, describe, reset and delete consumer groups")
    gsub = p.add_subparsers(dest="groups_command", metavar="ACTION", required=True)
    lst = gsub.add_parser("list", parents=[client], help="every group and its state")
    lst.set_defaults(func=lambda a: _run(cmd_list(bootstrap(a))))
    describe = gsub.add_parser("describe", parents=[client], help="members, offsets and lag")
    describe.add_argument("group", metavar="GROUP")
    describe.set_defaults(func=lambda a: _run(cmd_describe(bootstrap(a), a.group)))
    reset = gsub.add_parser("reset-offsets", parents=[client], help="move an idle group")
    reset.add_argument("group", metavar="GROUP")
    reset.add_argument("--topic", required=True)
    to = reset.add_mutually_exclusive_group(required=True)
    to.add_argument("--to-earliest", action="store_true")
    to.add_argument("--to-latest", action="store_true")
    to.add_argument("--to-offset", type=int, metavar="N")
    reset.set_defaults(func=lambda a: _run(cmd_reset(bootstrap(a), a)))
    delete = gsub.add_parser("delete", parents=[client], help="delete an idle group")
    delete.add_argument("group", metavar="GROUP")
    delete.set_defaults(func=lambda a: _run(cmd_delete(bootstrap(a), a.group)))


def _run(coro: Any) -> int:
    return int(asyncio.run(coro))


def format_rows(rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]


async def cmd_list(bootstrap: str) -> int:
    from client.group.admin import GroupAdmin

    async with GroupAdmin(bootstrap) as admin:
        for g in await admin.listed_groups():
            if g.protocol_type is not None:  # a Kafka group: Kafka's state name and its kind
                print(f"{g.group_id}\t{g.kafka_state or g.state}\t{g.protocol_type}")
            else:
                kind = "-" if g.state in ("Empty", "Dead") else "odradek"
                print(f"{g.group_id}\t{g.state}\t{kind}")
    return 0


async def cmd_describe(bootstrap: str, group: str) -> int:
    from client.group.admin import GroupAdmin, state_name

    async with GroupAdmin(bootstrap) as admin:
        desc, rows = await admin.lag(group)
    kind = f"Kafka group (protocol type {desc.protocol_type}), " if desc.protocol_type else ""
    print(f"group {group}: {kind}state {state_name(desc)}, generation {desc.generation_id}, "
          f"assignor {desc.assignment_strategy or '-'}, {len(desc.members)} members")  # fmt: skip
    table: list[tuple[str, ...]] = [COLUMNS]
    for r in rows:
        table.append((r.group, r.topic, str(r.partition),
                      "-" if r.current_offset is None else str(r.current_offset),
                      str(r.log_end_offset), "-" if r.lag is None else str(r.lag),
                      r.owner or "-"))  # fmt: skip
    for line in format_rows(table):
        print(line)
    return 0


async def cmd_reset(bootstrap: str, args: argparse.Namespace) -> int:
    from client.group.admin import GroupAdmin

    to = "earliest" if args.to_earliest else "latest" if args.to_latest else "offset"
    async with GroupAdmin(bootstrap) as admin:
        done = await admin.reset_offsets(args.group, args.topic, to, args.to_offset)
    for partition, offset in done.items():
        print(f"{args.group}\t{args.topic}\t{partition}\t{offset}")
    return 0


async def cmd_delete(bootstrap: str, group: str) -> int:
    from client.group.admin import GroupAdmin

    async with GroupAdmin(bootstrap) as admin:
        await admin.delete_group(group)
    print(f"deleted group {group}")
    return 0
