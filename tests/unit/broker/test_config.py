"""BrokerConfig loading: TOML, overrides, one-line errors."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from broker.config import BrokerConfig, load_config
from protocol.errors import UsageError


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "broker.toml"
    path.write_text(text)
    return path


def test_defaults_with_overrides_only(tmp_path: Path) -> None:
    config = load_config(None, broker_id=2, log_dir=str(tmp_path), port=9093, host=None)
    assert config.broker_id == 2
    assert config.log_dir == tmp_path
    assert config.port == 9093
    assert config.host == "127.0.0.1"
    assert config.zookeeper_session_timeout_ms == 6000
    assert config.socket_request_max_bytes == 100 * 1024 * 1024
    assert config.max_inflight_requests_per_connection == 100


def test_file_with_topic_defaults_and_flag_precedence(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        'broker_id = 1\nport = 9000\nlog_dir = "/tmp/x"\nzookeeper = "zk:2181"\n'
        '[topic_defaults]\n"retention.ms" = 1000\n"segment.bytes" = "1048576"\n',
    )
    config = load_config(path, port=9100)
    assert config.port == 9100  # the flag wins
    assert config.zookeeper == "zk:2181"
    assert config.topic_defaults == {"retention.ms": "1000", "segment.bytes": "1048576"}
    log_config = config.default_log_config()
    assert log_config.retention_ms == 1000
    assert log_config.segment_bytes == 1048576


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ('broker_id = 1\nlog_dir = "/x"\nbogus = 3\n', "unknown setting 'bogus'"),
        ('broker_id = "one"\nlog_dir = "/x"\n', "broker_id must be an integer"),
        ('broker_id = 1\nlog_dir = "/x"\nport = 70000\n', "port 70000"),
        ('broker_id = 1\nlog_dir = "/x"\nmax_connections = 0\n', "max_connections must be"),
        ('broker_id = 1\nlog_dir = "/x"\n[topic_defaults]\n"retention.ms" = "soon"\n',
         "topic_defaults"),
        ("broker_id = \n", "not valid TOML"),
        ('port = 1\n', "needs broker_id"),
    ],
)  # fmt: skip
def test_bad_config_is_one_clear_line(tmp_path: Path, text: str, fragment: str) -> None:
    with pytest.raises(UsageError) as info:
        load_config(_write(tmp_path, text))
    assert fragment in str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    "name", [f.name for f in dataclasses.fields(BrokerConfig) if isinstance(f.default, bool)]
)
def test_every_switch_is_read_from_the_file_as_a_bool(tmp_path: Path, name: str) -> None:
    # log_cleaner_enable was read as an integer: `log_cleaner_enable = false` was refused, so
    # no broker (nor LocalCluster's broker_settings) could turn the cleaner off
    default = getattr(BrokerConfig, name)
    text = f'broker_id = 1\nlog_dir = "/x"\n{name} = {str(not default).lower()}\n'
    assert getattr(load_config(_write(tmp_path, text)), name) is (not default)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="cannot read config file"):
        load_config(tmp_path / "nope.toml", broker_id=1, log_dir="/x")


def test_unknown_override() -> None:
    with pytest.raises(UsageError, match="unknown broker setting"):
        load_config(None, broker_id=1, log_dir="/x", colour="blue")


def test_dataclass_validates_directly(tmp_path: Path) -> None:
    with pytest.raises(UsageError):
        BrokerConfig(broker_id=-1, log_dir=tmp_path)


def test_the_fetch_session_cache_takes_its_size_from_the_config(tmp_path: Path) -> None:
    from broker.daemon import Broker

    path = _write(tmp_path, "max_incremental_fetch_session_cache_slots = 7\n")
    broker = Broker(load_config(path, broker_id=1, log_dir=str(tmp_path / "logs")))
    assert broker.replicas.sessions.max_slots == 7
    with pytest.raises(UsageError, match="max_incremental_fetch_session_cache_slots"):
        zero = _write(tmp_path, "max_incremental_fetch_session_cache_slots = 0\n")
        load_config(zero, broker_id=1, log_dir=str(tmp_path / "logs"))


@pytest.mark.parametrize(
    ("name", "value"),
    [(f.name, "x") for f in dataclasses.fields(BrokerConfig)
     if f.type == "str" and f.name != "log_dir"],
)  # fmt: skip
def test_every_text_setting_is_read_as_text(name: str, value: str) -> None:
    # A setting's type comes from its annotation. The separate type list forgot
    # group_consumer_assignors, which was then read as an integer: `group_consumer_assignors =
    # "range"` was refused with "must be an integer", so no broker could choose its assignors.
    try:
        config = load_config(None, broker_id=1, log_dir="/x", **{name: value})
    except UsageError as exc:  # the value may be refused for what it says, never for its type
        assert "must be a" not in exc.message, exc.message
    else:
        assert getattr(config, name) == value


def test_group_consumer_assignors_from_the_file(tmp_path: Path) -> None:
    path = _write(tmp_path, 'broker_id = 1\nlog_dir = "/x"\ngroup_consumer_assignors = "range"\n')
    assert load_config(path).group_consumer_assignors == "range"


def test_group_consumer_migration_policy_is_checked_at_load() -> None:
    """Kafka's group.consumer.migration.policy: one of four words, any case; anything else is
    one line naming them."""
    assert load_config(None, broker_id=1, log_dir="/x").group_consumer_migration_policy == (
        "bidirectional"
    )
    config = load_config(None, broker_id=1, log_dir="/x", group_consumer_migration_policy="Upgrade")
    assert config.group_consumer_migration_policy == "Upgrade"
    with pytest.raises(UsageError) as refused:
        load_config(None, broker_id=1, log_dir="/x", group_consumer_migration_policy="sideways")
    assert "bidirectional, upgrade, downgrade, disabled" in refused.value.message


@pytest.mark.parametrize(
    "name", [f.name for f in dataclasses.fields(BrokerConfig) if f.metadata.get("positive")]
)
def test_every_positive_setting_refuses_zero(name: str) -> None:
    with pytest.raises(UsageError, match=f"{name} must be positive, got 0"):
        load_config(None, broker_id=1, log_dir="/x", **{name: 0})


def test_the_initial_rebalance_delay_may_be_zero_not_negative() -> None:
    assert load_config(None, broker_id=1, log_dir="/x").group_initial_rebalance_delay_ms == 3000
    zero = load_config(None, broker_id=1, log_dir="/x", group_initial_rebalance_delay_ms=0)
    assert zero.group_initial_rebalance_delay_ms == 0
    with pytest.raises(UsageError, match="group_initial_rebalance_delay_ms must be >= 0, got -1"):
        load_config(None, broker_id=1, log_dir="/x", group_initial_rebalance_delay_ms=-1)


def test_loop_debug_mode_is_off_by_default_and_its_threshold_not_negative(tmp_path: Path) -> None:
    assert load_config(None, broker_id=1, log_dir="/x").loop_debug_slow_ms == 0
    path = _write(tmp_path, 'broker_id = 1\nlog_dir = "/x"\nloop_debug_slow_ms = 1\n')
    assert load_config(path).loop_debug_slow_ms == 1
    with pytest.raises(UsageError, match="loop_debug_slow_ms must be >= 0, got -1"):
        load_config(None, broker_id=1, log_dir="/x", loop_debug_slow_ms=-1)
    bad = _write(tmp_path, 'broker_id = 1\nlog_dir = "/x"\nloop_debug_slow_ms = "1ms"\n')
    with pytest.raises(UsageError, match="loop_debug_slow_ms must be an integer"):
        load_config(bad)
