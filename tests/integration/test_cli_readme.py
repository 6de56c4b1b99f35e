"""Every command the README shows, run as a newcomer copies them, must end by itself.

One module-scoped cluster started by `odradek cluster up` (what `make cluster` runs) in a
temporary directory that stands for the checkout's root: `.venv` and `examples` are linked in,
so `.venv/bin/python examples/spark_key_counts.py ...` runs as written, and every command finds
the cluster through ./.odradek.

How the documents are read (`doc_steps`): an indented or fenced shell block holds commands
(lines whose first word is a program in PROGRAMS) and shown output (every other line); the
```python blocks run as scripts, consecutive ones together (the second kafka-python block uses
the first one's `kafka`), as pasted into one interpreter. The placeholders `127.0.0.1:PORT` and
`127.0.0.1:KAFKA_PORT` become this cluster's bootstrap lists, `http://127.0.0.1:REGISTRY_PORT`
its schema registry URLs. Each step runs in the document's
order, bounded by a hang guard (`GUARD_S`, generous: it catches a command that waits forever,
it does not time anything); each must exit 0 without a traceback, and a few outputs are
checked (`EXPECTED`). A command whose output the document says comes later (the compacted
topic's consume, once the log cleaner has run) is run again until it shows it (`EVENTUALLY`:
a condition and a generous deadline, never a fixed sleep).

Spark's JVMs run with tests/spark/jvm.py's options (C1 only, the serial GC: less CPU for a
small job, the same job).

What is not run as written, and why, is in SKIPPED and SHORTENED; `odradek cluster down` runs
last, because the README's first session ends with it and the sections after it use the
cluster again.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from deploy.cluster import LocalCluster
from tests.fixtures.cluster import run_odradek
from tests.spark.jvm import DRIVER_ENV, SPARK_JVM_OPTIONS

ROOT = Path(__file__).resolve().parents[2]
# The documents walked, in this order, and whether their Python blocks run: the README's are a
# quick start; those of docs/consumer-groups.md are patterns (`while True` services calling a
# `charge` the reader writes), not programs.
DOCS = {"README.md": True, "docs/cli.md": False, "docs/consumer-groups.md": False,
        "docs/console.md": False}  # fmt: skip
PROGRAMS = {"odradek", "kcat", "printf", "echo", "source", "make", "sleep", ".venv/bin/python",
            ".venv/bin/odradek"}  # fmt: skip
GUARD_S = 300.0  # per step; Spark's start and the example job take about a minute on 2 cores
# The compacted topic's result: the cleaner's next pass, within log.cleaner.backoff.ms (15 s)
# of the record that rolled the segment (3 to 16 s measured); generous for a loaded machine.
COMPACTION_DEADLINE_S = 120.0

SKIPPED = {  # a command's start -> why it is not run
    "make cluster": "the fixture runs `odradek cluster up`, which is what it runs",
    "make test": "runs the test tiers, this test included",
    "source .venv/bin/activate": "PATH starts with the virtual environment's bin/ instead",
    "odradek console": "a server: it runs until Ctrl-C, as the docs say (test_console.py)",
    "odradek groups remove-members": "needs the static members the docs' example starts "
    "(test_static_membership.py runs it against live ones)",
    "odradek groups describe billing-848": "needs the KIP-848 members the docs' example starts "
    "(test_native_kip848.py runs it against live ones)",
}
SHORTENED = {  # the same command with a smaller number, to keep the test affordable
    "odradek chaos run --cycles 12": ("--cycles 12", "--cycles 2"),
}
DEFERRED = "odradek cluster down"
NEEDS = {"| jq": "jq"}  # a line with this needs that program (not installed by `make`)
# The README's secure cluster (`cluster up --secure --dir secure`, its commands and its Python):
# tests/integration/test_secure_cluster.py runs them against a secure cluster of its own.
SECURE_MARKS = ("--dir secure", "SECURE_KAFKA_PORT")
FILES = {"big.txt": "".join(f"line {i}\n" for i in range(3000))}  # what docs/cli.md reads


@dataclass(frozen=True)
class Step:
    doc: str
    line: int  # of the command, or of a python block's first line
    kind: str  # "shell" | "python"
    text: str

    def where(self) -> str:
        return f"{self.doc}:{self.line}"


# ----- reading the documents -------------------------------------------------------------------


def code_blocks(markdown: str) -> Iterator[tuple[str, int, list[str]]]:
    """(kind, first line number, lines) of each code block: fenced (kind from its language,
    "shell" without one) or indented by four spaces after a blank line (kind "shell")."""
    lines = markdown.splitlines()
    i, after_blank = 0, True
    while i < len(lines):
        fence = re.fullmatch(r"```(\w*)\s*", lines[i])
        if fence:
            end = next((j for j in range(i + 1, len(lines)) if lines[j].startswith("```")), None)
            assert end is not None, f"line {i + 1}: a fence that never closes"
            lang = fence.group(1)
            kind = "shell" if lang in ("", "sh", "bash", "shell") else lang
            yield kind, i + 2, lines[i + 1 : end]
            i, after_blank = end + 1, False
        elif after_blank and lines[i].startswith("    "):
            start = i
            while i < len(lines) and (lines[i].startswith("    ") or not lines[i].strip()):
                i += 1
            yield "shell", start + 1, [line[4:] for line in lines[start:i]]
            after_blank = True
        else:
            after_blank = not lines[i].strip()
            i += 1


def shell_commands(first_line: int, lines: list[str]) -> Iterator[tuple[int, str]]:
    """(line number, command) of the lines that start with a program; a trailing backslash
    continues a command on the next line."""
    pending: tuple[int, str] | None = None
    for number, line in enumerate(lines, first_line):
        if pending is not None:
            pending = (pending[0], pending[1][:-1] + " " + line.strip())
        elif line.split(maxsplit=1)[:1] and line.split()[0] in PROGRAMS:
            pending = (number, line.strip())
        if pending is not None and not pending[1].endswith("\\"):
            yield pending
            pending = None


def doc_steps(doc: str, python: bool = True) -> list[Step]:
    steps: list[Step] = []
    for kind, first, lines in code_blocks((ROOT / doc).read_text()):
        if kind == "python" and python:
            if steps and steps[-1].kind == "python" and steps[-1].doc == doc:
                last = steps.pop()
                steps.append(Step(doc, last.line, "python", last.text + "\n" + "\n".join(lines)))
            else:
                steps.append(Step(doc, first, "python", "\n".join(lines)))
        elif kind == "shell":
            steps += [Step(doc, n, "shell", cmd) for n, cmd in shell_commands(first, lines)]
    return steps


def skip_reason(command: str) -> str | None:
    for start, why in SKIPPED.items():
        if command.startswith(start):
            return why
    if any(mark in command for mark in SECURE_MARKS):
        return "the secure cluster's section: test_secure_cluster.py runs it"
    for marker, program in NEEDS.items():
        if marker in command and shutil.which(program) is None:
            return f"{program} is not installed"
    return None


# ----- what the outputs must be ----------------------------------------------------------------


def _first_session(out: str, err: str) -> None:
    rows = sorted(line.split("\t")[1:] for line in out.splitlines())
    assert rows == [["k1", "hello"], ["k2", "world"]], out
    assert err.splitlines() == ["Processed a total of 2 messages"], err


def _key_counts(out: str, err: str) -> None:
    """The Spark example's counts: the five demo users, and user-1 from the README's Python
    example, which wrote to `clicks` before; then --timeout-ms ends the consume."""
    counts = sorted(tuple(line.split("\t")) for line in out.splitlines())
    want = [("alice", "170"), ("bob", "132"), ("carol", "99"), ("dave", "66"), ("erin", "33"),
            ("user-1", "1")]  # fmt: skip
    assert counts == want, out
    assert err.splitlines() == [f"Processed a total of {len(want)} messages"], err


EXPECTED: dict[str, Callable[[str, str], None]] = {  # a command's start -> check(stdout, stderr)
    "odradek consume events --from-beginning --max-messages 2 ": _first_session,
    ".venv/bin/odradek consume click-counts": _key_counts,
}

PROFILES_WRITTEN = ["0:0\tu1\talice", "0:1\tu2\tbob", "0:2\tu1\talice@home", "0:3\tu2\tbob@work",
                    "0:4\tu3\tcarol"]  # fmt: skip
PROFILES_COMPACTED = PROFILES_WRITTEN[2:]  # each key's latest value, at its own offset


def _profiles_compacted(out: str, err: str) -> bool:
    """The README's compacted topic: every record until the cleaner has run, then each key's
    latest value only (the u3 record rolled the segment that holds the first four)."""
    lines = out.splitlines()
    assert lines in (PROFILES_WRITTEN, PROFILES_COMPACTED), out
    return lines == PROFILES_COMPACTED


# a command's start -> (done(stdout, stderr), deadline s): run again until done
EVENTUALLY: dict[str, tuple[Callable[[str, str], bool], float]] = {
    "odradek consume profiles --from-beginning": (_profiles_compacted, COMPACTION_DEADLINE_S),
}


# ----- running them ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Newcomer:
    """A shell in the checkout's root (stood in for by `cwd`) with the cluster up."""

    cwd: Path
    bootstrap: str
    kafka_bootstrap: str
    registry: str  # the schema registry URLs `cluster up` printed

    def fill(self, text: str) -> str:
        return (
            text.replace("127.0.0.1:KAFKA_PORT", self.kafka_bootstrap)
            .replace("127.0.0.1:PORT", self.bootstrap)
            .replace("http://127.0.0.1:REGISTRY_PORT", self.registry)
        )

    def run(self, step: Step) -> tuple[str, str]:
        """Run one step; fail if it does not end within GUARD_S, exits non-zero or prints a
        traceback. Returns (stdout, stderr)."""
        if step.kind == "python":
            script = self.cwd / f"readme_{Path(step.doc).stem}_{step.line}.py"
            script.write_text(self.fill(step.text))
            argv = [sys.executable, script.name]
        else:
            argv = ["bash", "-c", self.fill(step.text)]
        env = {k: v for k, v in os.environ.items() if k != "ODRADEK_BOOTSTRAP"}
        env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
        env[DRIVER_ENV] = SPARK_JVM_OPTIONS  # tests/spark/jvm.py
        proc = subprocess.Popen(
            argv, cwd=self.cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, start_new_session=True,
        )  # fmt: skip
        try:
            out, err = proc.communicate(timeout=GUARD_S)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # bash and whatever it started
            out, err = proc.communicate()
            pytest.fail(f"{step.where()} did not end within {GUARD_S:.0f} s: {step.text}\n{err}")
        assert proc.returncode == 0, f"{step.where()} exited {proc.returncode}: {step.text}\n{err}"
        assert "Traceback" not in err, f"{step.where()}: {step.text}\n{err}"
        return out, err

    def run_until(self, step: Step, done: Callable[[str, str], bool], deadline_s: float) -> None:
        """Run `step` again until `done(stdout, stderr)`; fail after `deadline_s`. (Each run
        of a consume takes its --timeout-ms: no pause is needed between them.)"""
        deadline = time.monotonic() + deadline_s
        while True:
            out, err = self.run(step)
            if done(out, err):
                return
            assert time.monotonic() < deadline, (
                f"{step.where()}: not yet after {deadline_s} s:\n{out}"
            )


