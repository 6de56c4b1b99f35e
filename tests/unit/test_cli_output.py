"""The CLI's output layer without a cluster: aligned tables and seed-style field lines, the JSON
documents built from Admin/LocalCluster values, when a progress bar is drawn, the bar's text,
and that every listing command takes -o json (deploy/cli_output.py, deploy/cli_views.py)."""

from __future__ import annotations

import io
import json
import os
import re
import signal
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from deploy import (
    cli,
    cli_groups,
    cli_output,
    cli_share_groups,
    cli_views,
    consume_cli,
    leaders_cli,
)
from protocol.errors import ElectionNotNeededError, PreferredLeaderNotAvailableError, UsageError

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def column_starts(header: str) -> list[int]:
    return [m.start() for m in re.finditer(r"\S+", header)]


def test_table_lines_align_every_column_with_its_header() -> None:
    lines = cli_output.table_lines(
        ("GROUP", "STATE", "KIND"),
        [("a-very-long-group-name", "Stable", "consumer"), ("g", "Empty", None)],
    )
    starts = column_starts(lines[0])
    for line in lines[1:]:
        assert [line[s - 1] if s else " " for s in starts] == [" "] * 3, line
        assert all(line[s] != " " for s in starts), line
    assert lines[2].split() == ["g", "Empty", "-"]  # None shows as "-"
    assert all(line == line.rstrip() for line in lines)  # no trailing spaces


def test_table_lines_refuses_a_ragged_row() -> None:
    with pytest.raises(ValueError):
        cli_output.table_lines(("A", "B"), [("1",)])


def test_field_lines_start_each_label_at_one_column() -> None:
    rows = [
        ([("Topic", "t"), ("Partition", "9"), ("Leader", "none"), ("Isr", "")], "(offline)"),
        ([("Topic", "t"), ("Partition", "10"), ("Leader", "2"), ("Isr", "2,3")], ""),
        (
            [("Topic", "t"), ("Partition", "11"), ("Leader", "3"), ("Isr", "3")],
            "(under-replicated)",
        ),
    ]
    lines = cli_output.field_lines(rows)
    for label in ("Partition:", "Leader:", "Isr:"):
        assert len({line.index(label) for line in lines}) == 1, (label, lines)
    assert lines[1] == "Topic: t Partition: 10 Leader: 2    Isr: 2,3"
    assert lines[0].endswith("Isr:      (offline)")  # the Isr column is 3 wide
    assert lines[2].index("(under") == lines[0].index("(offline)")


def test_progress_is_drawn_on_a_terminal_or_when_asked() -> None:
    assert cli_output.progress_enabled(None, True)
    assert not cli_output.progress_enabled(None, False)
    assert cli_output.progress_enabled(True, False)  # --progress into a pipe
    assert not cli_output.progress_enabled(False, True)  # --no-progress on a terminal


def test_rate_text_from_an_injected_clock() -> None:
    now = [100.0]
    counter = cli_output.RateCounter("records", clock=lambda: now[0])
    counter.add(5)
    assert counter.text() == "5 records"  # no rate before any time has passed
    now[0] += 2.0
    counter.add(1995)
    assert counter.text() == "2,000 records, 1,000 records/s"
    assert cli_output.done_text(2, 3, "brokers") == "2/3 brokers"


def test_stdin_file_bytes_knows_a_file_but_not_a_pipe(tmp_path: Path) -> None:
    path = tmp_path / "lines"
    path.write_bytes(b"a\nbb\nccc\n")
    with path.open("rb") as f:
        f.read(2)
        assert cli_output.stdin_file_bytes(f) == (7, 2)
    assert cli_output.stdin_file_bytes(io.BytesIO(b"x")) == (None, 0)  # no file descriptor


def test_a_meter_draws_only_when_live() -> None:
    out = io.StringIO()
    with cli_output.Meter("producing", 10, force_terminal=True, file=out) as bar:
        bar.update(10, 10, "10 records")
    drawn = out.getvalue()
    assert "\x1b[" in drawn and "10 records" in ANSI.sub("", drawn)
    assert not cli_output.NullMeter().live and bar.live
    args = SimpleNamespace(progress=False)
    assert isinstance(cli_output.meter(args, "x"), cli_output.NullMeter)
    assert not cli_output.meter(args, "x").live


