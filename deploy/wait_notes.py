"""What `odradek produce` and `odradek consume` are waiting for, said while they wait.

A producer retries a partition without a leader, or one refused with NOT_ENOUGH_REPLICAS, until
its delivery timeout; a consumer polls a partition without a leader as long as it runs. Both
clients say why, per partition (`Producer.waiting()`, `Consumer.waiting()`: {partition: reason},
from the metadata and the last retriable error). `WaitNotes.show(reasons)` turns that into
output on stderr at once, in one of three forms:

- a progress bar is drawn (a terminal, or --progress): one more row under it, `waiting`, with
  the first reason, redrawn in place by the bar (`Meter.note`), gone once nothing waits;
- stderr is a terminal without a bar (--no-progress): one line rewritten in place with a
  carriage return, with the seconds waited so far, erased once nothing waits;
- otherwise (a pipe, a file): one plain line per partition and reason, the first time it shows:
      waiting: partition clicks-1 has no leader: its replica 2 is down; retrying until ...
A reason is shown once it has lasted NOTE_AFTER_S: a leader that moves is missing for a moment,
which is not worth a line. At most MAX_LINES plain lines go out per check (then a count).

`on_stderr(until, bar)` makes a command's notes. `watching(source, notes)` asks `source` (the
producer's `waiting`) from a thread of its own every CHECK_S, so the line comes while the main
thread blocks (reading stdin, flushing); the consumer's loop calls `show` itself between polls
(`due()` says when), and `make_room()` before it prints records (on stdout, maybe the same
terminal). `unread_error` is the error `consume` ends with when a partition it was to read still
has no leader.

A wait that can never end is said before it starts: `topics create` and `topics alter-config`
warn (`min_insync_warning`) when the topic's min.insync.replicas (its own, or the broker's
default) is above its replication factor. Kafka accepts that setting, so it is a warning line
on stderr and not an error; but every acks=all produce to the topic is then refused with
NOT_ENOUGH_REPLICAS, and retried until the producer's delivery timeout.
"""

from __future__ import annotations

import contextlib
import shutil
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import IO, Any

from deploy.cli_output import NullMeter
from protocol.errors import LeaderNotAvailableError, OdradekError

NOTE_AFTER_S = 1.0  # a reason shows once it lasted this long
CHECK_S = 0.5  # how often the clients are asked
MAX_LINES = 5  # plain lines per check; the rest are counted
MIN_INSYNC = "min.insync.replicas"
ERASE_LINE = "\r\x1b[K"  # to the line's start, then clear to its end


class WaitNotes:
    """The notes of one command run; `until` ends each note ("retrying until ...")."""

    def __init__(
        self, until: str, stream: IO[str], *, terminal: bool, bar: NullMeter | None = None,
        clock: Callable[[], float] = time.monotonic,
        width: Callable[[], int] = lambda: shutil.get_terminal_size().columns,
    ) -> None:  # fmt: skip
        self.until = until
        self._stream = stream
        self._terminal = terminal
        self._bar = bar or NullMeter()
        self._clock = clock
        self._width = width
        self._since: dict[tuple[Any, str], float] = {}  # (partition, reason) -> first seen
        self._printed: set[tuple[Any, str]] = set()
        self._shown = False  # a line in place (terminal) or a bar row is up
        self._waiting_since: float | None = None
        self._checked = -CHECK_S
        self.reasons: dict[Any, str] = {}  # the last reasons given

    def due(self) -> bool:
        """Whether CHECK_S passed since the last `show`."""
        return self._clock() - self._checked >= CHECK_S

    def show(self, reasons: Mapping[Any, str]) -> None:
        """The current reasons (none: nothing waits): print what is new and has lasted."""
        now = self._checked = self._clock()
        self.reasons = dict(reasons)
        current = {(tp, why) for tp, why in reasons.items()}
        self._since = {key: self._since.get(key, now) for key in current}
        lasting = [key for key in self._since if now - self._since[key] >= NOTE_AFTER_S]
        if not lasting:
            self._waiting_since = None
            self.clear()
            return
        if self._waiting_since is None:
            self._waiting_since = min(self._since[key] for key in lasting)
        if self._bar.live:
            self._bar.note(self._summary(lasting))
            self._shown = True
        elif self._terminal:
            self._rewrite(lasting, now)
        else:
            self._print_new(lasting)

    def _summary(self, lasting: list[tuple[Any, str]]) -> str:
        _, first = min(lasting, key=lambda key: str(key[0]))
        more = len(lasting) - 1
        return first + (f" (and {more} more partition(s))" if more else "") + f"; {self.until}"

    def _rewrite(self, lasting: list[tuple[Any, str]], now: float) -> None:
        assert self._waiting_since is not None
        line = f"waiting {now - self._waiting_since:.0f} s: {self._summary(lasting)}"
        width = max(self._width() - 1, 20)  # a wrapped line would not be rewritten in place
        if len(line) > width:
            line = line[: width - 3] + "..."
        self._stream.write(ERASE_LINE + line)
        self._stream.flush()
        self._shown = True

    def _print_new(self, lasting: list[tuple[Any, str]]) -> None:
        new = sorted((key for key in lasting if key not in self._printed), key=str)
        self._printed.update(new)
        for _, why in new[:MAX_LINES]:
            self._stream.write(f"waiting: {why}; {self.until}\n")
        if len(new) > MAX_LINES:
            self._stream.write(f"waiting: and {len(new) - MAX_LINES} more partition(s)\n")
        self._stream.flush()

    def make_room(self) -> None:
        """Before other output to the terminal: the line in place goes (the bar's row stays:
        the bar prints above itself); the next `show` puts it back."""
        if not self._bar.live:
            self.clear()

    def clear(self) -> None:
        """Take down the line in place or the bar's row, if one is up (plain lines stay)."""
        if not self._shown:
            return
        self._shown = False
        if self._bar.live:
            self._bar.note(None)
        else:
            self._stream.write(ERASE_LINE)
            self._stream.flush()


