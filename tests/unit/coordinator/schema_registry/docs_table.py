"""The compatibility tables of docs/schema-registry.md, read back so the tests check every row,
and the check of one row under one level that each format's table test makes.

Each format has a section `### <format>` under `## Compatibility` with a table `| change |
BACKWARD | FORWARD |` whose cells are `yes` or `no` (anything after the word is a remark).
"""

from __future__ import annotations

from pathlib import Path

from coordinator.schema_registry import compat
from coordinator.schema_registry.compat import Schema

DOC = Path(__file__).resolve().parents[4] / "docs" / "schema-registry.md"


def table(heading: str) -> dict[str, tuple[bool, bool]]:
    """{change: (BACKWARD, FORWARD)} of the table under `### heading`."""
    lines = DOC.read_text().splitlines()
    start = lines.index(f"### {heading}")
    rows: dict[str, tuple[bool, bool]] = {}
    for line in lines[start + 1 :]:
        if line.startswith("#"):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3 or cells[0] in ("change", "---"):
            continue
        rows[cells[0]] = (_yes(cells[1]), _yes(cells[2]))
    assert rows, f"no table under ### {heading} in {DOC}"
    return rows


def _yes(cell: str) -> bool:
    word = cell.split()[0]
    assert word in ("yes", "no"), cell
    return word == "yes"


def expected(level: str, backward: bool, forward: bool) -> bool:
    """Whether a change that is `backward` and `forward` compatible passes under `level`."""
    base = level.removesuffix("_TRANSITIVE")
    return {"NONE": True, "BACKWARD": backward, "FORWARD": forward,
            "FULL": backward and forward}[base]  # fmt: skip


def check_row(
    schema_type: str, level: str, change: str, old: str, new: str, backward: bool, forward: bool
) -> None:
    """`new` registered over `old` under `level` passes exactly when the row says it does."""
    problems = compat.check(level, Schema(schema_type, new), [Schema(schema_type, old)])
    assert (not problems) == expected(level, backward, forward), (change, problems)