def test_emit_json_is_one_document(capsys: pytest.CaptureFixture[str]) -> None:
    cli_output.emit_json({"topics": [{"name": "é"}]})
    out = capsys.readouterr().out
    assert json.loads(out) == {"topics": [{"name": "é"}]} and out.endswith("}\n")


# ----- the documents -------------------------------------------------------------------------


def part(n: int, leader: int, replicas: list[int], isr: list[int]) -> SimpleNamespace:
    return SimpleNamespace(partition=n, leader=leader, replicas=replicas, isr=isr)


DESC = SimpleNamespace(
    name="events",
    partitions=[part(1, -1, [2, 3], []), part(0, 1, [1, 2], [1, 2]), part(2, 3, [3, 1], [3])],
)


def test_topic_doc_has_partitions_in_order_with_their_status() -> None:
    doc = cli_views.topic_doc(DESC, {"retention.ms": "5"}, None)
    assert doc["name"] == "events" and doc["partition_count"] == 3
    assert doc["replication_factor"] == 2 and doc["configs"] == {"retention.ms": "5"}
    assert [p["partition"] for p in doc["partitions"]] == [0, 1, 2]
    assert [p["leader"] for p in doc["partitions"]] == [1, None, 3]
    assert [p["status"] for p in doc["partitions"]] == ["ok", "offline", "under-replicated"]
    assert "high_watermark" not in doc["partitions"][0]
    with_offsets = cli_views.topic_doc(DESC, {}, {("events", 0): (4, 9)})
    assert with_offsets["partitions"][0]["log_start_offset"] == 4
    assert with_offsets["partitions"][1]["high_watermark"] is None  # offline: not known


def test_topics_list_shows_internal_topics_unless_excluded() -> None:
    """kafka-topics.sh's rule: internal topics are listed unless --exclude-internal; the JSON
    document says which are internal."""
    offsets = SimpleNamespace(name="__consumer_offsets", is_internal=True, partitions=[])
    events = SimpleNamespace(name="events", is_internal=False, partitions=DESC.partitions)
    assert cli_views.shown_topics([offsets, events], False) == [offsets, events]
    assert cli_views.shown_topics([offsets, events], True) == [events]
    doc = cli_views.topics_list_doc([events, offsets])
    assert doc["topics"] == [
        {"name": "__consumer_offsets", "partitions": 0, "replication_factor": 0, "internal": True},
        {"name": "events", "partitions": 3, "replication_factor": 2, "internal": False},
    ]
    args = cli.build_parser().parse_args(["topics", "list", "--exclude-internal"])
    assert args.exclude_internal
    assert not cli.build_parser().parse_args(["topics", "describe"]).exclude_internal


def test_describe_lines_keep_seed_004_and_align_the_labels() -> None:
    lines = cli_views.describe_lines(
        [DESC], {"events": "Topic: events ..."}, {("events", 0): (0, 7)}
    )
    assert lines[0] == "Topic: events ..."
    assert lines[1].startswith("Topic: events Partition: 0 Leader: 1    Replicas: 1,2 Isr: 1,2")
    assert "LogStartOffset: 0 HighWatermark: 7" in lines[1]
    assert lines[2].endswith("(offline)") and lines[3].endswith("(under-replicated)")
    for label in ("Leader:", "Replicas:", "Isr:"):
        assert len({line.index(label) for line in lines[1:]}) == 1


