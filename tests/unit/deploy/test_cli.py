"""The CLI without a cluster: argument parsing, the pure helpers, and one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import pytest

from deploy import cli, cli_common, cli_lines
from deploy.processes import free_port
from protocol.errors import UsageError


class Part(NamedTuple):
    partition: int
    leader: int
    replicas: list[int]
    isr: list[int]


class Desc(NamedTuple):
    name: str
    partitions: list[Part]


class Rec(NamedTuple):
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None


@pytest.fixture(autouse=True)
def _no_env_bootstrap(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(cli_common.BOOTSTRAP_ENV, raising=False)
    monkeypatch.chdir(tmp_path)  # no ./.odradek here


def run_main(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        code = cli.main(argv)
    except SystemExit as exc:  # argparse's own errors
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line_error(err: str, *fragments: str) -> None:
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith("odradek: error:")]
    assert len(lines) == 1, err
    for fragment in fragments:
        assert fragment in lines[0], err


# ----- pure helpers -----------------------------------------------------------------------------


def test_parse_topic_configs() -> None:
    assert cli_lines.parse_topic_configs(["retention.ms=1000", " segment.bytes = 4096 "]) == {
        "retention.ms": "1000",
        "segment.bytes": "4096",
    }
    assert cli_lines.parse_topic_configs(["a=b=c"]) == {"a": "b=c"}
    assert cli_lines.parse_topic_configs(None) == {}
    for bad in ("retention.ms", "=5", "retention.ms=", " = "):
        with pytest.raises(UsageError, match="key=value"):
            cli_lines.parse_topic_configs([bad])


def test_parse_bootstrap() -> None:
    assert cli_common.parse_bootstrap("h1:9092, h2:09093,") == "h1:9092,h2:9093"
    for bad in ("h1", "h1:", ":9092", "h1:x", "h1:0", "h1:70000", " , "):
        with pytest.raises(UsageError):
            cli_common.parse_bootstrap(bad)


def test_resolve_bootstrap_order(tmp_path: Path) -> None:
    env = {cli_common.BOOTSTRAP_ENV: "e:2"}
    assert cli_common.resolve_bootstrap("f:1", env, tmp_path) == "f:1"
    assert cli_common.resolve_bootstrap(None, env, tmp_path) == "e:2"
    with pytest.raises(UsageError, match="no bootstrap address"):
        cli_common.resolve_bootstrap(None, {}, tmp_path)


def _write_state(cluster_dir: Path, brokers: list[tuple[int, int, int, str]]) -> None:
    cluster_dir.mkdir(parents=True, exist_ok=True)
    state = {
        "version": 1,
        "host": "127.0.0.1",
        "session_timeout_ms": 6000,
        "zookeeper": {"connect": "127.0.0.1:1", "port": None, "pid": None},
        "brokers": [
            {"id": i, "port": port, "pid": pid, "log_dir": log_dir}
            for i, port, pid, log_dir in brokers
        ],
    }
    (cluster_dir / "cluster.json").write_text(json.dumps(state))


def test_resolve_bootstrap_from_local_cluster_state(tmp_path: Path) -> None:
    cluster_dir = tmp_path / ".odradek"
    log_dir = str(cluster_dir / "data" / "broker-1")
    # a stand-in broker: a process whose command line names the log dir, as a real one does
    fake = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)", log_dir])
    try:
        _write_state(cluster_dir, [(1, 40001, fake.pid, log_dir), (2, 40002, 999_999, "x")])
        assert cli_common.resolve_bootstrap(None, {}, tmp_path) == "127.0.0.1:40001,127.0.0.1:40002"
    finally:
        fake.kill()
        fake.wait(timeout=5)
    with pytest.raises(UsageError, match="not running"):
        cli_common.resolve_bootstrap(None, {}, tmp_path)


def test_split_line() -> None:
    assert cli_lines.split_line(b"k:v:w", b":", 1) == (b"k", b"v:w")
    assert cli_lines.split_line(b"plain", None, 1) == (None, b"plain")
    assert cli_lines.split_line(b":v", b":", 1) == (b"", b"v")
    with pytest.raises(UsageError, match="line 7"):
        cli_lines.split_line(b"nokey", b":", 7)


def test_format_partition_seed_style_and_markers() -> None:
    assert (
        cli_common.format_partition("topic01", Part(1, 2, [2, 5], [2, 5]))
        == "Topic: topic01 Partition: 1 Leader: 2 Replicas: 2,5 Isr: 2,5"
    )
    offline = cli_common.format_partition("t", Part(0, -1, [3, 1], []))
    assert offline == "Topic: t Partition: 0 Leader: none Replicas: 3,1 Isr:   (offline)"
    under = cli_common.format_partition("t", Part(2, 3, [3, 1], [3]))
    assert under == "Topic: t Partition: 2 Leader: 3 Replicas: 3,1 Isr: 3  (under-replicated)"


def test_format_topic_sorts_partitions() -> None:
    desc = Desc("t", [Part(1, 2, [2, 3], [2, 3]), Part(0, 1, [1, 2], [1, 2])])
    lines = cli_lines.format_topic(desc)
    assert lines[0] == "Topic: t PartitionCount: 2 ReplicationFactor: 2 Configs:"
    header = cli_lines.format_topic(desc, {"segment.bytes": "1024", "retention.ms": "5"})[0]
    assert header.endswith("Configs: retention.ms=5,segment.bytes=1024")
    assert [line.split()[3] for line in lines[1:]] == ["0", "1"]


def test_format_record() -> None:
    rec = Rec(3, 42, b"k", b"caf\xc3\xa9 \xff")
    assert cli_lines.format_record(rec, False, False) == "café \ufffd"
    assert cli_lines.format_record(rec, True, True) == "3:42\tk\tcafé \ufffd"
    assert cli_lines.format_record(Rec(0, 0, None, None), True, False) == "null\tnull"


def test_stdin_chunks_split_lines_across_reads() -> None:
    import io

    data = b"a\nb\r\n\n  c  \nlast"
    for read_bytes in (1, 3, 1 << 16):
        chunks = list(cli_lines.stdin_chunks(io.BytesIO(data), read_bytes))
        assert [line for chunk in chunks for line in chunk] == [b"a", b"b", b"", b"  c  ", b"last"]
        assert all(chunks)
    assert list(cli_lines.stdin_chunks(io.BytesIO(b""))) == []
    assert list(cli_lines.stdin_chunks(io.BytesIO(b"one\n"))) == [[b"one"]]
    endless = io.BytesIO(b"x" * (cli_lines.MAX_LINE_BYTES + 10))
    with pytest.raises(UsageError, match="longer than"):
        list(cli_lines.stdin_chunks(endless))


# ----- parsing ------------------------------------------------------------------------------------


def test_parser_accepts_the_documented_commands() -> None:
    p = cli.build_parser()
    a = p.parse_args(["cluster", "up", "--brokers", "5", "--dir", "x", "--zookeeper", "h:1"])
    assert (a.brokers, a.dir, a.zookeeper) == (5, Path("x"), "h:1")
    assert p.parse_args(["cluster", "kill", "2"]).signal == "KILL"
    assert p.parse_args(["cluster", "kill", "2", "--signal", "stop"]).signal == "STOP"
    assert p.parse_args(["cluster", "down", "--purge"]).purge is True
    a = p.parse_args(["topics", "create", "t", "--partitions", "3", "--config", "a=1"])
    assert (a.name, a.partitions, a.replication_factor, a.config) == ("t", 3, None, ["a=1"])
    assert p.parse_args(["topics", "describe"]).name is None
    a = p.parse_args(["produce", "t", "--key-separator", ":", "--acks", "all"])
    assert (a.key_separator, a.acks, a.partition) == (":", "all", None)
    a = p.parse_args(["consume", "t", "--offset", "5", "--partition", "1", "--max-messages", "2"])
    assert (a.offset, a.partition, a.max_messages, a.from_beginning) == (5, 1, 2, False)
    a = p.parse_args(["broker", "--id", "1", "--port", "9092", "--log-dir", "/d"])
    assert (a.id, a.port, a.log_dir, a.zookeeper) == (1, 9092, ["/d"], None)
    a = p.parse_args(["broker", "--log-dir", "/a,/b", "--log-dir", "/c"])
    assert cli.log_dir_settings(a.log_dir) == {"log_dirs": ["/a", "/b", "/c"]}
    assert cli.log_dir_settings(["/d"]) == {"log_dir": Path("/d")}
    assert cli.log_dir_settings(None) == {}
    a = p.parse_args(["cluster", "up", "--log-dirs-per-broker", "2"])
    assert a.log_dirs_per_broker == 2


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["frobnicate"],
        ["cluster"],
        ["cluster", "kill"],
        ["cluster", "kill", "1", "--signal", "HUP"],
        ["cluster", "up", "--brokers", "0"],
        ["topics", "create", "t"],
        ["topics", "create", "t", "--partitions", "x"],
        ["consume", "t", "--from-beginning", "--offset", "3"],
        ["produce", "t", "--acks", "2"],
        ["bench", "nothing"],
        ["bench", "produce"],
    ],
)
def test_bad_arguments_give_usage_and_exit_2(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_main(argv, capsys)
    assert code == 2
    assert out == ""
    assert "Traceback" not in err
    assert "usage: odradek" in err
    assert err.strip().splitlines()[-1].startswith("odradek")


# ----- one-line errors from main() --------------------------------------------------------------


def test_bad_topic_config(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["topics", "create", "t", "--partitions", "1", "--config", "retention.ms"]
    code, _, err = run_main([*argv, "--bootstrap", "h:1"], capsys)
    assert code == 2
    assert_one_line_error(err, "--config expects key=value", "retention.ms")


def test_bad_bootstrap(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_main(["topics", "list", "--bootstrap", "nohost"], capsys)
    assert code == 2
    assert_one_line_error(err, "'nohost' is not HOST:PORT")


def test_bad_bootstrap_from_environment(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(cli_common.BOOTSTRAP_ENV, "a:b")
    code, _, err = run_main(["topics", "list"], capsys)
    assert code == 2
    assert_one_line_error(err, "'a:b' is not HOST:PORT")


def test_broker_config_errors(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run_main(["broker", "--id", "1", "--port", "9092"], capsys)
    assert code == 2
    assert_one_line_error(err, "log_dir")
    code, _, err = run_main(["broker", "--config", str(tmp_path / "missing.toml")], capsys)
    assert code == 2
    assert_one_line_error(err, "cannot read config file")
    bad = tmp_path / "bad.toml"
    bad.write_text("broker_id = 1\nlog_dir = '/x'\nno_such_setting = 3\n")
    code, _, err = run_main(["broker", "--config", str(bad)], capsys)
    assert code == 2
    assert_one_line_error(err, "no_such_setting")


def test_no_cluster_running(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_main(["topics", "list"], capsys)
    assert code == 2
    assert_one_line_error(err, "no bootstrap address", "cluster up")
    for argv in (["cluster", "status"], ["cluster", "kill", "1"], ["cluster", "down"]):
        code, _, err = run_main(argv, capsys)
        assert code == 2
        assert_one_line_error(err, "no local cluster in")


def test_offset_needs_partition(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_main(["consume", "t", "--offset", "3", "--bootstrap", "h:1"], capsys)
    assert code == 2
    assert_one_line_error(err, "--offset needs --partition")


def test_bench_is_wired_to_the_load_generators(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_main(["--help"], capsys)
    assert code == 0 and "bench" in out
    code, out, _ = run_main(["bench", "--help"], capsys)
    assert code == 0
    assert all(mode in out for mode in ("produce", "consume", "latency"))
    code, _, err = run_main(["bench", "produce", "--topic", "t", "--bootstrap", "x"], capsys)
    assert code == 2
    assert_one_line_error(err, "'x' is not HOST:PORT")


def test_unreachable_broker_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    port = free_port()  # nobody listens here
    code, _, err = run_main(["topics", "list", "--bootstrap", f"127.0.0.1:{port}"], capsys)
    assert code == 1
    assert_one_line_error(err, str(port))


def test_cluster_down_purge_without_state_removes_dir(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stale = tmp_path / "stale"
    (stale / "data").mkdir(parents=True)
    code, _, err = run_main(["cluster", "down", "--purge", "--dir", str(stale)], capsys)
    assert code == 0, err
    assert not stale.exists()


def test_console_script_errors_without_traceback(tmp_path: Path) -> None:
    cmds = [
        [sys.executable, "-m", "deploy.cli", "topics", "list", "--bootstrap", "bad"],
        [sys.executable, "-m", "deploy.cli", "cluster", "status", "--dir", str(tmp_path / "x")],
        [sys.executable, "-m", "deploy.cli", "nosuchcommand"],
    ]
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(Path(cli.__file__).parents[1])}
    for cmd in cmds:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=30, env=env)
        assert done.returncode == 2, done.stderr
        assert "Traceback" not in done.stderr
        assert done.stdout == ""
        assert done.stderr.strip().splitlines()[-1].startswith("odradek: error:"), done.stderr
