"""`odradek groups list|describe|reset-offsets|delete|remove-members` (client/group/admin.py
does the work).

odradek groups list            aligned columns GROUP STATE KIND (KIND: a Kafka group's
                               protocol type, "consumer"; "odradek" for a native group; "-"
                               without members)
odradek groups describe G      seed 004's columns: GROUP TOPIC PARTITION CURRENT-OFFSET
                               LOG-END-OFFSET LAG OWNER, after a line with the group's
                               state, generation and assignor; "-" for a value not known
                               (no committed offset; no log end offset while the
                               partition's leader is down, and then no lag either)
odradek groups describe G --members
                               the members instead: MEMBER INSTANCE-ID CLIENT-ID HOST ASSIGNED
                               (a classic group; INSTANCE-ID a static member's
                               group.instance.id), or a consumer group's MEMBER CLIENT-ID
                               MEMBER-EPOCH ASSIGNED TARGET
odradek groups reset-offsets G --topic T (--to-earliest | --to-latest | --to-offset N)
                               only while the group has no members; GROUP TOPIC PARTITION
                               NEW-OFFSET
odradek groups delete G        only while the group has no members
odradek groups remove-members G --instance-id I [--instance-id J ...]
                               remove static members (KIP-345) at once: the group rebalances
                               now, not at their session timeout; GROUP INSTANCE-ID RESULT,
                               exit 1 if one was not found

list, describe and reset-offsets take `-o json` (one document, field names in docs/cli.md).

Kafka clients' groups are shown too: their state by Kafka's names (Stable, PreparingRebalance,
CompletingRebalance, Empty), and OWNER as `client-id@host` (e.g. `consumer-1@/127.0.0.1`). They
are reset and deleted as Kafka's tool does it: only when Empty.
"""

from __future__ import annotations

import argparse
import asyncio
import contextvars
from collections.abc import Callable
from typing import Any

from deploy.cli_output import emit_json, output_options, print_lines, table_lines, wants_json