def test_status_doc_and_its_table() -> None:
    zk = SimpleNamespace(connect="127.0.0.1:2181", pid=None)
    procs = [
        SimpleNamespace(id=1, log_dirs=["/d/1", "/d/1.dir1"]),
        SimpleNamespace(id=12, log_dirs=["/d/12"]),
    ]
    cluster = SimpleNamespace(
        dir=Path("/c"), state=SimpleNamespace(zookeeper=zk, brokers=procs), bootstrap="127.0.0.1:1",
        kafka_bootstrap="127.0.0.1:2",
    )  # fmt: skip
    brokers = [
        SimpleNamespace(
            id=1,
            pid=4242,
            port=1,
            kafka_port=2,
            metrics_port=5,
            registry_port=6,
            state="alive",
            controller=True,
        ),
        SimpleNamespace(
            id=12,
            pid=7,
            port=3,
            kafka_port=0,
            metrics_port=0,
            registry_port=0,
            state="dead",
            controller=False,
        ),
    ]
    doc = cli_views.status_doc(cluster, "running", brokers)
    assert doc["zookeeper"] == {"connect": "127.0.0.1:2181", "pid": None, "state": "running"}
    assert doc["brokers"][1] == {
        "id": 12, "pid": 7, "port": 3, "kafka_port": None, "metrics_port": None,
        "registry_port": None, "state": "dead",
        "controller": False, "log_dirs": ["/d/12"],
    }  # fmt: skip
    lines = cli_views.status_lines(doc)
    assert lines[0] == "ZooKeeper 127.0.0.1:2181 (given): running"
    assert lines[3].split() == list(cli_views.STATUS_COLUMNS)
    assert lines[4].split() == [
        "1",
        "4242",
        "1",
        "2",
        "5",
        "6",
        "alive",
        "controller",
        "/d/1,/d/1.dir1",
    ]
    assert lines[5].split() == ["12", "7", "3", "-", "-", "-", "dead", "-", "/d/12"]
    starts = column_starts(lines[3])
    assert all(line[s] != " " for line in lines[4:] for s in starts[:7])
    # with a schema registry: its URLs on a line of their own, before the table
    doc["schema_registry"] = ["https://127.0.0.1:6", "https://127.0.0.1:16"]
    lines = cli_views.status_lines(doc)
    assert lines[3] == "schema registry https://127.0.0.1:6,https://127.0.0.1:16"
    assert lines[4].split() == list(cli_views.STATUS_COLUMNS)


def test_election_docs_and_lines() -> None:
    tp = SimpleNamespace(topic="t", partition=0)
    tp1 = SimpleNamespace(topic="t", partition=10)
    docs = [
        leaders_cli.election_doc(tp, None, 1),
        leaders_cli.election_doc(tp1, ElectionNotNeededError("x"), 2),
        leaders_cli.election_doc(tp, PreferredLeaderNotAvailableError("down"), -1),
    ]
    assert [d["result"] for d in docs] == ["elected", "already-preferred", "not-moved"]
    assert docs[0]["error"] is None and docs[1]["error"] is None and "down" in docs[2]["error"]
    lines = leaders_cli.election_lines(docs)
    assert lines[0].endswith("Leader: 1  (elected)")
    assert lines[0].index("Leader:") == lines[1].index("Leader:")
    assert "not moved: " in lines[2]


def test_listed_group_docs() -> None:
    kafka = SimpleNamespace(group_id="k", protocol_type="consumer", kafka_state="Stable", state="x")
    native = SimpleNamespace(group_id="n", protocol_type=None, kafka_state=None, state="Stable")
    empty = SimpleNamespace(group_id="e", protocol_type=None, kafka_state=None, state="Empty")
    assert cli_groups.listed_doc(kafka) == {
        "group": "k",
        "state": "Stable",
        "kind": "consumer",
        "type": "classic",
    }
    assert cli_groups.listed_doc(native)["kind"] == "odradek"
    assert cli_groups.listed_doc(empty)["kind"] is None


def test_groups_describe_shows_an_unknown_log_end_offset_as_a_dash() -> None:
    """A partition whose leader is down has no log end offset: "-" and JSON null, and no lag
    (it printed -1 and a lag computed from it)."""
    from client.group.admin import LagRow

    desc = SimpleNamespace(protocol_type=None, kafka_state=None, state="Empty", generation_id=3,
                           assignment_strategy="", members=[], group_type="classic")  # fmt: skip
    rows = [LagRow("g", "t", 0, 4, None, None), LagRow("g", "t", 1, 2, 5, None)]
    doc = cli_groups.describe_doc("g", desc, rows)
    assert [(p["log_end_offset"], p["lag"]) for p in doc["partitions"]] == [(None, None), (5, 3)]
    lines = cli_groups.describe_lines(doc)
    assert lines[1].split() == ["g", "t", "0", "4", "-", "-", "-"]
    assert lines[2].split() == ["g", "t", "1", "2", "5", "3", "-"]


