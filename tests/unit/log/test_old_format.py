"""Data directories of odradek's pre-Kafka record format (magic 1) are refused, never recovered.

Magic-1 batches had the same 61-byte header and CRC32C span as Kafka's v2, with msgpack rows
for records: to recovery they look like whole batches of a wrong magic, and cutting them as a
torn tail would silently drop the partition's data. The broker must stop with one line instead.
"""

from __future__ import annotations

import struct
import subprocess
import sys
from pathlib import Path

import crc32c
import msgpack
import pytest

from broker.log.log import CLEAN_SHUTDOWN_FILE
from broker.log.segment_recovery import LogFormatError
from protocol.batch import CRC_START, HEADER

from .conftest import T0, OpenLog, batch, read_values

REPO = Path(__file__).resolve().parents[3]


def magic_1_batch(base_offset: int, values: list[bytes]) -> bytes:
    """A batch as odradek wrote them before Kafka's v2: magic 1, msgpack rows."""
    rows = [[i, 0, None, v, None] for i, v in enumerate(values)]
    payload = msgpack.packb(rows, use_bin_type=True)
    header = bytearray(HEADER.size)
    HEADER.pack_into(header, 0, base_offset, HEADER.size - 12 + len(payload), 0, 1, 0, 0,
                     len(values) - 1, T0, T0, -1, -1, -1, len(values))  # fmt: skip
    out = header + payload
    struct.pack_into(">I", out, 17, crc32c.crc32c(bytes(out[CRC_START:])))
    return bytes(out)


def write_old_log(directory: Path, segments: int = 1, clean: bool = False) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for s in range(segments):
        data = magic_1_batch(3 * s, [b"a", b"b"]) + magic_1_batch(3 * s + 2, [b"c"])
        path = directory / f"{3 * s:020d}.log"
        path.write_bytes(data)
        paths.append(path)
    if clean:
        (directory / CLEAN_SHUTDOWN_FILE).write_bytes(b"")
    return paths


@pytest.mark.parametrize("clean", [False, True], ids=["after a crash", "after a clean stop"])
def test_a_magic_1_log_is_refused_and_left_untouched(
    open_log: OpenLog, log_dir: Path, clean: bool
) -> None:
    paths = write_old_log(log_dir, segments=2, clean=clean)
    before = {p: p.read_bytes() for p in log_dir.iterdir()}
    assert set(paths) <= set(before)
    with pytest.raises(LogFormatError) as info:
        open_log()
    message = info.value.message
    assert message == (
        f"log directory {log_dir} holds odradek's pre-Kafka record format (magic 1); "
        "delete it and start again: there is no converter"
    )
    assert "\n" not in str(info.value)
    assert {p: p.read_bytes() for p in log_dir.iterdir()} == before  # nothing cut, no new file


def test_a_magic_1_segment_after_v2_ones_is_refused(open_log: OpenLog, log_dir: Path) -> None:
    log = open_log()
    log.append_as_leader(batch([b"new"]), 0)
    log.close()
    (log_dir / f"{1:020d}.log").write_bytes(magic_1_batch(1, [b"old"]))
    with pytest.raises(LogFormatError, match="magic 1"):
        open_log()


def test_a_torn_first_batch_is_still_recovery_business(open_log: OpenLog, log_dir: Path) -> None:
    """A first batch whose CRC does not hold is not a whole batch of another format: it is
    cut, as any corrupt batch (a crash while the segment's first write was under way)."""
    log = open_log()
    log.append_as_leader(batch([b"x" * 30]), 0)
    log.close_unclean()
    path = log_dir / f"{0:020d}.log"
    data = bytearray(path.read_bytes())
    data[16] = 1  # magic, outside the CRC...
    data[-1] ^= 0xFF  # ...and a CRC that fails
    path.write_bytes(bytes(data))
    assert read_values(open_log()) == []


def test_the_broker_refuses_to_start_with_one_line(tmp_path: Path) -> None:
    write_old_log(tmp_path / "logs" / "orders-0")
    code = (
        "import sys\n"
        "from deploy.cli import main\n"
        f"sys.exit(main(['broker', '--id', '1', '--port', '0', '--log-dir', "
        f"{str(tmp_path / 'logs')!r}, '--zookeeper', '127.0.0.1:1']))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    lines = [line for line in proc.stderr.splitlines() if "ERROR" in line or "error" in line]
    assert len(lines) == 1, proc.stderr
    assert lines[0].endswith(
        f"could not start: UNSUPPORTED_LOG_FORMAT: log directory {tmp_path / 'logs' / 'orders-0'}"
        " holds odradek's pre-Kafka record format (magic 1); delete it and start again: "
        "there is no converter"
    ), lines[0]
