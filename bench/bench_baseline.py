"""Today's main beside the working tree: the native cases against the code of a git ref.

`run_baseline(ref, ...)` (called by bench_cluster.py):

1. `git worktree add --detach <tmp>/src REF` (a separate directory: nothing in the working tree
   changes), removed at the end with `git worktree remove --force`, also on errors and Ctrl-C;
   the C modules its pyproject.toml lists are compiled into it (`build_extensions`).
2. Starts two clusters of one broker each, one per side, through each side's own CLI:
   `python -m deploy.cli cluster up --dir ... --brokers 1` run with cwd and PYTHONPATH set to
   that side's tree, so its ZooKeeper-registered brokers and its load generator run its code.
   The old code is never imported into this process (its state file and client differ).
3. For each round and case, runs the case on both sides back to back, alternating which goes
   first (A B, then B A), so both see the same machine state: bulk produce (`send_batch`),
   per-record `send()`, consume from the start (the bulk run's topic); 100 B records,
   1 partition, RF 1, acks=1, `odradek bench` (deploy/perf.py) of each side.
4. Stops both clusters (`cluster down --purge`, each with its own CLI).

Each row is the side's `odradek bench` JSON line plus side ("baseline" or "new"), ref, round
and client_cpu_s (the load generator's CPU seconds, which a busy machine disturbs less).
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_REF = "f419678"  # the last commit before the Kafka listener and RecordBatch v2 work
BROKERS = 1  # one partition is all the cases use: the other brokers would only add idle load
SIZE = 100
CASES = (("produce", "bulk"), ("produce", "send"), ("consume", "poll"))
CLI_TIMEOUT_S = 600


class BaselineError(Exception):
    """The baseline could not be set up (bad ref, git failed, its cluster did not start)."""


@dataclass
class Side:
    """One tree of code with its own cluster, driven through that tree's own CLI."""

    name: str  # "baseline" | "new"
    root: Path
    dir: Path  # its cluster directory
    bootstrap: str = ""
    brokers: int = BROKERS

    def env(self) -> dict[str, str]:
        """The environment of a process running this side's code: its tree on PYTHONPATH."""
        return dict(os.environ, PYTHONPATH=str(self.root))

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        cmd = [sys.executable, "-m", "deploy.cli", *args]
        return subprocess.run(
            cmd, cwd=self.root, env=self.env(), capture_output=True, text=True,
            timeout=CLI_TIMEOUT_S,
        )  # fmt: skip

    def up(self) -> None:
        args = ["cluster", "up", "--dir", str(self.dir), "--brokers", str(self.brokers)]
        if (self.root / "deploy" / "console").is_dir():
            args.append("--no-console")  # trees that have one: no console process to compete
        out = self.cli(*args)
        lines = [line for line in out.stdout.splitlines() if line.strip()]
        if out.returncode != 0 or not lines:
            raise BaselineError(f"{self.name} cluster did not start: {out.stderr.strip()[-300:]}")
        self.bootstrap = lines[0].strip()  # both CLIs print the native bootstrap first

    def down(self) -> None:
        self.cli("cluster", "down", "--dir", str(self.dir), "--purge")

    def bench(self, *args: str) -> dict:
        cpu_before = _children_cpu_s()
        out = self.cli("bench", *args, "--bootstrap", self.bootstrap)
        if out.returncode != 0:
            return {"system": "odradek", "error": out.stderr.strip()[-500:], "args": list(args)}
        row = dict(json.loads(out.stdout.strip().splitlines()[-1]))
        row["client_cpu_s"] = round(_children_cpu_s() - cpu_before, 3)
        return row

    def case(self, mode: str, api: str, topic: str, n: int) -> dict:
        if mode == "consume":
            return self.bench("consume", "--topic", topic, "--num-records", str(n))
        made = self.cli("topics", "create", topic, "--partitions", "1", "--bootstrap",
                        self.bootstrap)  # fmt: skip
        if made.returncode != 0:
            return {"system": "odradek", "error": made.stderr.strip()[-500:], "topic": topic}
        per_record = ["--per-record"] if api == "send" else []
        return self.bench("produce", "--topic", topic, "--num-records", str(n),
                          "--record-size", str(SIZE), "--acks", "1", *per_record)  # fmt: skip


