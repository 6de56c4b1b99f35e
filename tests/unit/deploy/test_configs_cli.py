"""`odradek configs describe`: the parser and the table (deploy/configs_cli.py)."""

from __future__ import annotations

import pytest

from deploy.cli import build_parser
from deploy.configs_cli import describe_lines, entry_doc, source_name, target_of
from protocol.api.admin import (
    RESOURCE_BROKER,
    RESOURCE_GROUP,
    SOURCE_DEFAULT_CONFIG,
    SOURCE_GROUP_CONFIG,
    SOURCE_STATIC_BROKER_CONFIG,
    SOURCE_TOPIC_CONFIG,
    TYPE_LIST,
    ConfigEntry,
    ConfigSynonym,
)

POLICY = ConfigEntry(
    "cleanup.policy", "compact", False, False, SOURCE_TOPIC_CONFIG, TYPE_LIST, False,
    [ConfigSynonym("cleanup.policy", "compact", SOURCE_TOPIC_CONFIG),
     ConfigSynonym("log.cleanup.policy", "delete", SOURCE_DEFAULT_CONFIG)],
    "delete or compact",
)  # fmt: skip
SEGMENT = ConfigEntry("segment.bytes", "1000", False, True, SOURCE_STATIC_BROKER_CONFIG)


def test_the_table_names_each_source() -> None:
    assert describe_lines([POLICY, SEGMENT], synonyms=False, docs=False) == [
        "NAME            VALUE    SOURCE",
        "cleanup.policy  compact  DYNAMIC_TOPIC_CONFIG",
        "segment.bytes   1000     STATIC_BROKER_CONFIG",
    ]
    lines = describe_lines([POLICY], synonyms=True, docs=True)
    assert lines[1].endswith(
        "cleanup.policy=compact (DYNAMIC_TOPIC_CONFIG), "
        "log.cleanup.policy=delete (DEFAULT_CONFIG)  delete or compact"
    )


def test_json_doc_has_kafkas_names() -> None:
    doc = entry_doc(POLICY)
    assert (doc["source"], doc["type"], doc["synonyms"][1]["source"]) == (
        "DYNAMIC_TOPIC_CONFIG", "LIST", "DEFAULT_CONFIG",
    )  # fmt: skip


def test_parser_takes_a_topic_or_a_broker() -> None:
    args = build_parser().parse_args(["configs", "describe", "--broker", "2", "--synonyms"])
    assert (args.broker, args.topic, args.synonyms) == (2, None, True)
    with pytest.raises(SystemExit):
        build_parser().parse_args(["configs", "describe", "--topic", "t", "--broker", "1"])


def test_parser_takes_a_group_or_brokers_to_describe_and_to_alter() -> None:
    args = build_parser().parse_args(["configs", "describe", "--group", "g1"])
    assert target_of(args) == (RESOURCE_GROUP, "g1")
    args = build_parser().parse_args(["configs", "alter", "--group", "g1", "--set",
                                      "consumer.heartbeat.interval.ms=6000", "--delete",
                                      "consumer.session.timeout.ms"])  # fmt: skip
    assert target_of(args) == (RESOURCE_GROUP, "g1")
    assert (args.set_configs, args.delete_configs, args.validate_only) == (
        ["consumer.heartbeat.interval.ms=6000"], ["consumer.session.timeout.ms"], False,
    )  # fmt: skip
    args = build_parser().parse_args(["configs", "alter", "--broker", "1", "--set", "a=b"])
    assert target_of(args) == (RESOURCE_BROKER, "1")
    args = build_parser().parse_args(["configs", "alter", "--broker-defaults", "--set", "a=b"])
    assert target_of(args) == (RESOURCE_BROKER, "")  # Kafka's cluster default
    args = build_parser().parse_args(["configs", "describe", "--broker-defaults"])
    assert target_of(args) == (RESOURCE_BROKER, "")
    with pytest.raises(SystemExit):
        build_parser().parse_args(["configs", "alter", "--broker", "1", "--broker-defaults"])
    with pytest.raises(SystemExit):
        build_parser().parse_args(["configs", "alter", "--topic", "t", "--group", "g"])


def test_a_groups_own_config_has_kafkas_source_name() -> None:
    assert source_name(SOURCE_GROUP_CONFIG) == "DYNAMIC_GROUP_CONFIG"
