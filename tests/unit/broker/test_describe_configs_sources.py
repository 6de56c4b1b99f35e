"""DescribeConfigs' sources and synonyms as pure functions of a broker's config and a topic's
overrides (broker/config_entries.py)."""

from __future__ import annotations

from pathlib import Path

from broker.config import BrokerConfig, load_config
from broker.config_entries import broker_entries, topic_entries
from protocol.api.admin import SOURCE_DEFAULT_CONFIG as DEFAULT
from protocol.api.admin import SOURCE_STATIC_BROKER_CONFIG as STATIC
from protocol.api.admin import SOURCE_TOPIC_CONFIG as TOPIC


def _synonyms(entry: object) -> list[tuple[str, str | None, int]]:
    return [(s.name, s.value, s.source) for s in entry.synonyms]  # type: ignore[attr-defined]


def test_a_topic_value_comes_from_its_override_then_the_file_then_the_default() -> None:
    config = BrokerConfig(1, Path("/x"), topic_defaults={"cleanup.policy": "compact"})
    entries = {e.name: e for e in topic_entries(config, {"retention.ms": "5"}, synonyms=True)}
    names = ("cleanup.policy", "retention.ms", "min.cleanable.dirty.ratio")
    policy, retention, ratio = (entries[n] for n in names)
    assert (policy.value, policy.source, policy.is_default) == ("compact", STATIC, True)
    assert _synonyms(policy) == [("log.cleanup.policy", "compact", STATIC),
                                 ("log.cleanup.policy", "delete", DEFAULT)]  # fmt: skip
    assert (retention.value, retention.source, retention.is_default) == ("5", TOPIC, False)
    assert _synonyms(retention)[0] == ("retention.ms", "5", TOPIC)
    assert (ratio.value, ratio.source) == ("0.5", DEFAULT)
    assert all(not e.read_only and not e.is_sensitive and e.documentation for e in entries.values())
    assert all(e.synonyms == [] for e in topic_entries(config, {}, synonyms=False))


def test_a_broker_lists_its_topic_defaults_under_broker_names(tmp_path: Path) -> None:
    path = tmp_path / "broker.toml"
    path.write_text('broker_id = 1\nlog_dir = "/x"\nhost = "127.0.0.1"\n'
                    '[topic_defaults]\n"cleanup.policy" = "compact"\n')  # fmt: skip
    config = load_config(path)
    entries = {e.name: e for e in broker_entries(config, "1", synonyms=True)}
    assert (entries["log.cleanup.policy"].value, entries["log.cleanup.policy"].source) == (
        "compact", STATIC,
    )  # fmt: skip
    assert entries["host.name"].source == STATIC  # set in the file, to its default value
    assert entries["port"].source == DEFAULT and entries["port"].value == "9092"
    assert _synonyms(entries["host.name"]) == [("host.name", "127.0.0.1", STATIC),
                                               ("host.name", "127.0.0.1", DEFAULT)]  # fmt: skip
    assert entries["log.cleaner.min.cleanable.ratio"].source == DEFAULT
    delay = entries["group.initial.rebalance.delay.ms"]  # Kafka's name and default
    assert (delay.value, delay.source) == ("3000", DEFAULT)
    assert entries["host.name"].read_only and not entries["log.cleanup.policy"].read_only
    assert "cleanup.policy" not in entries  # topic names are not broker names


def test_log_dirs_are_described_as_kafka_describes_a_list() -> None:
    from protocol.api.admin import TYPE_LIST

    several = {e.name: e for e in broker_entries(
        load_config(None, broker_id=1, log_dirs="/a,/b"), "1", synonyms=False)}  # fmt: skip
    assert (several["log.dirs"].value, several["log.dirs"].config_type) == ("/a,/b", TYPE_LIST)
    assert several["log.dir"].value == "/a"  # the first: log.dirs takes precedence
    one = {e.name: e for e in broker_entries(load_config(None, broker_id=1, log_dir="/x"), "1",
                                             synonyms=False)}  # fmt: skip
    assert one["log.dirs"].value is None and one["log.dirs"].source == DEFAULT