def _children_cpu_s() -> float:
    """CPU seconds of this process's waited-for children: the delta around one `odradek bench`
    is that load generator's own CPU, start-up included (the brokers are not our children).
    It moves much less than wall-clock figures on a shared machine."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _git(*args: str) -> str:
    out = subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True)
    if out.returncode != 0:
        raise BaselineError(f"git {' '.join(args)}: {out.stderr.strip()}")
    return out.stdout.strip()


@contextlib.contextmanager
def worktree(ref: str) -> Iterator[tuple[Path, str]]:
    """A detached worktree of `ref` in a temporary directory: (its path, the short commit)."""
    commit = _git("rev-parse", "--verify", "--short", f"{ref}^{{commit}}")
    tmp = Path(tempfile.mkdtemp(prefix="odradek-baseline-"))
    src = tmp / "src"
    try:
        _git("worktree", "add", "--detach", str(src), commit)
        build_extensions(src)
        yield src, commit
    finally:
        with contextlib.suppress(BaselineError):
            _git("worktree", "remove", "--force", str(src))
        shutil.rmtree(tmp, ignore_errors=True)


@contextlib.contextmanager
def two_sides(
    ref: str, old: str = "baseline", brokers: int = BROKERS, old_root: Path | None = None
) -> Iterator[tuple[list[Side], str]]:
    """A worktree of `ref` and two running clusters, [the old side, "new" (this tree)], with the
    short commit; both clusters down on the way out. `old_root`: run the old side from another
    tree than the worktree (the working tree itself, to compare a tree with itself)."""
    with worktree(ref) as (src, commit):
        sides = [Side(old, old_root or src, src.parent / f"cluster-{old}", brokers=brokers),
                 Side("new", ROOT, src.parent / "cluster-new", brokers=brokers)]  # fmt: skip
        try:
            for side in sides:
                side.up()
            yield sides, commit
        finally:
            for side in sides:
                side.down()


def build_extensions(src: Path) -> None:
    """Compile the C modules `src`'s pyproject.toml lists (`[tool.setuptools] ext-modules`) in
    place, as `pip install -e` does for the working tree: a ref from after the C record codec
    cannot import without them. gcc and the running Python's headers, one module at a time."""
    with open(src / "pyproject.toml", "rb") as f:
        modules = tomllib.load(f).get("tool", {}).get("setuptools", {}).get("ext-modules", [])
    include = sysconfig.get_paths()["include"]
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    for module in modules:
        target = src / (module["name"].replace(".", "/") + suffix)
        sources = [str(src / s) for s in module["sources"]]
        cmd = ["gcc", "-shared", "-fPIC", "-O3", "-DNDEBUG", "-fwrapv", f"-I{include}",
               *sources, "-o", str(target)]  # fmt: skip
        out = subprocess.run(cmd, capture_output=True, text=True)
        if out.returncode != 0:
            raise BaselineError(f"building {module['name']} failed: {out.stderr.strip()[-500:]}")


def run_baseline(
    ref: str, n: int, rounds: int, report: Callable[[dict], None] = lambda _r: None
) -> list[dict]:
    """Every case on both sides, `rounds` times; bulk and consume `n` records, send() n/4."""
    rows: list[dict] = []
    with two_sides(ref) as (sides, commit):
        for r in range(rounds):
            order = sides if r % 2 == 0 else sides[::-1]
            for mode, api in CASES:
                count = max(n // 4, 1000) if api == "send" else n
                for side in order:
                    topic = f"ab-{'send' if api == 'send' else 'bulk'}-{r}"
                    row = side.case(mode, api, topic, count)
                    ref = commit if side.name == "baseline" else "working tree"
                    row.update(side=side.name, ref=ref, round=r, partitions=1)
                    rows.append(row)
                    report(row)
    return rows
