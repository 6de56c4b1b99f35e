"""The example configs in deploy/configs/ load as the broker and ZooKeeper expect them."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.config import load_config

CONFIGS = Path(__file__).resolve().parents[3] / "deploy" / "configs"


@pytest.mark.parametrize("broker_id", [1, 2, 3])
def test_broker_configs_load_and_share_the_ensemble(broker_id: int) -> None:
    config = load_config(CONFIGS / f"broker-{broker_id}.toml")
    assert config.broker_id == broker_id
    assert config.host == f"broker{broker_id}.example.internal"
    hosts, _, chroot = config.zookeeper.partition("/")
    assert chroot == "odradek"
    assert [h.split(":")[0] for h in hosts.split(",")] == [
        "zk1.example.internal",
        "zk2.example.internal",
        "zk3.example.internal",
    ]
    assert config.default_log_config().retention_ms == 7 * 24 * 3600 * 1000


def test_flags_override_the_file() -> None:
    config = load_config(CONFIGS / "broker-1.toml", port=19092, log_dir=Path("/tmp/x"))
    assert (config.port, config.log_dir, config.broker_id) == (19092, Path("/tmp/x"), 1)


def test_zoo_cfg_is_a_three_node_ensemble_within_the_broker_session_timeout() -> None:
    lines = (CONFIGS / "zoo.cfg").read_text().splitlines()
    cfg = dict(line.split("=", 1) for line in lines if line and not line.startswith("#"))
    servers = {k: v for k, v in cfg.items() if k.startswith("server.")}
    assert sorted(servers) == ["server.1", "server.2", "server.3"]
    assert all(v.endswith(":2888:3888") for v in servers.values())
    timeout_ms = load_config(CONFIGS / "broker-1.toml").zookeeper_session_timeout_ms
    assert int(cfg["minSessionTimeout"]) <= timeout_ms <= int(cfg["maxSessionTimeout"])
