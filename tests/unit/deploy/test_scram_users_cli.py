"""deploy/users_cli.py without a broker: where the password comes from (a file's first line,
--password with a warning, never an empty one, no prompt without a terminal) and the
mechanism and iteration checks, each one UsageError line."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from deploy.cli import build_parser
from deploy.users_cli import HISTORY_WARNING, cmd_add, read_password
from protocol.errors import UsageError


def parse(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(list(argv))


def test_password_file_first_line(tmp_path: Path) -> None:
    f = tmp_path / "pw"
    f.write_text("s3cret\nignored\n")
    assert read_password(parse("users", "add", "alice", "--password-file", str(f))) == "s3cret"


def test_password_flag_warns_about_shell_history(capsys: pytest.CaptureFixture[str]) -> None:
    assert read_password(parse("users", "add", "alice", "--password", "pw")) == "pw"
    assert HISTORY_WARNING in capsys.readouterr().err


def test_refusals(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "empty"
    empty.write_text("")
    with pytest.raises(UsageError, match="empty"):
        read_password(parse("users", "add", "alice", "--password-file", str(empty)))
    with pytest.raises(UsageError, match="--password-file"):
        read_password(parse("users", "add", "alice", "--password-file", str(tmp_path / "no")))
    monkeypatch.setattr("sys.stdin.isatty", lambda: False)
    with pytest.raises(UsageError, match="stdin is not a terminal"):
        read_password(parse("users", "add", "alice"))
    with pytest.raises(UsageError, match=r"4096\.\.16384"):
        cmd_add(parse("users", "add", "alice", "--iterations", "99", "--password", "pw"))


def test_mechanisms_are_checked_and_named_as_kafka(capsys: pytest.CaptureFixture[str]) -> None:
    args = parse(
        "users", "add", "a", "--mechanism", "scram-sha-256", "--mechanism", "SCRAM-SHA-512"
    )
    assert args.mechanism == ["SCRAM-SHA-256", "SCRAM-SHA-512"]
    with pytest.raises(SystemExit):
        parse("users", "add", "a", "--mechanism", "PLAIN")
    assert "not a SCRAM mechanism" in capsys.readouterr().err
