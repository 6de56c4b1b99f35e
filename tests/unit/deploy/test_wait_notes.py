"""deploy/wait_notes.py: what `produce` / `consume` say while they wait, on a manual clock.

The integration side (a real partition without a leader, through the CLI) is in
tests/integration/test_cli_waits.py; here the three forms of the note, the error a short
consume ends with and the min.insync.replicas warning, from plain values.
"""

from __future__ import annotations

import io

from deploy import cli_output
from deploy.wait_notes import (
    CHECK_S,
    ERASE_LINE,
    MAX_LINES,
    NOTE_AFTER_S,
    WaitNotes,
    insync_warning,
    unread_error,
)
from protocol.errors import LeaderNotAvailableError

NO_LEADER = "partition t-1 has no leader: its replica 2 is down"
UNTIL = "retrying until --timeout-ms 5000 runs out"


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class RecordingMeter(cli_output.NullMeter):
    """A live bar's `note` calls, recorded (Meter itself draws them: see the last test)."""

    live = True

    def __init__(self) -> None:
        self.notes: list[str | None] = []

    def note(self, text: str | None) -> None:
        self.notes.append(text)


def test_piped_a_reason_is_one_line_once_it_has_lasted() -> None:
    clock, out = Clock(), io.StringIO()
    notes = WaitNotes(UNTIL, out, terminal=False, clock=clock)
    notes.show({"t-1": NO_LEADER})
    assert out.getvalue() == ""  # a leader missing for a moment is not worth a line
    clock.now += NOTE_AFTER_S
    notes.show({"t-1": NO_LEADER})
    notes.show({"t-1": NO_LEADER})
    assert out.getvalue() == f"waiting: {NO_LEADER}; {UNTIL}\n"  # once, whole, no control code
    clock.now += NOTE_AFTER_S
    refused = "NOT_ENOUGH_REPLICAS: acks=all refused: t-1: ISR [1] is below min.insync.replicas 2"
    notes.show({"t-1": refused})  # a new reason lasts from now
    clock.now += NOTE_AFTER_S
    notes.show({"t-1": refused})
    assert out.getvalue().splitlines()[1] == f"waiting: {refused}; {UNTIL}"
    notes.show({})
    notes.clear()
    assert len(out.getvalue().splitlines()) == 2  # plain lines stay, nothing is erased


def test_piped_many_partitions_are_counted_past_max_lines() -> None:
    clock, out = Clock(), io.StringIO()
    notes = WaitNotes(UNTIL, out, terminal=False, clock=clock)
    reasons = {f"t-{p}": f"partition t-{p} has no leader" for p in range(MAX_LINES + 3)}
    notes.show(reasons)
    clock.now += NOTE_AFTER_S
    notes.show(reasons)
    lines = out.getvalue().splitlines()
    assert len(lines) == MAX_LINES + 1
    assert lines[-1] == "waiting: and 3 more partition(s)"


def test_on_a_terminal_one_line_is_rewritten_in_place_then_erased() -> None:
    clock, out = Clock(), io.StringIO()
    notes = WaitNotes(UNTIL, out, terminal=True, clock=clock, width=lambda: 200)
    notes.show({"t-1": NO_LEADER, "t-2": "partition t-2 has no leader"})
    clock.now += NOTE_AFTER_S + 2
    notes.show({"t-1": NO_LEADER, "t-2": "partition t-2 has no leader"})
    first = f"{ERASE_LINE}waiting 3 s: {NO_LEADER} (and 1 more partition(s)); {UNTIL}"
    assert out.getvalue() == first  # no newline: the next one goes over it
    clock.now += 1
    notes.show({"t-1": NO_LEADER})
    assert out.getvalue() == first + f"{ERASE_LINE}waiting 4 s: {NO_LEADER}; {UNTIL}"
    notes.make_room()  # a record is printed: the line goes first
    assert out.getvalue().endswith(ERASE_LINE)
    clock.now += CHECK_S
    notes.show({"t-1": NO_LEADER})  # and comes back
    notes.show({})  # nothing waits any more: the line goes
    assert out.getvalue().endswith(f"{UNTIL}{ERASE_LINE}")
    notes.clear()  # (once only)
    assert out.getvalue().count(ERASE_LINE) == 5


def test_on_a_narrow_terminal_the_line_is_cut_so_it_never_wraps() -> None:
    clock, out = Clock(), io.StringIO()
    notes = WaitNotes(UNTIL, out, terminal=True, clock=clock, width=lambda: 40)
    notes.show({"t-1": NO_LEADER})
    clock.now += NOTE_AFTER_S
    notes.show({"t-1": NO_LEADER})
    line = out.getvalue().removeprefix(ERASE_LINE)
    assert len(line) == 39 and line.endswith("...") and line.startswith("waiting 1 s: partition")


def test_under_a_bar_the_note_is_a_row_of_it_and_goes_with_the_wait() -> None:
    clock, bar = Clock(), RecordingMeter()
    notes = WaitNotes(UNTIL, io.StringIO(), terminal=True, bar=bar, clock=clock)
    notes.show({"t-1": NO_LEADER})
    clock.now += NOTE_AFTER_S
    notes.show({"t-1": NO_LEADER})
    notes.make_room()  # the bar prints records above itself: its row stays
    notes.show({})
    assert bar.notes == [f"{NO_LEADER}; {UNTIL}", None]


def test_due_every_check_interval() -> None:
    clock = Clock()
    notes = WaitNotes(UNTIL, io.StringIO(), terminal=False, clock=clock)
    assert notes.due()
    notes.show({})
    assert not notes.due()
    clock.now += CHECK_S
    assert notes.due()


def test_a_meter_draws_the_note_under_its_bar() -> None:
    out = io.StringIO()
    with cli_output.Meter("producing", None, force_terminal=True, file=out) as bar:
        bar.note(NO_LEADER)
        bar.note(NO_LEADER + " (again)")
        bar.note(None)
        bar.note(None)  # (nothing to take down)
    assert "waiting" in out.getvalue()


def test_a_short_consume_ends_with_the_partitions_it_could_not_read() -> None:
    assert unread_error({}) is None
    error = unread_error({"t-2": "partition t-2 has no leader", "t-1": NO_LEADER})
    assert isinstance(error, LeaderNotAvailableError)
    assert str(error) == (
        f"LEADER_NOT_AVAILABLE: {NO_LEADER}; partition t-2 has no leader; "
        "nothing was read from them"
    )


def test_min_insync_above_the_replication_factor_is_a_warning() -> None:
    assert insync_warning("t", "2", 3) is None
    assert insync_warning("t", "3", 3) is None
    assert insync_warning("t", "x", 3) is None  # the broker refuses it: not ours to say
    assert insync_warning("t", "5", 3) == (
        "warning: min.insync.replicas=5 is above the replication factor 3 of topic t: every "
        "produce with acks=all to it will be refused (NOT_ENOUGH_REPLICAS)"
    )
