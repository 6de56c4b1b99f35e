"""`odradek share-groups list|describe|reset-offsets|delete-offsets|delete`: share groups
(KIP-932) with kafka-share-groups.sh's flags and columns (client/group/share_admin.py does
the work).

odradek share-groups list                  one share group id a line
odradek share-groups list --state [S,...]  GROUP STATE (only those in the states given:
                                           Empty, Stable, Dead; all with a bare --state)
odradek share-groups describe G            GROUP TOPIC PARTITION START-OFFSET LAG (--verbose:
                                           LEADER-EPOCH before START-OFFSET): a row per
                                           share partition with state (DescribeShareGroup-
                                           Offsets) or assigned; "-" where none is known yet
odradek share-groups describe G --members  GROUP CONSUMER-ID HOST CLIENT-ID #PARTITIONS
                                           ASSIGNMENT (--verbose: MEMBER-EPOCH before
                                           ASSIGNMENT; ASSIGNMENT as `topic:0,1;other:2`)
odradek share-groups describe G --state    GROUP COORDINATOR (ID) STATE #MEMBERS (--verbose:
                                           GROUP-EPOCH ASSIGNMENT-EPOCH before #MEMBERS)
odradek share-groups reset-offsets G (--topic T[:P,...] ... | --all-topics)
    (--to-earliest | --to-latest | --to-offset N | --to-datetime YYYY-MM-DDTHH:mm:SS.sss |
     --by-duration PnDTnHnMnS) [--dry-run | --execute]
                                           GROUP TOPIC PARTITION NEW-OFFSET; only an Empty
                                           group; without --execute nothing is changed
odradek share-groups delete-offsets (G | --group G) --topic T [--topic T ...]
                                           TOPIC STATUS (Successful, or Error: why): the
                                           group's share state on those topics is deleted
                                           (DeleteShareGroupOffsets); only an Empty group
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
    reset = ssub.add_parser("reset-offsets", parents=listing, help="move an Empty group's start")
    reset.add_argument("group", metavar="GROUP")
    which = reset.add_mutually_exclusive_group(required=True)
    which.add_argument("--topic", action="append", metavar="TOPIC[:P,...]",
                       help="a topic, or some of its partitions (repeat for more)")  # fmt: skip
    which.add_argument("--all-topics", action="store_true", help="the group's topics")
    to = reset.add_mutually_exclusive_group(required=True)
    to.add_argument("--to-earliest", action="store_true")
    to.add_argument("--to-latest", action="store_true")
    to.add_argument("--to-offset", type=int, metavar="N")
    to.add_argument("--to-datetime", metavar="YYYY-MM-DDTHH:mm:SS.sss")
    to.add_argument("--by-duration", metavar="PnDTnHnMnS")
    run = reset.add_mutually_exclusive_group()
    run.add_argument("--dry-run", action="store_true", help="show the new offsets (default)")
    run.add_argument("--execute", action="store_true", help="change the offsets")
    reset.set_defaults(func=lambda a: _run(lambda sec: cmd_reset(bootstrap(a), a, sec), a))
    forget = ssub.add_parser("delete-offsets", parents=[client],
                             help="delete an Empty group's share state on topics")  # fmt: skip
    forget.add_argument("group", metavar="GROUP", nargs="?")
    forget.add_argument("--group", dest="group_flag", metavar="GROUP",
                        help="the group (kafka-share-groups.sh's spelling)")  # fmt: skip
    forget.add_argument("--topic", action="append", required=True, metavar="TOPIC",
                        help="a topic whose share state to delete (repeat for more)")  # fmt: skip
    forget.set_defaults(func=lambda a: _run(
        lambda sec: cmd_delete_offsets(bootstrap(a), a, sec), a))  # fmt: skip
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


def describe_doc(desc: Any, coordinator: Any = None, offsets: Any = ()) -> dict[str, Any]:
    """The group as `-o json` gives it: state, epochs, members and its share partitions:
    those with state (`offsets`, ShareOffsetRow) and those assigned (null where unknown)."""
    known = {(r.topic, r.partition): r for r in offsets}
    partitions = sorted(set(known) | {(t.topic or t.topic_id, p) for m in desc.members
                                      for t in m.assignment for p in t.partitions})  # fmt: skip
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
        "partitions": [{"topic": t, "partition": p, "leader_epoch": getattr(known.get((t, p)),
                        "leader_epoch", None), "start_offset": getattr(known.get((t, p)),
                        "start_offset", None), "lag": getattr(known.get((t, p)), "lag", None)}
                       for t, p in partitions],
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
        offsets = [] if args.state or args.members else await admin.share_offsets(args.group)
    doc = describe_doc(desc, coordinator, offsets)
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


def parse_timestamp_ms(args: argparse.Namespace, now_ms: int) -> int | None:
    """--to-datetime (ISO 8601, local time unless it names a zone) or --by-duration (ISO 8601
    duration, back from now) as ms; UsageError with Kafka's tool's line."""
    import datetime

    from protocol.errors import UsageError

    if args.to_datetime:
        try:
            when = datetime.datetime.fromisoformat(args.to_datetime)
        except ValueError:
            raise UsageError(f"Error parsing datetime '{args.to_datetime}': expected "
                             "yyyy-MM-ddTHH:mm:SS.sss") from None  # fmt: skip
        return int(when.timestamp() * 1000)
    if args.by_duration:
        return now_ms - _duration_ms(args.by_duration)
    return None


def _duration_ms(text: str) -> int:
    import re

    from protocol.errors import UsageError

    m = re.fullmatch(r"P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?", text)
    if m is None or text in ("P", "PT") or text.endswith("T"):
        raise UsageError(f"Error parsing duration '{text}': expected PnDTnHnMnS")
    d, h, mi, sec = (float(x) if x else 0.0 for x in m.groups())
    return int((((d * 24 + h) * 60 + mi) * 60 + sec) * 1000)


async def cmd_reset(
    bootstrap: str, args: argparse.Namespace, security: dict[str, Any] | None = None
) -> int:
    import time

    from protocol.errors import GroupIdNotFoundError, NonEmptyGroupError

    async with _admin(bootstrap, security or {}) as admin:
        desc = await admin.describe_share_group(args.group)
        if desc.error_code and desc.error_message and "not a share group" in desc.error_message:
            raise GroupIdNotFoundError(f"Group '{args.group}' is not a share group.")
        if desc.state not in ("Empty", "Dead"):
            raise NonEmptyGroupError(f"Share group '{args.group}' is not empty.")
        tps = await _reset_partitions(admin, args)
        when = parse_timestamp_ms(args, int(time.time() * 1000))
        to, value = (("earliest", None) if args.to_earliest else ("latest", None)
                     if args.to_latest else ("offset", args.to_offset)
                     if args.to_offset is not None else ("timestamp", when))  # fmt: skip
        targets = await admin.share_offset_targets(tps, to, value)
        if args.execute:
            await admin.reset_share_offsets(args.group, targets)
    if not args.execute and not args.dry_run:
        print("WARN: No action will be performed as the --execute option is missing. "
              "Add --execute to perform the operation.", file=sys.stderr)  # fmt: skip
    rows = [(args.group, t, p, o) for (t, p), o in sorted(targets.items())]
    if wants_json(args):
        emit_json({"group": args.group, "executed": bool(args.execute), "partitions": [
            {"topic": t, "partition": p, "new_offset": o} for _, t, p, o in rows]})  # fmt: skip
        return 0
    print_lines(table_lines(("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"), rows))
    return 0


async def _reset_partitions(admin: Any, args: argparse.Namespace) -> list[tuple[str, int]]:
    """--topic T (every partition), T:0,1 (those), or --all-topics (the group's with state)."""
    from protocol.errors import UsageError

    if args.all_topics:
        return sorted({(r.topic, r.partition) for r in await admin.share_offsets(args.group)})
    out: list[tuple[str, int]] = []
    for spec in args.topic:
        topic, _, parts = spec.partition(":")
        if not parts:
            out += await admin.topic_partitions(topic)
            continue
        try:
            out += [(topic, int(p)) for p in parts.split(",")]
        except ValueError:
            raise UsageError(f"Invalid partitions in --topic {spec!r}") from None
    return out


async def cmd_delete(bootstrap: str, group: str, security: dict[str, Any] | None = None) -> int:
    async with _admin(bootstrap, security or {}) as admin:
        await admin.delete_share_group(group)
    print(f"Deletion of requested share groups ('{group}') was successful.")
    return 0


async def cmd_delete_offsets(
    bootstrap: str, args: argparse.Namespace, security: dict[str, Any] | None = None
) -> int:
    """kafka-share-groups.sh --delete-offsets: TOPIC STATUS, one row a topic; 1 when any
    topic's deletion failed."""
    from protocol.errors import UsageError, for_code

    if (args.group is None) == (args.group_flag is None):
        raise UsageError("name the group once: GROUP or --group GROUP")
    group = args.group or args.group_flag
    async with _admin(bootstrap, security or {}) as admin:
        results = await admin.delete_share_offsets(group, list(dict.fromkeys(args.topic)))
    rows = []
    for topic, (code, message) in sorted(results.items()):
        why = message or str(for_code(code)(f"topic {topic!r}")) if code else ""
        rows.append((topic, f"Error: {why}" if code else "Successful"))
    print_lines(table_lines(("TOPIC", "STATUS"), rows))
    return 1 if any(code for code, _ in results.values()) else 0
