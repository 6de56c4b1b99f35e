"""What the `odradek` CLI prints, against a real cluster: `-o json` of every listing command
parses and holds the right data, tables are aligned, progress bars appear on stderr when it is a
terminal (a real pseudo-terminal, `pty`) or `--progress` is given, and never in stdout; a plain
pipe gets plain lines with no control codes.

One module-scoped cluster, started by `odradek cluster up` itself (stderr on a pseudo-terminal:
its progress bar is the first thing tested) against the session's ZooKeeper, in a chroot. Tests
run in file order; the last one injects a fault (SIGTERM of a broker) and heals it.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import select
import struct
import subprocess
import termios
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from client import Admin
from deploy.cluster import LocalCluster
from deploy.zookeeper import ZkProcess
from tests.fixtures.cluster import CLI_TIMEOUT_S, odradek_command, run_odradek

pytestmark = pytest.mark.integration

ESC = "\x1b"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")
RICH_ENV = ("NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "COLUMNS", "LINES")


@dataclass
class Ran:
    code: int
    out: str
    err: str  # with a terminal's control codes, if it was one

    @property
    def err_text(self) -> str:
        """stderr as the terminal shows it, roughly: codes dropped, redraws as new lines."""
        return ANSI.sub("", self.err).replace("\r", "\n")


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in RICH_ENV and k != "ODRADEK_BOOTSTRAP"}
    env["TERM"] = "xterm-256color"
    return env


def run_tty(*args: str, cwd: Path, stdin: Path | None = None) -> Ran:
    """The CLI with stderr on a pseudo-terminal (200 columns) and stdout on a pipe."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
    with open(stdin or os.devnull, "rb") as source:
        proc = subprocess.Popen(
            [*odradek_command(), *args], cwd=cwd, env=_env(), stdin=source,
            stdout=subprocess.PIPE, stderr=slave,
        )  # fmt: skip
    os.close(slave)
    out: list[bytes] = []
    reader = threading.Thread(target=lambda: out.append(proc.stdout.read()))  # type: ignore[union-attr]
    reader.start()
    err = bytearray()
    deadline = time.monotonic() + CLI_TIMEOUT_S
    try:
        while True:
            assert time.monotonic() < deadline, f"{args} did not finish; stderr so far: {err!r}"
            ready, _, _ = select.select([master], [], [], 0.2)
            if not ready:
                if proc.poll() is not None:
                    break  # exited, and nothing more to read (its children may hold the pty)
                continue
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: every writer closed the terminal
                break
            if not data:
                break
            err += data
        code = proc.wait(timeout=CLI_TIMEOUT_S)
        reader.join(timeout=CLI_TIMEOUT_S)
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        reader.join(timeout=CLI_TIMEOUT_S)
        proc.stdout.close()  # type: ignore[union-attr]
    return Ran(code, out[0].decode() if out else "", err.decode(errors="replace"))


@dataclass(frozen=True)
class Cli:
    cwd: Path
    cluster_dir: Path
    up: Ran

    def run(self, *args: str, input: str | None = None, ok: bool = True) -> Ran:
        """Through pipes, as a script runs it: never a control code on either stream."""
        done = run_odradek(*args, cwd=self.cwd, input=input, env={"TERM": "xterm-256color"})
        assert ESC not in done.stdout and ESC not in done.stderr, (args, done.stderr)
        assert "Traceback" not in done.stderr
        if ok:
            assert done.returncode == 0, done.stderr
        return Ran(done.returncode, done.stdout, done.stderr)

    def json(self, *args: str) -> Any:
        return json.loads(self.run(*args, "-o", "json").out)


@pytest.fixture(scope="module")
def cli(zk_server: ZkProcess, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cli]:
    cwd = tmp_path_factory.mktemp("cli-output")
    zk = f"{zk_server.connect}/odradek-{uuid.uuid4().hex[:12]}"
    up = run_tty("cluster", "up", "--brokers", "3", "--zookeeper", zk, "--session-timeout-ms",
                 "4000", "--no-console", cwd=cwd)  # fmt: skip
    try:
        assert up.code == 0, up.err_text
        yield Cli(cwd, cwd / ".odradek", up)
    finally:
        if (cwd / ".odradek" / "cluster.json").exists():
            LocalCluster.open(cwd / ".odradek").down()


