"""`odradek share-groups list|describe|delete`: share groups (KIP-932) with
kafka-share-groups.sh's flags and columns (client/group/share_admin.py does the work).

odradek share-groups list                  one share group id a line
odradek share-groups list --state [S,...]  GROUP STATE (only those in the states given:
                                           Empty, Stable, Dead; all with a bare --state)
odradek share-groups describe G            GROUP TOPIC PARTITION START-OFFSET LAG (--verbose:
                                           LEADER-EPOCH before START-OFFSET): a row per
                                           partition the members are assigned; the start
                                           offset, leader epoch and lag print "-" (they are
                                           the share coordinator's durable state, which
                                           odradek does not have yet)
odradek share-groups describe G --members  GROUP CONSUMER-ID HOST CLIENT-ID #PARTITIONS
                                           ASSIGNMENT (--verbose: MEMBER-EPOCH before
                                           ASSIGNMENT; ASSIGNMENT as `topic:0,1;other:2`)
odradek share-groups describe G --state    GROUP COORDINATOR (ID) STATE #MEMBERS (--verbose:
                                           GROUP-EPOCH ASSIGNMENT-EPOCH before #MEMBERS)
odradek share-groups delete G              only an Empty share group

As Kafka's tool: describing an Empty group says on stderr that it has no active members; a
group that does not exist, or is not a share group, is an error. list and describe take
`-o json` (one document, field names in docs/cli.md).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Callable, Coroutine
from typing import Any

from deploy.cli_common import security_from_args
from deploy.cli_output import emit_json, output_options, print_lines, table_lines, wants_json

ALL_STATES = ""  # a bare --state: every state


def add_parser(sub: Any, client: argparse.ArgumentParser, bootstrap: Callable[..., str]) -> None:
    p = sub.add_parser("share-groups", help="list, describe and delete share groups (queues)")
    ssub = p.add_subparsers(dest="share_groups_command", metavar="ACTION", required=True)
    listing = [client, output_options(argparse.SUPPRESS)]
    lst = ssub.add_parser("list", parents=listing, help="every share group")
    lst.add_argument("--state", nargs="?", const=ALL_STATES, default=None, metavar="STATES",
                     help="show each group's state; only these states when given "
                          "(comma-separated: Empty, Stable, Dead)")  # fmt: skip
    lst.set_defaults(func=lambda a: _run(
        lambda sec: cmd_list(bootstrap(a), a.state, wants_json(a), sec), a))  # fmt: skip
    describe = ssub.add_parser("describe", parents=listing, help="partitions, members or state")
    describe.add_argument("group", metavar="GROUP")
    what = describe.add_mutually_exclusive_group()
    what.add_argument("--members", action="store_true", help="the members and their partitions")
    what.add_argument("--state", action="store_true", help="the group's state and coordinator")
    describe.add_argument("--verbose", action="store_true",
                          help="epochs too (kafka-share-groups.sh --verbose)")  # fmt: skip
    describe.set_defaults(func=lambda a: _run(lambda sec: cmd_describe(bootstrap(a), a, sec), a))
    delete = ssub.add_parser("delete", parents=[client], help="delete an Empty share group")
    delete.add_argument("group", metavar="GROUP")
    delete.set_defaults(func=lambda a: _run(lambda sec: cmd_delete(bootstrap(a), a.group, sec), a))


def _run(make: Callable[[dict[str, Any]], Coroutine[Any, Any, int]], args: Any) -> int:
    """Run the command with the client security settings its flags give (--command-config)."""
    return int(asyncio.run(make(security_from_args(args))))


def _admin(bootstrap: str, security: dict[str, Any]) -> Any:
    from client.group.share_admin import ShareGroupAdmin

    return ShareGroupAdmin(bootstrap, **security)


async def cmd_list(
    bootstrap: str, state: str | None, as_json: bool = False, security: dict[str, Any] | None = None
) -> int:
    from client.group.share_admin import parse_states

    states = parse_states(state) if state else None
    async with _admin(bootstrap, security or {}) as admin:
        groups = await admin.share_groups(states)
    if as_json:
        emit_json({"groups": [{"group": g.group_id, "state": g.state} for g in groups]})
    elif state is None:
        print_lines(g.group_id for g in groups)
    else:
        print_lines(table_lines(("GROUP", "STATE"), [(g.group_id, g.state) for g in groups]))
    return 0


def assignment_text(topics: Any) -> str:
    """Kafka's ASSIGNMENT column: `topic:0,1;other:2`, topics sorted."""
    parts: dict[str, list[int]] = {}
    for t in topics:
        parts.setdefault(t.topic or t.topic_id, []).extend(t.partitions)
    return ";".join(
        f"{name}:{','.join(map(str, sorted(ps)))}" for name, ps in sorted(parts.items())
    )