@pytest.fixture(scope="module")
def newcomer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Newcomer]:
    cwd = tmp_path_factory.mktemp("readme")
    (cwd / ".venv").symlink_to(sys.prefix)
    (cwd / "examples").symlink_to(ROOT / "examples")
    for name, text in FILES.items():
        (cwd / name).write_text(text)
    up = run_odradek("cluster", "up", cwd=cwd)
    try:
        assert up.returncode == 0, up.stderr
        bootstrap, kafka, registry, _console = up.stdout.strip().splitlines()
        yield Newcomer(cwd, bootstrap, kafka.removeprefix("bootstrap.servers="), registry)
    finally:
        if (cwd / ".odradek" / "cluster.json").exists():
            LocalCluster.open(cwd / ".odradek").down()


# ----- the tests -------------------------------------------------------------------------------


def test_the_documents_are_read_as_expected() -> None:
    """The reader finds the commands this module checks, so the walk below cannot pass by
    running nothing; and every consumer the docs show outside the README (whose commands the
    walk runs) stops by itself: `odradek consume` with --timeout-ms, kcat's with -e."""
    readme = [s.text for s in doc_steps("README.md")]
    for start in [*EXPECTED, *EVENTUALLY, DEFERRED,
                  ".venv/bin/python examples/spark_key_counts.py"]:  # fmt: skip
        assert any(text.startswith(start) for text in readme), start
    # the native client, kafka-python, the security section's confluent-kafka (run by
    # test_secure_cluster.py), the transactions section's confluent-kafka and native, and the
    # Spark section's exactly-once write, and the schema registry's Avro round trip
    assert sum(1 for s in doc_steps("README.md") if s.kind == "python") == 7
    for doc in [*list(DOCS)[1:], "examples/README.md"]:
        for step in doc_steps(doc):
            if step.text.startswith(("odradek consume", ".venv/bin/odradek consume")):
                assert "--timeout-ms" in step.text, step.where()
            if step.text.startswith("kcat") and re.search(r" -[CG] ", step.text):
                assert " -e" in step.text, step.where()


