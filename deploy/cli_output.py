"""How `odradek` shows what it did: aligned tables, `--output json`, and progress bars.

Results go to stdout, as aligned text (`table`, the default) or as one JSON document
(`-o json`/`--output json`, field names listed in docs/cli.md). Tables are plain text columns two
spaces apart, each as wide as its widest cell, with no colour and no wrapping: piped into `awk`
or `column` they split on whitespace as before, and no terminal width is assumed (rich's Table
would wrap a long cell at the 80 columns it assumes off a terminal). `topics describe` keeps
seed 004's `Label: value` lines, padded so that each label starts at the same column on every
partition line (`field_lines`).

Progress goes to stderr, and takes one of two forms (`progress_enabled` decides):
  - a rich progress bar, redrawn in place, when stderr is a terminal or `--progress` is given
    (`--no-progress` turns it off on a terminal); the command's plain progress lines, if any,
    still print above the bar;
  - otherwise nothing more than the plain lines the command always printed, so a pipe or a test
    reads whole lines and never a control code.
A `Meter` is one operation's bar: `update(done, total, detail)`, and `note(text)` for a row
under it saying what the operation waits for (deploy/wait_notes.py); `NullMeter` is the off
state with the same methods. The bar's text (counts and rates) comes from pure functions that take
the elapsed time, so they are tested without a clock.
"""

from __future__ import annotations

import argparse
import json
import os
import stat
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from typing import IO, Any

OUTPUT_CHOICES = ("table", "json")
COLUMN_GAP = "  "
MAX_JSON_INDENT = 2


# ----- options ---------------------------------------------------------------------------------


def output_options(default: Any) -> argparse.ArgumentParser:
    """-o/--output, for the top-level parser (`default` "table") and, as a parent, for every
    listing command (`default` argparse.SUPPRESS keeps a value given before the command)."""
    options = argparse.ArgumentParser(add_help=False)
    options.add_argument(
        "-o", "--output", choices=OUTPUT_CHOICES, default=default,
        help="table (aligned columns, the default) or json (one document, docs/cli.md)",
    )  # fmt: skip
    return options


def progress_options(default: Any) -> argparse.ArgumentParser:
    """--progress/--no-progress (default: a bar only when stderr is a terminal)."""
    options = argparse.ArgumentParser(add_help=False)
    options.add_argument(
        "--progress", action=argparse.BooleanOptionalAction, default=default,
        help="a progress bar on stderr (default: only when stderr is a terminal)",
    )  # fmt: skip
    return options


def wants_json(args: argparse.Namespace) -> bool:
    return getattr(args, "output", None) == "json"


def progress_enabled(flag: bool | None, stderr_is_terminal: bool) -> bool:
    """--progress / --no-progress win; without either, a bar only on a terminal."""
    return stderr_is_terminal if flag is None else flag


# ----- results -----------------------------------------------------------------------------------


def emit_json(doc: Any, out: IO[str] | None = None) -> None:
    """One JSON document on stdout (keys in the order built, UTF-8 kept as is)."""
    stream = out or sys.stdout
    stream.write(json.dumps(doc, indent=MAX_JSON_INDENT, ensure_ascii=False) + "\n")
    stream.flush()


