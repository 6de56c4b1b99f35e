"""`odradek topics alter-config` and `add-partitions` without a cluster: parsing and usage
errors (the commands themselves run against a real cluster in
tests/integration/test_kafka_admin_configs.py)."""

from __future__ import annotations

import argparse

import pytest

from deploy import cli
from deploy.topics_alter_cli import parse_config_changes, parse_replica_assignment
from deploy.topics_cli import _new_topic
from protocol.errors import UsageError


def test_parse_config_changes() -> None:
    assert parse_config_changes(["retention.ms=1000", " segment.ms = 5 "], ["flush.ms"]) == (
        {"retention.ms": "1000", "segment.ms": "5"},
        ["flush.ms"],
    )
    assert parse_config_changes(None, ["a"]) == ({}, ["a"])


@pytest.mark.parametrize(
    ("sets", "deletes"),
    [
        (["retention.ms"], None),
        (["=1"], None),
        (["a=1", "a=2"], None),
        (["a=1"], ["a"]),
        (None, ["a", "a"]),
        (None, ["a=1"]),
        (None, None),
    ],
)
def test_parse_config_changes_refusals(sets: list[str] | None, deletes: list[str] | None) -> None:
    with pytest.raises(UsageError):
        parse_config_changes(sets, deletes)


def test_the_parser_knows_both_commands() -> None:
    parser = cli.build_parser()
    args = parser.parse_args(
        ["topics", "alter-config", "t", "--set", "a=1", "--set", "b=2", "--delete", "c"]
    )
    assert (args.name, args.set_configs, args.delete_configs) == ("t", ["a=1", "b=2"], ["c"])
    assert not args.validate_only
    args = parser.parse_args(
        ["topics", "add-partitions", "t", "--partitions", "4", "--replica-assignment", "1:2"]
    )
    assert (args.partitions, args.replica_assignment) == (4, ((1, 2),))
    with pytest.raises(SystemExit):
        parser.parse_args(["topics", "add-partitions", "t"])  # --partitions is required


def test_alter_config_without_changes_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["topics", "alter-config", "t", "--bootstrap", "127.0.0.1:1"]) == 2
    assert "nothing to change" in capsys.readouterr().err


def test_create_takes_a_kafka_topics_replica_assignment() -> None:
    assert parse_replica_assignment("1:2,2:3,3:1") == ((1, 2), (2, 3), (3, 1))
    assert parse_replica_assignment("4") == ((4,),)
    for bad in ("1:x", "1,,2", "-1", "", "1:"):
        with pytest.raises(argparse.ArgumentTypeError):
            parse_replica_assignment(bad)
    parser = cli.build_parser()
    args = parser.parse_args(["topics", "create", "t", "--replica-assignment", "1:2,2:3"])
    topic = _new_topic(args)
    assert (topic.replica_assignment, topic.num_partitions, topic.replication_factor) == (
        ((1, 2), (2, 3)), -1, -1,
    )  # fmt: skip
    assert _new_topic(parser.parse_args(["topics", "create", "t", "--partitions", "2"]))[1:3] == (
        2, 1,
    )  # fmt: skip
    with pytest.raises(UsageError):
        asked = ["--replica-assignment", "1", "--replication-factor", "1"]
        _new_topic(parser.parse_args(["topics", "create", "t", *asked]))
    for line in (["--replica-assignment", "1", "--partitions", "1"], []):
        with pytest.raises(SystemExit):  # argparse: one of the two, not both
            parser.parse_args(["topics", "create", "t", *line])