@pytest.mark.integration
@pytest.mark.parametrize("group", [[], ["--group", "fewer-g"]], ids=["assigned", "group"])
def test_consume_ends_after_timeout_ms_with_fewer_records_than_max_messages(
    newcomer: Newcomer, group: list[str]
) -> None:
    """Kafka's kafka-console-consumer --timeout-ms: with 3 records and --max-messages 5, it
    prints the 3, then exits 0 after that long without a record, with its one summary line."""
    topic = "fewer-" + ("group" if group else "assigned")
    ok = run_odradek("topics", "create", topic, "--partitions", "2", cwd=newcomer.cwd)
    assert ok.returncode == 0, ok.stderr
    ok = run_odradek("produce", topic, "--acks", "all", input="a\nb\nc\n", cwd=newcomer.cwd)
    assert ok.returncode == 0, ok.stderr
    done = run_odradek(
        "consume", topic, "--from-beginning", "--max-messages", "5", "--timeout-ms", "3000",
        *group, cwd=newcomer.cwd,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert sorted(done.stdout.splitlines()) == ["a", "b", "c"]
    assert done.stderr.splitlines() == ["Processed a total of 3 messages"]


@pytest.mark.integration
@pytest.mark.spark
@pytest.mark.slow  # the README's Spark example and chaos run, among all the rest
def test_every_command_of_the_readme_and_the_docs_ends_by_itself(newcomer: Newcomer) -> None:
    pytest.importorskip("pyspark")
    steps = [step for doc, python in DOCS.items() for step in doc_steps(doc, python)]
    deferred = [s for s in steps if s.text.startswith(DEFERRED)]
    checked: set[str] = set()
    for step in [s for s in steps if s not in deferred] + deferred:
        why = skip_reason(step.text)
        if why is not None:
            print(f"skipped {step.where()}: {step.text} ({why})")
            continue
        for start, (old, new) in SHORTENED.items():
            if step.text.startswith(start):
                step = Step(step.doc, step.line, step.kind, step.text.replace(old, new, 1))
        print(f"{step.where()}: {step.text.splitlines()[0]}")
        out, err = newcomer.run(step)
        for start, check in EXPECTED.items():
            if step.text.startswith(start):
                check(out, err)
                checked.add(start)
        for start, (done, deadline_s) in EVENTUALLY.items():
            if step.text.startswith(start):
                if not done(out, err):
                    newcomer.run_until(step, done, deadline_s)
                checked.add(start)
    assert checked == set(EXPECTED) | set(EVENTUALLY)