def describe_doc(desc: Any, coordinator: Any = None) -> dict[str, Any]:
    """The group as `-o json` gives it: state, epochs, members and the partitions assigned
    (start offset, leader epoch and lag null: not known without the durable state)."""
    partitions = sorted({(t.topic or t.topic_id, p) for m in desc.members for t in m.assignment
                         for p in t.partitions})  # fmt: skip
    return {
        "group": desc.group_id, "state": desc.state, "group_epoch": desc.group_epoch,
        "assignment_epoch": desc.assignment_epoch, "assignor": desc.assignor_name or None,
        "coordinator": None if coordinator is None else {
            "id": coordinator.node_id, "host": coordinator.host, "port": coordinator.port},
        "members": [
            {"consumer_id": m.member_id, "host": m.client_host or None, "client_id": m.client_id,
             "member_epoch": m.member_epoch, "partitions": sum(len(t.partitions)
                                                               for t in m.assignment),
             "assignment": assignment_text(m.assignment)}
            for m in sorted(desc.members, key=lambda m: m.member_id)],
        "partitions": [{"topic": t, "partition": p, "leader_epoch": None, "start_offset": None,
                        "lag": None} for t, p in partitions],
    }  # fmt: skip


async def cmd_describe(
    bootstrap: str, args: argparse.Namespace, security: dict[str, Any] | None = None
) -> int:
    from protocol.errors import GroupIdNotFoundError

    async with _admin(bootstrap, security or {}) as admin:
        desc = await admin.describe_share_group(args.group)
        if desc.state == "Dead" or desc.error_code:
            raise GroupIdNotFoundError(f"Share group '{args.group}' does not exist"
                                       f" ({desc.error_message or 'not found'}).")  # fmt: skip
        coordinator = await admin.coordinator(args.group) if args.state else None
    doc = describe_doc(desc, coordinator)
    if wants_json(args):
        emit_json(doc)
        return 0
    if desc.state == "Empty":
        print(f"Share group '{args.group}' has no active members.", file=sys.stderr)
    print_lines(describe_lines(doc, args.members, args.state, args.verbose))
    return 0


def describe_lines(doc: dict[str, Any], members: bool, state: bool, verbose: bool) -> list[str]:
    group = doc["group"]
    if state:
        c = doc["coordinator"]
        where = f"{c['host']}:{c['port']}  ({c['id']})"
        epochs = (doc["group_epoch"], doc["assignment_epoch"]) if verbose else ()
        head = ("GROUP", "COORDINATOR (ID)", "STATE",
                *(("GROUP-EPOCH", "ASSIGNMENT-EPOCH") if verbose else ()), "#MEMBERS")  # fmt: skip
        return table_lines(head, [(group, where, doc["state"], *epochs, len(doc["members"]))])
    if members:
        head = ("GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS",
                *(("MEMBER-EPOCH",) if verbose else ()), "ASSIGNMENT")  # fmt: skip
        return table_lines(head, [
            (group, m["consumer_id"], m["host"], m["client_id"], m["partitions"],
             *((m["member_epoch"],) if verbose else ()), m["assignment"])
            for m in doc["members"]])  # fmt: skip
    head = ("GROUP", "TOPIC", "PARTITION", *(("LEADER-EPOCH",) if verbose else ()),
            "START-OFFSET", "LAG")  # fmt: skip
    return table_lines(head, [
        (group, p["topic"], p["partition"], *((p["leader_epoch"],) if verbose else ()),
         p["start_offset"], p["lag"])
        for p in doc["partitions"]])  # fmt: skip


async def cmd_delete(bootstrap: str, group: str, security: dict[str, Any] | None = None) -> int:
    async with _admin(bootstrap, security or {}) as admin:
        await admin.delete_share_group(group)
    print(f"Deletion of requested share groups ('{group}') was successful.")
    return 0
