"""`odradek chaos run|faults|check` (runner.py does the work; this is the argument surface).

odradek chaos run    [--dir D] [--cycles N | --duration S] [--seed S] [--faults LIST]
                     [--workload native|kafka|txn|share] [--rate R] [--json FILE]
odradek chaos faults [--dir D] [--cycles N | --duration S] [--seed S] [--faults LIST]
(both also take --command-config FILE: how their clients log in; without it, a secure --dir
cluster's own client.properties, as `cluster up --secure` wrote it)
odradek chaos check  FILE [-o json]   re-check a record written by `run --json`

LIST is comma-separated fault kinds (deploy/chaos/plan.py; default: all of them, kill-txn-coord
only with --workload txn, kill-member and kill-share-coord only with --workload share; kinds
this machine or cluster cannot do are skipped with one line saying why). Without --seed a seed
is drawn and printed; the same seed gives the same fault schedule. `run` and `faults` print one
line per fault on stdout; on a terminal (or with --progress) a bar on stderr also counts the
faults done of the schedule and the records acknowledged so far.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path
from typing import Any

from deploy.chaos import checker, plan, runner, share_checker, share_run, txn_checker, txn_run
from deploy.cli_output import (
    done_text,
    emit_json,
    meter,
    output_options,
    print_lines,
    progress_options,
    table_lines,
    wants_json,
)
from deploy.cluster import DEFAULT_DIR
from protocol.errors import UsageError

DEFAULT_CYCLES = 12


def add_parser(sub: Any) -> None:
    p = sub.add_parser("chaos", help="faults while a workload runs, and a check of what was kept")
    csub = p.add_subparsers(dest="chaos_command", metavar="ACTION", required=True)
    common = argparse.ArgumentParser(add_help=False, parents=[progress_options(argparse.SUPPRESS)])
    common.add_argument("--dir", default=DEFAULT_DIR, help="the local cluster's directory")
    howlong = common.add_mutually_exclusive_group()
    howlong.add_argument("--cycles", type=int, help=f"fault cycles (default {DEFAULT_CYCLES})")
    howlong.add_argument("--duration", type=float, help="seconds of faults instead of --cycles")
    common.add_argument("--seed", type=int, help="the schedule's seed (default: drawn, printed)")
    common.add_argument("--faults", help=f"comma-separated kinds: {','.join(plan.KINDS)}")
    common.add_argument(
        "--command-config", type=Path, metavar="FILE", default=argparse.SUPPRESS,
        help="client properties (security.protocol, sasl.*, ssl.*; default: the --dir "
        "cluster's client.properties when it is secure)",
    )  # fmt: skip
    run = csub.add_parser("run", parents=[common], help="faults plus a workload, then a check")
    run.add_argument("--workload", choices=("native", "kafka", "txn", "share"), default="native")
    run.add_argument("--rate", type=float, default=400.0, help="records/s, all producers")
    run.add_argument("--json", dest="json_path", metavar="FILE", help="write the whole record")
    run.set_defaults(func=lambda a: _with_bar(a, _runner_for(a.workload)))
    faults = csub.add_parser("faults", parents=[common], help="the faults alone, as a timeline")
    faults.add_argument("--topic", help="aim at this topic's leaders (default: created)")
    faults.set_defaults(func=lambda a: _with_bar(a, runner.run_faults))
    chk = csub.add_parser(
        "check", parents=[output_options(argparse.SUPPRESS)],
        help="check a record written by `chaos run --json`",
    )  # fmt: skip
    chk.add_argument("file", metavar="FILE")
    chk.set_defaults(func=lambda a: check_file(a.file, wants_json(a)))


def _runner_for(workload: str) -> Any:
    """runner.run, with the transactional workload's body for --workload txn and the share
    group's for --workload share (whose own cluster gets lower group.share.min.* bounds)."""
    if workload == "txn":
        return lambda options, out: runner.run(options, out, txn_run.run_txn)
    if workload == "share":

        def share(options: runner.Options, out: Any) -> int:
            options.extra["broker_settings"] = share_run.SHARE_BROKER_SETTINGS
            return runner.run(options, out, share_run.run_share)

        return share
    return runner.run


def _say(line: str) -> None:
    print(line, flush=True)


def _with_bar(args: argparse.Namespace, run: Any) -> int:
    """runner.run or runner.run_faults, with a bar of the faults done (and records acked)."""
    options = _options(args)
    with meter(args, "chaos", total=options.cycles) as bar:

        def on_fault(done: int, total: int, acked: int | None) -> None:
            detail = done_text(done, total, "faults")
            bar.update(done, total, detail if acked is None else f"{detail}, {acked:,} acked")

        options.on_fault = on_fault
        return int(run(options, _say))


def _options(args: argparse.Namespace) -> runner.Options:
    try:
        kinds = plan.parse_kinds(args.faults)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    workload = getattr(args, "workload", "native")
    if args.faults in (None, "all"):  # no transactional ids, or no share group, to aim at
        kinds = [k for k in kinds if (k not in plan.TXN_KINDS or workload == "txn")
                 and (k not in plan.SHARE_KINDS or workload == "share")]  # fmt: skip
    if args.cycles is not None and args.cycles < 1:
        raise UsageError("--cycles must be at least 1")
    if args.duration is not None and args.duration <= 0:
        raise UsageError("--duration must be positive")
    rate = getattr(args, "rate", 400.0)
    if rate <= 0:
        raise UsageError("--rate must be positive")
    cycles = args.cycles or (plan.cycles_for(args.duration) if args.duration else DEFAULT_CYCLES)
    seed = args.seed if args.seed is not None else random.randrange(1 << 31)
    return runner.Options(
        dir=args.dir, cycles=cycles, seed=seed, kinds=kinds,
        workload=getattr(args, "workload", "native"), rate=rate,
        json_path=getattr(args, "json_path", None), topic=getattr(args, "topic", None),
        command_config=getattr(args, "command_config", None),
    )  # fmt: skip


def check_file(path: str, as_json: bool = False) -> int:
    try:
        doc = json.loads(Path(path).read_text())
        if doc.get("workload") == "txn":
            findings = txn_checker.check(txn_checker.TxnRunRecord.from_json(doc["record"]))
        elif doc.get("workload") == "share":
            record = share_checker.ShareRunRecord.from_json(doc["record"])
            findings = share_checker.check(record)
        else:
            findings = checker.check(checker.RunRecord.from_json(doc["record"]))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise UsageError(f"{path} is not a record of `chaos run --json`: {exc}") from None
    verdict = checker.passed(findings)
    if as_json:
        emit_json({"findings": [{"check": f.check, "ok": f.ok, "detail": f.detail}
                                for f in findings],
                   "verdict": "PASS" if verdict else "FAIL"})  # fmt: skip
        return 0 if verdict else 1
    rows = [(f.check, "PASS" if f.ok else "FAIL", f.detail) for f in findings]
    print_lines(table_lines(("CHECK", "VERDICT", "DETAIL"), rows))
    print(f"verdict: {'PASS' if verdict else 'FAIL'}")
    sys.stdout.flush()
    return 0 if verdict else 1