def test_groups_describe_members_shows_a_classic_groups_instance_ids() -> None:
    """A classic group's members with their group.instance.id (static members, KIP-345), in
    JSON and in `--members`' table; "-" for a dynamic member's."""
    from protocol.api.group import GroupDescription, MemberDescription, TopicPartitions

    desc = GroupDescription(0, "g", "Stable", 4, "range", [
        MemberDescription("m-1", "c1", [TopicPartitions("t", [0, 1])], "/127.0.0.1", "i-1"),
        MemberDescription("m-2", "c2", [], "/127.0.0.2"),
    ], protocol_type="consumer")  # fmt: skip
    doc = cli_groups.describe_doc("g", desc, [])
    assert doc["member_details"] == [
        {"member_id": "m-1", "client_id": "c1", "instance_id": "i-1", "host": "/127.0.0.1",
         "assigned": "t-0,t-1"},
        {"member_id": "m-2", "client_id": "c2", "instance_id": None, "host": "/127.0.0.2",
         "assigned": "-"},
    ]  # fmt: skip
    lines = cli_groups.member_lines(doc, consumer=False)
    assert [line.split() for line in lines] == [
        ["MEMBER", "INSTANCE-ID", "CLIENT-ID", "HOST", "ASSIGNED"],
        ["m-1", "i-1", "c1", "/127.0.0.1", "t-0,t-1"],
        ["m-2", "-", "c2", "/127.0.0.2", "-"],
    ]


def test_share_groups_describe_lines_are_kafka_share_groups_columns() -> None:
    from client.group.share_admin import Coordinator, parse_states
    from protocol.api.share import ShareAssignedTopic as T
    from protocol.api.share import ShareGroupDescription, ShareMemberDescription

    member = ShareMemberDescription("m1", None, 3, "worker", "/127.0.0.1", ["a", "b"],
                                    [T("b", "id-b", [2]), T("a", "id-a", [1, 0])])  # fmt: skip
    desc = ShareGroupDescription("g", 0, None, "Stable", 3, 3, "simple", [member])
    doc = cli_share_groups.describe_doc(desc, Coordinator(1, "127.0.0.1", 9092))
    assert [line.split() for line in cli_share_groups.describe_lines(doc, False, False, True)] == [
        ["GROUP", "TOPIC", "PARTITION", "LEADER-EPOCH", "START-OFFSET", "LAG"],
        ["g", "a", "0", "-", "-", "-"], ["g", "a", "1", "-", "-", "-"],
        ["g", "b", "2", "-", "-", "-"]]  # fmt: skip
    members = cli_share_groups.describe_lines(doc, True, False, False)
    assert members[1].split() == ["g", "m1", "/127.0.0.1", "worker", "3", "a:0,1;b:2"]
    state = cli_share_groups.describe_lines(doc, False, True, True)
    assert state[0].split() == ["GROUP", "COORDINATOR", "(ID)", "STATE", "GROUP-EPOCH",
                                "ASSIGNMENT-EPOCH", "#MEMBERS"]  # fmt: skip
    assert state[1].split() == ["g", "127.0.0.1:9092", "(1)", "Stable", "3", "3", "1"]
    assert parse_states("stable, EMPTY") == {"Stable", "Empty"}
    with pytest.raises(UsageError, match=r"Invalid state list 'Gone'\. Valid states are: Empty"):
        parse_states("Gone")


# ----- the parser ----------------------------------------------------------------------------

LISTING = [
    ["topics", "list"],
    ["topics", "describe", "t"],
    ["topics", "elect-leaders"],
    ["topics", "reassign", "t", "--partition", "0", "--replicas", "1,2"],
    ["topics", "alter-config", "t", "--set", "a=b"],
    ["topics", "add-partitions", "t", "--partitions", "3"],
    ["topics", "delete-records", "t", "--partition", "0", "--before", "1"],
    ["groups", "list"],
    ["groups", "describe", "g"],
    ["groups", "reset-offsets", "g", "--topic", "t", "--to-latest"],
    ["share-groups", "list"],
    ["share-groups", "describe", "g"],
    ["cluster", "status"],
    ["chaos", "check", "f.json"],
]


