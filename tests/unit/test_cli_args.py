"""`odradek` arguments: --bootstrap and --dir before or after the command, --dir for every
client command, and bad arguments as one line on stderr (exit 2), never a traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from deploy import cli
from deploy.cli_common import bootstrap_from_args

CLIENT_COMMANDS = [
    ["topics", "list"],
    ["topics", "describe", "t"],
    ["topics", "create", "t", "--partitions", "1"],
    ["topics", "delete", "t"],
    ["topics", "delete-records", "t", "--partition", "0", "--before", "3"],
    ["topics", "alter-config", "t", "--set", "retention.ms=1"],
    ["topics", "add-partitions", "t", "--partitions", "2"],
    ["topics", "elect-leaders"],
    ["topics", "reassign", "t", "--partition", "0", "--replicas", "1,2"],
    ["produce", "t"],
    ["consume", "t"],
    ["groups", "list"],
    ["groups", "describe", "g"],
    ["groups", "reset-offsets", "g", "--topic", "t", "--to-earliest"],
    ["groups", "delete", "g"],
]


@pytest.fixture
def local_cluster(tmp_path: Path) -> Iterator[Path]:
    """A cluster state file whose broker 1 is a running stand-in (its command line names the
    log dir, as a real broker's does): enough for `--dir` to find a bootstrap address."""
    cluster_dir = tmp_path / "c"
    log_dir = str(cluster_dir / "data" / "broker-1")
    fake = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", log_dir])
    cluster_dir.mkdir()
    state = {
        "version": 1, "host": "127.0.0.1", "session_timeout_ms": 6000,
        "zookeeper": {"connect": "127.0.0.1:1", "port": None, "pid": None},
        "brokers": [{"id": 1, "port": 40001, "pid": fake.pid, "log_dir": log_dir}],
    }  # fmt: skip
    (cluster_dir / "cluster.json").write_text(json.dumps(state))
    try:
        yield cluster_dir
    finally:
        fake.kill()
        fake.wait(timeout=5)


@pytest.mark.parametrize("command", CLIENT_COMMANDS, ids=lambda c: " ".join(c[:2]))
def test_bootstrap_before_or_after_the_command(command: list[str]) -> None:
    parser = cli.build_parser()
    before = parser.parse_args(["--bootstrap", "h:1", *command])
    after = parser.parse_args([*command, "--bootstrap", "h:1"])
    assert bootstrap_from_args(before) == bootstrap_from_args(after) == "h:1"


@pytest.mark.parametrize("command", CLIENT_COMMANDS, ids=lambda c: " ".join(c[:2]))
def test_every_client_command_takes_dir(command: list[str], local_cluster: Path) -> None:
    parser = cli.build_parser()
    for argv in (["--dir", str(local_cluster), *command], [*command, "--dir", str(local_cluster)]):
        assert bootstrap_from_args(parser.parse_args(argv)) == "127.0.0.1:40001"


def test_cluster_commands_take_dir_before_or_after(tmp_path: Path) -> None:
    parser = cli.build_parser()
    before = parser.parse_args(["--dir", str(tmp_path), "cluster", "status"])
    after = parser.parse_args(["cluster", "kill", "2", "--dir", str(tmp_path)])
    assert cli.cluster_dir(before) == cli.cluster_dir(after) == tmp_path
    assert cli.cluster_dir(parser.parse_args(["cluster", "status"])) == Path(".odradek")


def _one_line(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    try:
        code = cli.main(argv)
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    assert out == ""
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("odradek")
    return code, lines[0]


@pytest.mark.parametrize(
    "argv",
    [
        ["topics", "list", "--bootstrap"],
        ["--bootstrap"],
        ["--nope", "topics", "list"],
        ["cluster", "kill", "abc"],
        ["groups", "describe"],
        ["topics", "create", "t", "--partitions", "0"],
        ["consume"],
        ["produce", "t", "--partition", "-1"],
        ["bench", "nothing"],
    ],
)
def test_bad_arguments_are_one_line(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    code, line = _one_line(argv, capsys)
    assert code == 2
    assert ": error: " in line and "--help)" in line


def test_dir_and_bootstrap_together_or_a_missing_dir_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, line = _one_line(["--bootstrap", "h:1", "--dir", str(tmp_path), "topics", "list"], capsys)
    assert (code, line) == (2, "odradek: error: give --bootstrap or --dir, not both")
    code, line = _one_line(["topics", "list", "--dir", str(tmp_path / "none")], capsys)
    assert code == 2 and f"no local cluster in {tmp_path / 'none'}" in line