def on_stderr(until: str, bar: NullMeter) -> WaitNotes:
    """The notes of `odradek produce` or `consume`: on stderr, in place when it is a terminal."""
    return WaitNotes(until, sys.stderr, terminal=sys.stderr.isatty(), bar=bar)


@contextlib.contextmanager
def watching(source: Callable[[], Mapping[Any, str]], notes: WaitNotes) -> Iterator[WaitNotes]:
    """`notes.show(source())` every CHECK_S from a daemon thread, until the block ends (then
    the line in place is taken down, before any error the block raises is printed)."""
    stop = threading.Event()

    def run() -> None:
        while not stop.wait(CHECK_S):
            try:
                reasons = source()
            except Exception:  # closed or broken: the command hears of it from its sends
                return
            if not stop.is_set():
                notes.show(reasons)

    thread = threading.Thread(target=run, name="odradek-wait-notes", daemon=True)
    thread.start()
    try:
        yield notes
    finally:
        stop.set()
        thread.join()
        notes.clear()


def unread_error(reasons: Mapping[Any, str]) -> OdradekError | None:
    """The error a consume that ended short ends with, when partitions still had no leader."""
    if not reasons:
        return None
    whys = "; ".join(reasons[tp] for tp in sorted(reasons, key=str))
    it = "it" if len(reasons) == 1 else "them"
    return LeaderNotAvailableError(f"{whys}; nothing was read from {it}")


def insync_warning(topic: str, min_insync: str, replication_factor: int) -> str | None:
    """The warning line when `min_insync` (a config value) is above `replication_factor`."""
    if not min_insync.isdigit() or not replication_factor or int(min_insync) <= replication_factor:
        return None
    return (
        f"warning: {MIN_INSYNC}={min_insync} is above the replication factor "
        f"{replication_factor} of topic {topic}: every produce with acks=all to it will be "
        "refused (NOT_ENOUGH_REPLICAS)"
    )


def min_insync_warning(
    admin: Any, topic: str, replication_factor: int | None = None, value: str | None = None
) -> str | None:
    """`insync_warning` for `topic` as the brokers have it now: its min.insync.replicas (set or
    the default; `value` instead, for a change only validated) against its replication factor
    (`replication_factor` when the caller knows it). None when the brokers do not say."""
    try:
        if value is None:
            entries = admin.describe_configs([topic], [MIN_INSYNC]).get(topic, {})
            value = str(entries[MIN_INSYNC].value) if MIN_INSYNC in entries else ""
        if replication_factor is None:
            [described] = admin.describe_topics([topic])
            replication_factor = max((len(p.replicas) for p in described.partitions), default=0)
    except OdradekError:
        return None
    return insync_warning(topic, value, replication_factor)
