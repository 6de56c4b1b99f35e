"""`odradek users add|list|remove`: SCRAM users (KIP-554's Alter/DescribeUserScramCredentials).

    odradek users add alice --mechanism SCRAM-SHA-512 --password-file alice.pw [--iterations 8192]
    odradek users add alice                      # asks for the password twice (no echo)
    odradek users add alice --password secret    # works, with a warning: shell history keeps it
    odradek users list [alice ...] [-o json]     # USER MECHANISM ITERATIONS
    odradek users remove alice [--mechanism SCRAM-SHA-256]   # every mechanism when none named

`--mechanism` may be repeated (default SCRAM-SHA-512). The password is salted and iterated on
this machine (client/scram_admin.py); only the salted password crosses the network, and only
salted, iterated keys reach ZooKeeper. A password file's first line is the password (its line
end dropped). Kafka's habit gives the same result:

    kafka-configs.sh --bootstrap-server HOST:9092 --alter --entity-type users --entity-name alice \\
        --add-config 'SCRAM-SHA-512=[iterations=8192,password=alice-secret]'
"""

from __future__ import annotations

import argparse
import getpass
import sys
from pathlib import Path
from typing import Any

from client.scram_admin import UserScramCredentialDeletion, UserScramCredentialUpsertion
from deploy.cli_common import admin_from_args
from deploy.cli_output import emit_json, output_options, print_lines, table_lines, wants_json
from protocol.errors import UsageError
from protocol.scram import DEFAULT_ITERATIONS, MECHANISMS, mechanism

DEFAULT_MECHANISM = "SCRAM-SHA-512"
HISTORY_WARNING = (
    "warning: a password given with --password stays in your shell history and is visible "
    "to other users in the process list; prefer --password-file or the prompt"
)


def add_parser(sub: Any, client: argparse.ArgumentParser) -> None:
    p = sub.add_parser("users", help="SCRAM users: add, list, remove (KIP-554)")
    usub = p.add_subparsers(dest="users_command", metavar="ACTION", required=True)
    add = usub.add_parser("add", parents=[client], help="add a user, or set a new password")
    add.add_argument("user")
    _mechanism_flag(add)
    add.add_argument("--iterations", type=int, default=DEFAULT_ITERATIONS,
                     help=f"4096..16384 (default {DEFAULT_ITERATIONS})")  # fmt: skip
    source = add.add_mutually_exclusive_group()
    source.add_argument("--password-file", metavar="FILE", help="its first line is the password")
    source.add_argument("--password", help="the password (kept by your shell history: see -h)")
    add.set_defaults(func=cmd_add)
    lister = usub.add_parser("list", parents=[client, output_options(argparse.SUPPRESS)],
                             help="users and their mechanisms")  # fmt: skip
    lister.add_argument("users", nargs="*", metavar="USER", help="only these (default: all)")
    lister.set_defaults(func=cmd_list)
    remove = usub.add_parser("remove", parents=[client], help="delete a user's credentials")
    remove.add_argument("user")
    remove.add_argument("--mechanism", action="append", metavar="M", type=_mechanism_name,
                        help="only this one (repeatable; default: all the user has)")  # fmt: skip
    remove.set_defaults(func=cmd_remove)


def _mechanism_flag(p: argparse.ArgumentParser) -> None:
    names = " or ".join(MECHANISMS)
    p.add_argument("--mechanism", action="append", metavar="M", type=_mechanism_name,
                   help=f"{names} (repeatable; default {DEFAULT_MECHANISM})")  # fmt: skip


def _mechanism_name(text: str) -> str:
    try:
        return mechanism(text).name
    except UsageError as exc:
        raise argparse.ArgumentTypeError(exc.message) from None


def read_password(args: argparse.Namespace) -> str:
    """From --password-file, --password (with a warning), or the prompt, asked twice."""
    if args.password_file:
        try:
            text = Path(args.password_file).read_text()
        except OSError as exc:
            raise UsageError(f"--password-file {args.password_file}: {exc.strerror}") from None
        password = text.splitlines()[0] if text else ""
    elif args.password is not None:
        print(HISTORY_WARNING, file=sys.stderr)
        password = args.password
    else:
        if not sys.stdin.isatty():
            raise UsageError("no password: give --password-file FILE (stdin is not a terminal)")
        password = getpass.getpass(f"Password for {args.user}: ")
        if getpass.getpass("Again: ") != password:
            raise UsageError("the two passwords differ")
    if not password:
        raise UsageError("the password is empty")
    return password


def cmd_add(args: argparse.Namespace) -> int:
    password = read_password(args)
    mechanisms = list(dict.fromkeys(args.mechanism or [DEFAULT_MECHANISM]))
    for name in mechanisms:
        m = MECHANISMS[name]
        if not m.min_iterations <= args.iterations <= m.max_iterations:
            raise UsageError(
                f"--iterations {args.iterations}: {name} takes "
                f"{m.min_iterations}..{m.max_iterations}"
            )
    ups = [
        UserScramCredentialUpsertion(args.user, m, password, args.iterations) for m in mechanisms
    ]
    with admin_from_args(args) as admin:
        admin.alter_user_scram_credentials(ups)
    print(f"user {args.user}: {', '.join(mechanisms)} set ({args.iterations} iterations)")
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    with admin_from_args(args) as admin:
        found = admin.describe_user_scram_credentials(args.users or None)
    rows = [(u, i.mechanism, i.iterations) for u in sorted(found) for i in found[u]]
    if wants_json(args):
        emit_json({"users": [{"user": u, "mechanism": m, "iterations": n} for u, m, n in rows]})
        return 0
    print_lines(table_lines(["USER", "MECHANISM", "ITERATIONS"], rows))
    return 0


def cmd_remove(args: argparse.Namespace) -> int:
    with admin_from_args(args) as admin:
        mechanisms = args.mechanism
        if not mechanisms:
            found = admin.describe_user_scram_credentials([args.user])
            mechanisms = [i.mechanism for i in found.get(args.user, [])]
        mechanisms = list(dict.fromkeys(mechanisms))
        deletions = [UserScramCredentialDeletion(args.user, m) for m in mechanisms]
        admin.alter_user_scram_credentials(deletions=deletions)
    print(f"user {args.user}: {', '.join(mechanisms)} removed")
    return 0
