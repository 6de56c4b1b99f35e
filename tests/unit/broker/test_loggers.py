"""The broker setting logger_levels (broker/loggers.py): parsed, refused in one line when wrong,
and applied to the broker's log (in a child process: logging's state is process-wide)."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import pytest

from broker.config import load_config
from broker.loggers import TRACE, parse_logger_levels
from protocol.errors import UsageError

REPO = Path(__file__).resolve().parents[3]


def test_levels_by_logger_with_kafkas_names() -> None:
    assert parse_logger_levels("") == {}
    assert parse_logger_levels(" root=WARN , odradek.broker.sasl=DEBUG,kazoo=OFF,x=TRACE") == {
        "root": logging.WARNING,
        "odradek.broker.sasl": logging.DEBUG,
        "kazoo": logging.CRITICAL + 1,
        "x": TRACE,
    }


def test_read_from_the_config_file(tmp_path: Path) -> None:
    path = tmp_path / "broker.toml"
    path.write_text('logger_levels = "root=ERROR,odradek.broker.sasl=DEBUG"\n')
    config = load_config(path, broker_id=1, log_dir=str(tmp_path))
    assert config.logger_levels == "root=ERROR,odradek.broker.sasl=DEBUG"


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ("odradek.broker.sasl", "'odradek.broker.sasl' is not logger=LEVEL"),
        ("=DEBUG", "'=DEBUG' is not logger=LEVEL"),
        ("odradek..broker=DEBUG", "is not logger=LEVEL"),
        ("odradek.broker=debug", "odradek.broker has level 'debug', not one of TRACE, DEBUG"),
        ("root=VERBOSE", "root has level 'VERBOSE'"),
        ("root=INFO,root=DEBUG", "logger root is named twice"),
        ("odradek.authorizer=DEBUG", "odradek.authorizer is the setting authorizer_log_level"),
    ],
)
def test_a_bad_value_is_one_readable_line(tmp_path: Path, value: str, fragment: str) -> None:
    path = tmp_path / "broker.toml"
    path.write_text(f"logger_levels = {value!r}\n")
    for load in (lambda: load_config(path, broker_id=1, log_dir=str(tmp_path)),
                 lambda: load_config(None, broker_id=1, log_dir=str(tmp_path),
                                     logger_levels=value)):  # fmt: skip
        with pytest.raises(UsageError) as info:
            load()
        assert fragment in info.value.message and "\n" not in info.value.message
        assert info.value.message.startswith("logger_levels: ")


def _log_lines(levels: str) -> list[str]:
    """What a process that configured the broker's log with `levels` writes for one line from
    each of four loggers at four levels."""
    code = (
        "import logging\n"
        "from broker.loggers import configure_logging, parse_logger_levels\n"
        f"configure_logging(7, parse_logger_levels({levels!r}))\n"
        "logging.getLogger('odradek.broker.sasl').debug('sasl debug')\n"
        "logging.getLogger('odradek.broker.server').info('server info')\n"
        "logging.getLogger('odradek.controller').warning('controller warning')\n"
        "logging.getLogger('kazoo.client').log(5, 'kazoo trace')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                          text=True, timeout=30, check=True)  # fmt: skip
    return done.stderr.splitlines()


def test_the_default_is_info_in_the_brokers_format() -> None:
    lines = _log_lines("")
    assert [line.split(" ", 2)[2] for line in lines] == [
        "broker-7 INFO odradek.broker.server: server info",
        "broker-7 WARNING odradek.controller: controller warning",
    ]


def test_a_logger_below_root_and_root_above_info() -> None:
    lines = _log_lines("root=WARN,odradek.broker.sasl=DEBUG,kazoo=TRACE")
    assert [line.split(" ", 4)[4] for line in lines] == [
        "odradek.broker.sasl: sasl debug",  # its own level, below root's
        "odradek.controller: controller warning",  # root's WARN: the INFO line is gone
        "kazoo.client: kazoo trace",  # `kazoo` covers kazoo.client
    ]
    assert " TRACE kazoo.client" in lines[2]
