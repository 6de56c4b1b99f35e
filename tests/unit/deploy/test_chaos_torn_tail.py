"""torn-tail's words say what was done to which partition's file (deploy/chaos/faults.py):
the partition, the segment, how much was cut of how much, and how much garbage followed."""

from __future__ import annotations

import random
from pathlib import Path

from deploy.chaos.faults import tear_tail

SEGMENT = "00000000000000000000.log"


def test_a_torn_segment_is_named_with_its_partition_and_the_bytes_cut_and_added(
    tmp_path: Path,
) -> None:
    part = tmp_path / "chaos-7-1"
    part.mkdir()
    (part / SEGMENT).write_bytes(bytes(5000))
    said = tear_tail(part, random.Random(3))
    rng = random.Random(3)
    cut, garbage = rng.randint(1, 60), rng.randint(1, 40)
    assert said == (f"chaos-7-1/{SEGMENT} cut by {cut} of its 5000 bytes, then {garbage} "
                    "garbage bytes appended")  # fmt: skip
    assert (part / SEGMENT).stat().st_size == 5000 - cut + garbage


def test_an_empty_segment_gets_garbage_and_says_so(tmp_path: Path) -> None:
    part = tmp_path / "chaos-7-3"
    part.mkdir()
    (part / "00000000000000000000.log").write_bytes(b"")
    said = tear_tail(part, random.Random(1))
    garbage = (part / SEGMENT).stat().st_size
    assert said == f"chaos-7-3/{SEGMENT} was empty: {garbage} garbage bytes written"
    assert tear_tail(tmp_path / "nothing", random.Random(1)) == "nothing has no segment to tear"