@pytest.mark.parametrize("argv", LISTING, ids=lambda a: " ".join(a[:2]))
def test_every_listing_command_takes_output_json(argv: list[str]) -> None:
    parser = cli.build_parser()
    assert parser.parse_args([*argv, "-o", "json"]).output == "json"
    assert parser.parse_args([*argv, "--output", "json"]).output == "json"
    assert parser.parse_args(["-o", "json", *argv]).output == "json"  # before the command
    assert parser.parse_args(argv).output in (None, "table")
    with pytest.raises(SystemExit):
        parser.parse_args([*argv, "-o", "yaml"])


@pytest.mark.parametrize(
    "argv", [["produce", "t"], ["consume", "t"], ["cluster", "up"], ["chaos", "run"]]
)
def test_long_operations_take_progress_flags(argv: list[str]) -> None:
    parser = cli.build_parser()
    assert parser.parse_args(argv).progress is None  # decided by the terminal
    assert parser.parse_args([*argv, "--progress"]).progress is True
    assert parser.parse_args([*argv, "--no-progress"]).progress is False
    assert parser.parse_args(["--progress", *argv]).progress is True


def _poll_a_batch_with_a_ctrl_c_after_its_first_record() -> tuple[list[str], int, list[Any]]:
    """`_poll_loop` over one batch of two records, the user's Ctrl-C sent right after the first
    is written (stdout unbuffered, as with PYTHONUNBUFFERED), with Python's default SIGINT
    handler installed for the run (Spark may have set its own), checked to be back after it.
    Returns what was written, the count the loop returned and the polls left."""
    written: list[str] = []

    def a_python_call() -> None:  # entering a Python function checks for pending signals
        pass

    def emit(line: str) -> None:
        written.append(line)
        if len(written) == 1:
            os.kill(os.getpid(), signal.SIGINT)  # the user's Ctrl-C, right after the write
        a_python_call()

    batch = [SimpleNamespace(partition=0, offset=i, key=None, value=b"v%d" % i) for i in (0, 1)]
    polls: list[Any] = [batch]
    consumer = SimpleNamespace(poll=lambda timeout_ms, max_records: polls.pop() if polls else [])
    args = SimpleNamespace(max_messages=None, timeout_ms=None, print_key=False, print_offset=False)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        count = consume_cli._poll_loop(consumer, args, emit, cli_output.NullMeter())
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # put back
    finally:
        signal.signal(signal.SIGINT, previous)  # even with the held-back handler left installed
    return written, count, polls


def test_ctrl_c_right_after_a_record_is_written_still_counts_it() -> None:
    """Ctrl-C landing between a record's write and its count: the batch is finished, the loop
    ends, and the count it returns is what was written. Before, the summary could say 0 for a
    record that was printed."""
    written, count, polls = _poll_a_batch_with_a_ctrl_c_after_its_first_record()
    assert written == ["v0", "v1"]
    assert count == 2
    assert polls == []  # one poll: the Ctrl-C ended the loop right after its batch


class _SignalWithACtrlCPending:
    """deploy.consume_cli's `signal` module, except that a Ctrl-C is pending the first time the
    default handler is put back; it runs the handler still installed first, as the real
    signal.signal() runs a pending one before it swaps."""

    def __init__(self) -> None:
        self.pending = 1

    def __getattr__(self, name: str) -> Any:
        return getattr(signal, name)

    def signal(self, signum: int, handler: Any) -> Any:
        if handler is signal.default_int_handler and self.pending:
            self.pending = 0
            signal.raise_signal(signal.SIGINT)  # runs the installed handler, which may raise
        return signal.signal(signum, handler)


def test_a_second_ctrl_c_pending_as_the_batch_ends_leaves_the_default_handler(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two Ctrl-Cs while a batch is printed, the second still pending when the batch ends: the
    held-back handler raised out of the signal.signal() meant to remove it, and stayed the SIGINT
    handler for the rest of the process, so client/caller_loop.py no longer took Ctrl-C over and
    a later one (the consumer's final commit, leaving the group) raised inside an event-loop
    callback. Now the default handler is back and the loop ends once, its batch counted."""
    second = _SignalWithACtrlCPending()
    monkeypatch.setattr(consume_cli, "signal", second)
    written, count, polls = _poll_a_batch_with_a_ctrl_c_after_its_first_record()
    assert second.pending == 0  # the second Ctrl-C came
    assert written == ["v0", "v1"]
    assert count == 2
    assert polls == []  # one poll: the KeyboardInterrupt ended the loop right after its batch