COLUMNS = ("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "OWNER")
LIST_COLUMNS = ("GROUP", "STATE", "KIND", "TYPE")
MEMBER_COLUMNS = ("MEMBER", "CLIENT-ID", "MEMBER-EPOCH", "ASSIGNED", "TARGET")
CLASSIC_MEMBER_COLUMNS = ("MEMBER", "INSTANCE-ID", "CLIENT-ID", "HOST", "ASSIGNED")
RESET_COLUMNS = ("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET")


def add_parser(sub: Any, client: argparse.ArgumentParser, bootstrap: Callable[..., str]) -> None:
    p = sub.add_parser("groups", help="list, describe, reset and delete consumer groups")
    gsub = p.add_subparsers(dest="groups_command", metavar="ACTION", required=True)
    listing = [client, output_options(argparse.SUPPRESS)]
    lst = gsub.add_parser("list", parents=listing, help="every group and its state")
    lst.set_defaults(func=lambda a: _run(cmd_list(bootstrap(a), wants_json(a)), a))
    describe = gsub.add_parser("describe", parents=listing, help="members, offsets and lag")
    describe.add_argument("group", metavar="GROUP")
    describe.add_argument(
        "--members",
        action="store_true",
        help="the members instead of the offsets: a classic group's instance id (static "
        "members), client id, host and partitions; a consumer group's member epoch, assigned "
        "and target partitions (kafka-consumer-groups --describe --members --verbose)",
    )
    describe.set_defaults(
        func=lambda a: _run(cmd_describe(bootstrap(a), a.group, wants_json(a), a.members), a)
    )
    reset = gsub.add_parser("reset-offsets", parents=listing, help="move an idle group")
    reset.add_argument("group", metavar="GROUP")
    reset.add_argument("--topic", required=True)
    to = reset.add_mutually_exclusive_group(required=True)
    to.add_argument("--to-earliest", action="store_true")
    to.add_argument("--to-latest", action="store_true")
    to.add_argument("--to-offset", type=int, metavar="N")
    reset.set_defaults(func=lambda a: _run(cmd_reset(bootstrap(a), a), a))
    delete = gsub.add_parser("delete", parents=[client], help="delete an idle group")
    delete.add_argument("group", metavar="GROUP")
    delete.set_defaults(func=lambda a: _run(cmd_delete(bootstrap(a), a.group), a))
    remove = gsub.add_parser("remove-members", parents=[client],
                             help="remove static members by group instance id")  # fmt: skip
    remove.add_argument("group", metavar="GROUP")
    remove.add_argument("--instance-id", action="append", required=True, dest="instance_ids",
                        metavar="ID", help="a group.instance.id (repeat for more)")  # fmt: skip
    remove.set_defaults(
        func=lambda a: _run(cmd_remove_members(bootstrap(a), a.group, a.instance_ids), a)
    )


# The client security settings of the command being run (--command-config), for GroupAdmin.
_SECURITY: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar(
    "security", default=None
)


def _run(coro: Any, args: argparse.Namespace | None = None) -> int:
    from deploy.cli_common import security_from_args

    if args is not None:
        _SECURITY.set(security_from_args(args))
    return int(asyncio.run(coro))


def _group_admin(bootstrap: str) -> Any:
    from client.group.admin import GroupAdmin

    return GroupAdmin(bootstrap, **(_SECURITY.get() or {}))


def listed_doc(g: Any) -> dict[str, Any]:
    """One group of `groups list`: a Kafka group by Kafka's state name and its protocol type,
    a native one as kind "odradek" (null without members: nothing says which it is); its type
    is Kafka's group type: "classic", or "consumer" for a KIP-848 group."""
    group_type = getattr(g, "group_type", "classic")
    if g.protocol_type is not None:
        state = g.kafka_state or g.state
        return {"group": g.group_id, "state": state, "kind": g.protocol_type, "type": group_type}
    kind = None if g.state in ("Empty", "Dead") else "odradek"
    return {"group": g.group_id, "state": g.state, "kind": kind, "type": group_type}


async def cmd_list(bootstrap: str, as_json: bool = False) -> int:

    async with _group_admin(bootstrap) as admin:
        groups = [listed_doc(g) for g in await admin.listed_groups()]
    groups.sort(key=lambda g: g["group"])
    if as_json:
        emit_json({"groups": groups})
    else:
        print_lines(
            table_lines(
                LIST_COLUMNS, [(g["group"], g["state"], g["kind"], g["type"]) for g in groups]
            )
        )
    return 0


def describe_doc(group: str, desc: Any, rows: list[Any]) -> dict[str, Any]:
    from client.group.admin import state_name

    return {
        "group": group,
        "state": state_name(desc),
        "protocol_type": desc.protocol_type,  # null: a native group
        "generation": desc.generation_id,
        "assignor": desc.assignment_strategy or None,
        "members": len(desc.members),
        "type": desc.group_type,
        **(consumer_doc(desc) if desc.group_type == "consumer" else classic_doc(desc)),
        "partitions": [
            {"topic": r.topic, "partition": r.partition, "current_offset": r.current_offset,
             "log_end_offset": r.log_end_offset, "lag": r.lag, "owner": r.owner}
            for r in rows
        ],
    }  # fmt: skip


def _parts(parts: Any) -> str:
    return ",".join(f"{t.topic}-{p}" for t in parts or () for p in t.partitions) or "-"


def consumer_doc(desc: Any) -> dict[str, Any]:
    """A KIP-848 group's epochs and members (Kafka's ConsumerGroupDescribe content)."""
    return {
        "group_epoch": desc.group_epoch,
        "target_assignment_epoch": desc.target_assignment_epoch,
        "member_details": [
            {"member_id": m.member_id, "client_id": m.client_id,
             "instance_id": m.group_instance_id, "member_epoch": m.member_epoch,
             "assigned": _parts(m.assignment), "target": _parts(m.target_assignment)}
            for m in desc.members
        ],
    }  # fmt: skip


def classic_doc(desc: Any) -> dict[str, Any]:
    """A classic group's members (DescribeGroups), with a static member's group.instance.id."""
    return {
        "member_details": [
            {"member_id": m.member_id, "client_id": m.client_id,
             "instance_id": m.group_instance_id, "host": m.client_host or None,
             "assigned": _parts(m.assignment)}
            for m in desc.members
        ],
    }  # fmt: skip


def member_lines(doc: dict[str, Any], consumer: bool) -> list[str]:
    """`describe --members`: a consumer group's epochs and target, or a classic group's
    instance ids and hosts ("-" for a dynamic member's instance id)."""
    if consumer:
        return table_lines(MEMBER_COLUMNS, [
            (m["member_id"], m["client_id"], m["member_epoch"], m["assigned"], m["target"])
            for m in doc["member_details"]
        ])  # fmt: skip
    return table_lines(CLASSIC_MEMBER_COLUMNS, [
        (m["member_id"], m["instance_id"] or "-", m["client_id"], m["host"] or "-", m["assigned"])
        for m in doc["member_details"]
    ])  # fmt: skip


async def cmd_describe(
    bootstrap: str, group: str, as_json: bool = False, members: bool = False
) -> int:

    async with _group_admin(bootstrap) as admin:
        desc, rows = await admin.lag(group)
    doc = describe_doc(group, desc, rows)
    if as_json:
        emit_json(doc)
        return 0
    kafka = desc.protocol_type and desc.group_type == "classic"  # a consumer group: either door
    kind = f"Kafka group (protocol type {desc.protocol_type}), " if kafka else ""
    epochs = ""
    if desc.group_type == "consumer":
        epochs = (f"group epoch {desc.group_epoch}, target assignment epoch "
                  f"{desc.target_assignment_epoch}, ")  # fmt: skip
    print(f"group {group}: {kind}type {desc.group_type}, state {doc['state']}, "
          f"generation {desc.generation_id}, {epochs}assignor {doc['assignor'] or '-'}, "
          f"{len(desc.members)} members")  # fmt: skip
    if members:  # the members instead of the offsets
        print_lines(member_lines(doc, desc.group_type == "consumer"))
        return 0
    print_lines(describe_lines(doc))
    return 0


def describe_lines(doc: dict[str, Any]) -> list[str]:
    """The offsets table of `describe_doc`: a value not known (no committed offset, a log end
    offset whose leader is down) prints as "-", as every table's missing value does."""
    rows = [(doc["group"], p["topic"], p["partition"], p["current_offset"], p["log_end_offset"],
             p["lag"], p["owner"]) for p in doc["partitions"]]  # fmt: skip
    return table_lines(COLUMNS, rows)


async def cmd_reset(bootstrap: str, args: argparse.Namespace) -> int:

    to = "earliest" if args.to_earliest else "latest" if args.to_latest else "offset"
    async with _group_admin(bootstrap) as admin:
        done = await admin.reset_offsets(args.group, args.topic, to, args.to_offset)
    if wants_json(args):
        partitions = [{"partition": p, "offset": o} for p, o in sorted(done.items())]
        emit_json({"group": args.group, "topic": args.topic, "partitions": partitions})
        return 0
    rows = [(args.group, args.topic, p, o) for p, o in sorted(done.items())]
    print_lines(table_lines(RESET_COLUMNS, rows))
    return 0


async def cmd_delete(bootstrap: str, group: str) -> int:

    async with _group_admin(bootstrap) as admin:
        await admin.delete_group(group)
    print(f"deleted group {group}")
    return 0


async def cmd_remove_members(bootstrap: str, group: str, instance_ids: list[str]) -> int:
    from protocol.errors import for_code

    async with _group_admin(bootstrap) as admin:
        codes = await admin.remove_members(group, instance_ids)
    rows = [(group, i, "removed" if c == 0 else for_code(c).name) for i, c in codes.items()]
    print_lines(table_lines(("GROUP", "INSTANCE-ID", "RESULT"), rows))
    return 0 if all(c == 0 for c in codes.values()) else 1
