"""`odradek chaos run|faults|check` (runner.py does the work; this is the argument surface).

odradek chaos run    [--dir D] [--cycles N | --duration S] [--seed S] [--faults LIST]
                     [--workload native|kafka] [--rate R] [--json FILE]
odradek chaos faults [--dir D] [--cycles N | --duration S] [--seed S] [--faults LIST]
odradek chaos check  FILE      re-check a record written by `run --json`

LIST is comma-separated fault kinds (deploy/chaos/plan.py; default: all of them; kinds this
machine or cluster cannot do are skipped with one line saying why). Without --seed a seed is
drawn and printed; the same seed gives the same fault schedule.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path
from typing import Any

from deploy.chaos import checker, plan, runner
from deploy.cluster import DEFAULT_DIR
from protocol.errors import UsageError

DEFAULT_CYCLES = 12


def add_parser(sub: Any) -> None:
    p = sub.add_parser("chaos", help="faults while a workload runs, and a check of what was kept")
    csub = p.add_subparsers(dest="chaos_command", metavar="ACTION", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--dir", default=DEFAULT_DIR, help="the local cluster's directory")
    howlong = common.add_mutually_exclusive_group()
    howlong.add_argument("--cycles", type=int, help=f"fault cycles (default {DEFAULT_CYCLES})")
    howlong.add_argument("--duration", type=float, help="seconds of faults instead of --cycles")
    common.add_argument("--seed", type=int, help="the schedule's seed (default: drawn, printed)")
    common.add_argument("--faults", help=f"comma-separated kinds: {','.join(plan.KINDS)}")
    run = csub.add_parser("run", parents=[common], help="faults plus a workload, then a check")
    run.add_argument("--workload", choices=("native", "kafka"), default="native")
    run.add_argument("--rate", type=float, default=400.0, help="records/s, all producers")
    run.add_argument("--json", dest="json_path", metavar="FILE", help="write the whole record")
    run.set_defaults(func=lambda a: runner.run(_options(a), _say))
    faults = csub.add_parser("faults", parents=[common], help="the faults alone, as a timeline")
    faults.add_argument("--topic", help="aim at this topic's leaders (default: created)")
    faults.set_defaults(func=lambda a: runner.run_faults(_options(a), _say))
    chk = csub.add_parser("check", help="check a record written by `chaos run --json`")
    chk.add_argument("file", metavar="FILE")
    chk.set_defaults(func=lambda a: check_file(a.file))


def _say(line: str) -> None:
    print(line, flush=True)


def _options(args: argparse.Namespace) -> runner.Options:
    try:
        kinds = plan.parse_kinds(args.faults)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
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
    )  # fmt: skip


def check_file(path: str) -> int:
    try:
        doc = json.loads(Path(path).read_text())
        record = checker.RunRecord.from_json(doc["record"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise UsageError(f"{path} is not a record of `chaos run --json`: {exc}") from None
    findings = checker.check(record)
    for f in findings:
        print(f"{f.check:<22} {'PASS' if f.ok else 'FAIL':<8} {f.detail}")
    verdict = checker.passed(findings)
    print(f"verdict: {'PASS' if verdict else 'FAIL'}")
    sys.stdout.flush()
    return 0 if verdict else 1