def column_starts(header: str) -> list[int]:
    return [m.start() for m in re.finditer(r"\S+", header)]


def assert_aligned(lines: list[str]) -> None:
    """Every column of the header starts where the same column starts on every row."""
    starts = column_starts(lines[0])
    for line in lines[1:]:
        cells = column_starts(line)
        assert all(s in cells or s >= len(line) for s in starts), (lines[0], line)
        assert all(s == 0 or line[s - 1] == " " for s in starts if s < len(line)), line


def wait_json(cli: Cli, check: Any, *args: str, timeout_s: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        doc = cli.json(*args)
        if check(doc):
            return doc
        assert time.monotonic() < deadline, f"timed out; last: {doc}"
        time.sleep(0.3)


# ----- cluster up, cluster status ----------------------------------------------------------


def test_cluster_up_draws_brokers_ready_on_a_terminal(cli: Cli) -> None:
    # stdout: the addresses, nothing else (native, Kafka, the schema registry's URLs)
    bootstrap, kafka, registry = cli.up.out.strip().splitlines()
    assert re.fullmatch(r"127\.0\.0\.1:\d+(,127\.0\.0\.1:\d+){2}", bootstrap), cli.up.out
    assert kafka.startswith("bootstrap.servers=") and ESC not in cli.up.out
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+(,http://127\.0\.0\.1:\d+){2}", registry)
    assert ESC in cli.up.err  # a bar was drawn...
    assert "cluster up" in cli.up.err_text and "3/3 registered, 3 ready" in cli.up.err_text
    assert "waiting for brokers:" not in cli.up.err_text  # ...instead of the plain lines
    assert "cluster ready: 3 broker(s)" in cli.up.err_text


def test_cluster_status_json_and_aligned_table(cli: Cli) -> None:
    doc = cli.json("cluster", "status", "--dir", str(cli.cluster_dir))
    truth = LocalCluster.open(cli.cluster_dir).status()
    assert [b["id"] for b in doc["brokers"]] == [s.id for s in truth] == [1, 2, 3]
    assert [b["pid"] for b in doc["brokers"]] == [s.pid for s in truth]
    assert all(b["state"] == "alive" and b["kafka_port"] for b in doc["brokers"])
    assert sum(b["controller"] for b in doc["brokers"]) == 1
    assert doc["zookeeper"]["pid"] is None and doc["zookeeper"]["state"] == "external"
    assert doc["bootstrap"] == cli.up.out.splitlines()[0]
    assert doc["schema_registry"] == LocalCluster.open(cli.cluster_dir).schema_registry_urls
    lines = cli.run("cluster", "status", "--dir", str(cli.cluster_dir)).out.splitlines()
    assert lines[3] == "schema registry " + ",".join(doc["schema_registry"])
    assert lines[4].split()[:4] == ["ID", "PID", "PORT", "KAFKA"]
    assert_aligned(lines[4:])


# ----- topics ------------------------------------------------------------------------------


def test_topics_list_and_describe_json_match_the_cluster(cli: Cli) -> None:
    cli.run("topics", "create", "js", "--partitions", "3", "--replication-factor", "2",
            "--config", "retention.ms=60000")  # fmt: skip
    listed = cli.json("topics", "list")
    js = {"name": "js", "partitions": 3, "replication_factor": 2, "internal": False}
    assert js in listed["topics"]
    doc = wait_json(
        cli, lambda d: all(p["status"] == "ok" for p in d["topics"][0]["partitions"]),
        "topics", "describe", "js",
    )  # fmt: skip
    [topic] = doc["topics"]
    assert topic["name"] == "js" and topic["partition_count"] == 3
    assert topic["replication_factor"] == 2 and topic["configs"] == {"retention.ms": "60000"}
    with Admin(bootstrap_servers=cli.up.out.splitlines()[0]) as admin:
        [truth] = admin.describe_topics(["js"])
    assert [(p["partition"], p["leader"], p["replicas"]) for p in topic["partitions"]] == [
        (p.partition, p.leader, p.replicas) for p in truth.partitions
    ]
    assert all(p["leader"] == p["replicas"][0] for p in topic["partitions"])  # a new topic

    values = "".join(f"v{i}\n" for i in range(30))
    cli.run("produce", "js", "--acks", "all", input=values)
    doc = cli.json("topics", "describe", "js", "--offsets")
    parts = doc["topics"][0]["partitions"]
    assert sum(p["high_watermark"] for p in parts) == 30
    assert all(p["log_start_offset"] == 0 for p in parts)


def test_topics_describe_table_aligns_labels_over_two_digit_partitions(cli: Cli) -> None:
    cli.run("topics", "create", "wide", "--partitions", "12", "--replication-factor", "2")
    wait_json(cli, lambda d: all(p["leader"] is not None for p in d["topics"][0]["partitions"]),
              "topics", "describe", "wide")  # fmt: skip
    lines = cli.run("topics", "describe", "wide", "--offsets").out.splitlines()
    assert lines[0].startswith("Topic: wide PartitionCount: 12 ReplicationFactor: 2")
    rows = lines[1:]
    assert len(rows) == 12 and rows[0].startswith("Topic: wide Partition: 0 ")
    for label in ("Leader:", "Replicas:", "Isr:", "LogStartOffset:", "HighWatermark:"):
        assert len({row.index(label) for row in rows}) == 1, (label, rows)


def test_errors_stay_one_line_on_stderr_in_json_mode(cli: Cli) -> None:
    for args in (("topics", "describe", "nosuch"), ("groups", "describe", "nosuch-group")):
        done = cli.run(*args, "-o", "json", ok=False)
        assert done.code == 1 and done.out == ""
        assert len(done.err.splitlines()) == 1 and done.err.startswith("odradek: error:")
    bad = cli.run("topics", "list", "-o", "yaml", ok=False)
    assert bad.code == 2 and "invalid choice" in bad.err and bad.out == ""


# ----- produce and consume: progress --------------------------------------------------------


def test_produce_and_consume_bars_on_a_terminal_never_in_stdout(cli: Cli, tmp_path: Path) -> None:
    cli.run("topics", "create", "bar", "--partitions", "2")
    wait_json(cli, lambda d: all(p["leader"] is not None for p in d["topics"][0]["partitions"]),
              "topics", "describe", "bar")  # fmt: skip
    lines = tmp_path / "lines.txt"
    lines.write_text("".join(f"record {i}\n" for i in range(5000)))
    produced = run_tty("produce", "bar", "--acks", "all", cwd=cli.cwd, stdin=lines)
    assert produced.code == 0, produced.err_text
    assert produced.out == "" and ESC in produced.err
    assert "producing to bar" in produced.err_text
    assert "100%" in produced.err_text and "5,000 records" in produced.err_text  # file: a total
    assert "produced 5000 record(s) to bar" in produced.err_text

    consumed = run_tty("consume", "bar", "--from-beginning", "--max-messages", "5000",
                       "--timeout-ms", "20000", cwd=cli.cwd)  # fmt: skip
    assert consumed.code == 0, consumed.err_text
    assert ESC not in consumed.out
    assert sorted(consumed.out.splitlines()) == sorted(f"record {i}" for i in range(5000))
    assert "5,000 records" in consumed.err_text and "100%" in consumed.err_text


def test_a_pipe_gets_plain_lines_unless_progress_is_asked(cli: Cli) -> None:
    plain = cli.run("produce", "bar", input="a\nb\n")
    assert plain.err == "produced 2 record(s) to bar\n"  # no bar, no control code
    asked = run_odradek("produce", "bar", "--progress", cwd=cli.cwd, input="c\n", env=_env())
    assert asked.returncode == 0 and asked.stdout == ""
    assert ESC in asked.stderr and "1 records" in ANSI.sub("", asked.stderr)
    off = run_tty("produce", "bar", "--no-progress", cwd=cli.cwd)
    assert off.code == 0 and ESC not in off.err and "produced 0 record(s)" in off.err


# ----- groups --------------------------------------------------------------------------------


def test_groups_list_and_describe_json_show_the_lag(cli: Cli) -> None:
    """Over 30 s (42 s measured on a loaded 2-core machine): five CLI processes in a row, each
    starting Python and the client, and a consume that waits for its group to form."""
    cli.run("topics", "create", "lagged", "--partitions", "1")
    wait_json(cli, lambda d: d["topics"][0]["partitions"][0]["leader"] is not None,
              "topics", "describe", "lagged")  # fmt: skip
    cli.run("produce", "lagged", "--acks", "all", input="".join(f"{i}\n" for i in range(10)))
    read = cli.run("consume", "lagged", "--group", "lag-g", "--from-beginning",
                   "--max-messages", "4", "--timeout-ms", "20000")  # fmt: skip
    assert read.out.splitlines() == ["0", "1", "2", "3"]

    listed = cli.json("groups", "list")
    assert {"group": "lag-g", "state": "Empty", "kind": None, "type": "classic"} in listed["groups"]
    doc = cli.json("groups", "describe", "lag-g")
    assert doc["group"] == "lag-g" and doc["state"] == "Empty" and doc["members"] == 0
    assert doc["partitions"] == [
        {"topic": "lagged", "partition": 0, "current_offset": 4, "log_end_offset": 10,
         "lag": 6, "owner": None},
    ]  # fmt: skip
    table = cli.run("groups", "list").out.splitlines()
    assert table[0].split() == ["GROUP", "STATE", "KIND", "TYPE"] and [
        "lag-g",
        "Empty",
        "-",
        "classic",
    ] in [line.split() for line in table]
    assert_aligned(table)
    described = cli.run("groups", "describe", "lag-g").out.splitlines()
    assert described[2].split() == ["lag-g", "lagged", "0", "4", "10", "6", "-"]
    assert_aligned(described[1:])


# ----- leaders and reassignment --------------------------------------------------------------


def test_reassign_and_elect_leaders_json_and_the_isr_bar(cli: Cli) -> None:
    before = cli.json("topics", "describe", "js")["topics"][0]["partitions"][0]
    target = [b for b in (1, 2, 3) if b not in before["replicas"]] + before["replicas"][:1]
    moved = run_tty("topics", "reassign", "js", "--partition", "0", "--replicas",
                    ",".join(map(str, target)), "-o", "json", cwd=cli.cwd)  # fmt: skip
    assert moved.code == 0, moved.err_text
    doc = json.loads(moved.out)  # stdout: the JSON document alone
    assert doc["done"] is True and doc["replicas"] == target == doc["target_replicas"]
    assert sorted(doc["isr"]) == sorted(target) and doc["leader"] in target
    assert "1/1 partitions done" in moved.err_text and ESC in moved.err

    elected = cli.json("topics", "elect-leaders", "js")
    results = {(p["topic"], p["partition"]): p for p in elected["partitions"]}
    assert set(results) == {("js", 0), ("js", 1), ("js", 2)}
    assert results[("js", 0)]["leader"] == target[0]  # now led by its preferred replica
    wait_json(cli, lambda d: d["topics"][0]["partitions"][0]["leader"] == target[0],
              "topics", "describe", "js")  # fmt: skip
    assert all(p["result"] in ("elected", "already-preferred") for p in results.values())


def test_add_partitions_alter_config_delete_records_json(cli: Cli) -> None:
    added = cli.json("topics", "add-partitions", "js", "--partitions", "4")
    assert added["partition_count"] == 4 and [p["partition"] for p in added["partitions"]] == [
        0, 1, 2, 3,
    ]  # fmt: skip
    altered = cli.json("topics", "alter-config", "js", "--set", "retention.ms=70000")
    assert altered["configs"] == {"retention.ms": "70000"}
    low = cli.json("topics", "delete-records", "js", "--partition", "1", "--before", "hw")
    assert low["topic"] == "js" and low["partition"] == 1 and low["low_watermark"] >= 0


# ----- chaos: last, it stops and restarts a broker ---------------------------------------------


def test_chaos_faults_bar_counts_faults_on_stderr_only(cli: Cli) -> None:
    done = run_tty("chaos", "faults", "--dir", str(cli.cluster_dir), "--cycles", "1",
                   "--seed", "3", "--faults", "term", cwd=cli.cwd)  # fmt: skip
    assert done.code == 0, done.err_text + done.out
    assert ESC not in done.out
    assert [line.split()[0] for line in done.out.splitlines() if line.startswith("[")] == ["[1/1]"]
    assert "1/1 faults" in done.err_text and ESC in done.err