def table_lines(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> list[str]:
    """A header and rows as left-aligned columns; `None` shows as "-". Every column starts at
    the same place on every line; the last column is not padded (no trailing spaces)."""
    cells = [list(headers)] + [["-" if c is None else str(c) for c in row] for row in rows]
    for row in cells:
        if len(row) != len(headers):
            raise ValueError(f"row {row} has {len(row)} cells, the header {len(headers)}")
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    return [
        COLUMN_GAP.join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
        for row in cells
    ]


def print_lines(lines: Iterable[str]) -> None:
    for line in lines:
        print(line)
    sys.stdout.flush()


Fields = list[tuple[str, str]]


def field_lines(rows: Sequence[tuple[Fields, str]]) -> list[str]:
    """Lines of `Label: value` fields (seed 004's partition lines) with each value padded to
    the widest of its field, so that every label starts at the same column; a row's marker
    (e.g. "(offline)") follows its last field after two spaces. Rows are (fields, marker)."""
    if not rows:
        return []
    count = max(len(fields) for fields, _ in rows)
    widths = [max((len(f[i][1]) for f, _ in rows if len(f) > i), default=0) for i in range(count)]
    out = []
    for fields, marker in rows:
        parts = [f"{label}: {value.ljust(widths[i])}" for i, (label, value) in enumerate(fields)]
        line = " ".join(parts).rstrip()
        if marker:
            line = " ".join(parts) + f"  {marker}"
        out.append(line)
    return out


# ----- progress ------------------------------------------------------------------------------


def count_text(count: int, unit: str, elapsed_s: float) -> str:
    """'1,234 records, 617 records/s' (no rate before a tenth of a second has passed)."""
    text = f"{count:,} {unit}"
    if elapsed_s >= 0.1:
        text += f", {count / elapsed_s:,.0f} {unit}/s"
    return text


def produced_text(count: int, topic: str, acks: str) -> str:
    """`produce`'s last line. With acks=0 the broker answers nothing, not even a refusal, so
    the records were sent and no more is known (as Kafka's producer, whose acks=0 futures
    complete once the request is written)."""
    if acks == "0":
        return (f"sent {count} record(s) to {topic} with acks=0: the broker does not answer, "
                "so whether they were written is unknown")  # fmt: skip
    return f"produced {count} record(s) to {topic}"


def done_text(done: int, total: int, unit: str) -> str:
    """'2/3 brokers'."""
    return f"{done}/{total} {unit}"


class NullMeter:
    """The meter when progress is off: every call does nothing."""

    live = False  # True: a bar is drawn, so the plain progress lines it replaces are not

    def __enter__(self) -> NullMeter:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def update(
        self, done: float | None = None, total: float | None = None, detail: str | None = None
    ) -> None:
        return None

    def note(self, text: str | None) -> None:
        return None


class Meter(NullMeter):
    """One rich progress bar on stderr: description, bar, percentage (with a total), a detail
    text, elapsed time. Redraws ten times a second from rich's own thread; lines printed to
    stderr meanwhile appear above it, and so do stdout's when stdout is the same terminal."""

    live = True

    def __init__(
        self, description: str, total: float | None, *, force_terminal: bool,
        file: IO[str] | None = None,
    ) -> None:  # fmt: skip
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            Progress,
            TaskProgressColumn,
            TextColumn,
            TimeElapsedColumn,
        )

        stream = file or sys.stderr
        console = Console(file=stream, force_terminal=force_terminal or None, highlight=False)
        self._progress = Progress(
            TextColumn("{task.description}"), BarColumn(), TaskProgressColumn(),
            TextColumn("{task.fields[detail]}"), TimeElapsedColumn(),
            console=console, redirect_stdout=_is_terminal(sys.stdout) and console.is_terminal,
            redirect_stderr=stream is sys.stderr, transient=False,
        )  # fmt: skip
        self._task = self._progress.add_task(description, total=total, detail="")
        self._note: Any = None  # the `waiting` row's task, while it is up

    def __enter__(self) -> Meter:
        self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.stop()

    def update(
        self, done: float | None = None, total: float | None = None, detail: str | None = None
    ) -> None:
        fields: dict[str, Any] = {} if detail is None else {"detail": detail}
        self._progress.update(self._task, completed=done, total=total, **fields)

    def note(self, text: str | None) -> None:
        """A row under the bar: `waiting`, `text` and the time waited (None: take it down)."""
        if text is None:
            if self._note is not None:
                self._progress.remove_task(self._note)
                self._note = None
        elif self._note is None:
            self._note = self._progress.add_task("waiting", total=None, detail=text)
        else:
            self._progress.update(self._note, detail=text)


def meter(args: argparse.Namespace, description: str, total: float | None = None) -> NullMeter:
    """The bar for one long operation, or a NullMeter when progress is off for these args."""
    flag = getattr(args, "progress", None)
    if not progress_enabled(flag, _is_terminal(sys.stderr)):
        return NullMeter()
    return Meter(description, total, force_terminal=bool(flag))


def stdin_file_bytes(stream: Any) -> tuple[int | None, int]:
    """(bytes left to read, position now) when `stream` is a regular file (`< FILE`): the
    produce bar's total, its progress being `stream.tell()` minus that position. (None, 0) for
    a pipe or a terminal, whose size is not known."""
    try:
        info = os.fstat(stream.fileno())
        if not stat.S_ISREG(info.st_mode):
            return None, 0
        position = stream.tell()
    except (AttributeError, OSError, ValueError):
        return None, 0
    return max(info.st_size - position, 0), position


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # closed or replaced streams
        return False


class RateCounter:
    """Counts things and says how fast: `add(n)` then `text()`; time from `clock`."""

    def __init__(self, unit: str, clock: Callable[[], float] = time.monotonic) -> None:
        self.unit = unit
        self.count = 0
        self._clock = clock
        self._t0 = clock()

    def add(self, n: int) -> None:
        self.count += n

    def text(self) -> str:
        return count_text(self.count, self.unit, self._clock() - self._t0)
