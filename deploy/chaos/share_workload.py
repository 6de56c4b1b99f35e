"""The share-group chaos workload (`--workload share`): member processes and what they recorded.

- `MemberPool`: the share group's members, each a process of deploy/chaos/share_member.py (so
  a fault can SIGKILL it) writing one JSON line per delivery, flushed before it acknowledges,
  and one per acknowledgement's answer. `kill_one` SIGKILLs a live member and `start_one`
  starts a new one (the kill-member fault); `stop` SIGTERMs the rest (each closes and leaves);
  `drain` runs one last member that accepts everything until nothing has come for a quiet
  period; `deliveries` reads every member's file back as share_checker.Delivery (a delivery
  whose poll got no answer line: outcome unknown).
- `LeaderWatch`: a thread that describes the topic every SAMPLE_S and notes when a
  partition's leader or leader epoch changed (a failover: the new leader loads the share
  state, and every acquisition lock is gone), for the checker's lock and count rules.

Bounds: at most MEMBERS_MAX member processes are alive at once; a member's file grows by one
line per delivery; the drain stops after DRAIN_MAX_S whatever comes.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from client import Admin
from deploy.chaos import security
from deploy.chaos.share_checker import FAILED, NOTHING, OK, UNKNOWN, Delivery
from deploy.chaos.share_member import COMMAND_CONFIG_ENV
from protocol.errors import OdradekError

ROOT = Path(__file__).resolve().parents[2]
MEMBERS_MAX = 8
STOP_WAIT_S = 30.0
DRAIN_MAX_S = 90.0
SAMPLE_S = 0.5


class MemberPool:
    """The share group's member processes (see the module's docstring)."""

    def __init__(self, bootstrap: str, group: str, topic: str, out_dir: Path, seed: int,
                 t0: float) -> None:  # fmt: skip
        self.bootstrap, self.group, self.topic = bootstrap, group, topic
        self.out_dir, self.seed, self.t0 = out_dir, seed, t0
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.names: list[str] = []  # every member ever started, in order
        self.killed: list[str] = []
        self.deaths: dict[str, float] = {}  # member -> when it was SIGKILLed (run seconds)
        self._rng = random.Random(seed)
        out_dir.mkdir(parents=True, exist_ok=True)

    def _env(self) -> dict[str, str]:
        config = security.command_config_path()
        return {**os.environ, COMMAND_CONFIG_ENV: "" if config is None else str(config)}

    def start_one(self, drain: bool = False) -> str:
        alive = [n for n, p in self.procs.items() if p.poll() is None]
        if len(alive) >= MEMBERS_MAX:
            raise OdradekError(f"{len(alive)} share members already run (at most {MEMBERS_MAX})")
        name = f"{'drain' if drain else 'm'}{len(self.names)}"
        args = [sys.executable, "-m", "deploy.chaos.share_member", "--bootstrap", self.bootstrap,
                "--group", self.group, "--topic", self.topic, "--out", str(self._file(name)),
                "--name", name, "--seed", str(self.seed), "--t0", repr(self.t0)]  # fmt: skip
        if drain:
            args.append("--drain")
        with (self.out_dir / f"{name}.err").open("ab") as err:
            self.procs[name] = subprocess.Popen(
                args, cwd=ROOT, env=self._env(), stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=err,
            )  # fmt: skip
        self.names.append(name)
        return name

    def _file(self, name: str) -> Path:
        return self.out_dir / f"{name}.jsonl"

    def kill_one(self, pick: int) -> str:
        """SIGKILL a live member (which: `pick`); its name."""
        alive = sorted(n for n, p in self.procs.items() if p.poll() is None)
        if not alive:
            raise OdradekError("no share member is alive to kill")
        name = alive[pick % len(alive)]
        proc = self.procs.pop(name)
        proc.kill()
        proc.wait(STOP_WAIT_S)
        self.killed.append(name)
        self.deaths[name] = round(time.monotonic() - self.t0, 4)
        return name

    def stop(self) -> None:
        """SIGTERM every member: each closes (its share sessions, its membership) and exits."""
        for p in self.procs.values():
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.procs.values():
            try:
                p.wait(STOP_WAIT_S)
            except subprocess.TimeoutExpired:  # a member stuck in a call: it goes the hard way
                p.kill()
                p.wait(STOP_WAIT_S)
        self.procs.clear()

    def delivered(self) -> int:
        return sum(1 for n in self.names for line in self._lines(n) if "poll" in line)

    def drain(self, quiet_s: float, say: Callable[[str], None]) -> None:
        """One member that accepts everything, until nothing came for `quiet_s` (bounded)."""
        name = self.start_one(drain=True)
        started = last = time.monotonic()
        seen = 0
        while time.monotonic() - last < quiet_s:
            if time.monotonic() - started > DRAIN_MAX_S:
                say(f"the drain was still receiving after {DRAIN_MAX_S:.0f} s: stopped")
                break
            count = sum(1 for line in self._lines(name) if "poll" in line)
            if count != seen:
                seen, last = count, time.monotonic()
            time.sleep(0.25)
        self.stop()
        say(f"the drain accepted {seen} deliveries")

    def _lines(self, name: str) -> list[dict[str, Any]]:
        path = self._file(name)
        if not path.exists():
            return []
        out = []
        for text in path.read_text(encoding="utf-8").splitlines():
            with contextlib.suppress(ValueError):  # a line cut by a SIGKILL mid-write
                out.append(json.loads(text))
        return out

    def deliveries(self) -> list[Delivery]:
        return [d for name in self.names for d in member_deliveries(name, self._lines(name))]

    def errors(self) -> list[str]:
        return [f"{n}: {line['error']}" for n in self.names for line in self._lines(n)
                if "error" in line]  # fmt: skip


def member_deliveries(member: str, lines: list[dict[str, Any]]) -> list[Delivery]:
    """One member's lines (share_member.py's format) as deliveries with their outcomes."""
    answers = {line["ack"]: line for line in lines if "ack" in line}
    out = []
    for line in lines:
        if "poll" not in line:
            continue
        answer = answers.get(line["poll"])
        outcome, answered_at = UNKNOWN, None
        if answer is not None and line["p"] in answer["ok"]:
            outcome, answered_at = OK, answer["at"]
        elif answer is not None and line["p"] in answer["failed"]:
            outcome, answered_at = FAILED, answer["at"]
        out.append(Delivery(member, line["at"], line["p"], line["o"], line["v"], line["c"],
                            line.get("a", NOTHING), outcome, answered_at))  # fmt: skip
    return out


class LeaderWatch:
    """Every SAMPLE_S, the topic's leaders and leader epochs; `failovers` holds, for each
    change seen, the times (since t0) of the samples before and after it."""

    def __init__(self, bootstrap: Callable[[], str], topic: str, t0: float) -> None:
        self._bootstrap, self._topic, self._t0 = bootstrap, topic, t0
        self.failovers: list[float] = []
        self._last: dict[int, tuple[int, int]] = {}
        self._last_at = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="chaos-leaders", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(SAMPLE_S):
            try:
                with Admin(self._bootstrap(), request_timeout_ms=2000,
                           **security.native()) as admin:  # fmt: skip
                    (desc,) = admin.describe_topics([self._topic])
            except Exception:  # a broker died under the admin: the next sample
                continue
            now = {p.partition: (p.leader, p.leader_epoch) for p in desc.partitions}
            at = round(time.monotonic() - self._t0, 3)
            if self._last and any(self._last.get(p) != v for p, v in now.items()):
                self.failovers += [self._last_at, at]  # it happened between the two samples
            self._last, self._last_at = now, at

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)
