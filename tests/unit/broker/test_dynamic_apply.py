"""broker/dynamic_apply.py on an in-process broker (tests/unit/broker/harness.py): a reload
puts the dynamic configs in effect and reconfigures each part that changed, only those."""

from __future__ import annotations

from pathlib import Path

from broker.dynamic_apply import DynamicApplier, cleaner_settings
from broker.log.cleaner.manager import LogCleaner
from broker.log.config import LogConfig
from tests.unit.broker.harness import BROKER_ID, FakeTopicStore, running_broker


async def test_a_reload_reconfigures_what_changed(tmp_path: Path) -> None:
    store = FakeTopicStore()
    async with running_broker(tmp_path, topics=store) as b:
        cleaner = LogCleaner(b.log_manager, b.ctx.clock, cleaner_settings(b.ctx.config),
                             lambda t, p: None)  # fmt: skip
        defaults: list[LogConfig] = []
        tls_reloads: list[bool] = []

        async def set_log_defaults(config: LogConfig) -> None:
            defaults.append(config)

        applier = DynamicApplier(b.ctx, store.read_broker_config, set_log_defaults, cleaner,
                                 lambda: tls_reloads.append(True))  # fmt: skip
        await applier.reload()
        assert (defaults, tls_reloads, b.ctx.config) == ([], [], b.ctx.static_config)

        store.broker_configs["<default>"] = {"log.cleaner.threads": "2",
                                             "message.max.bytes": "2000"}  # fmt: skip
        store.broker_configs[str(BROKER_ID)] = {"message.max.bytes": "1000",
                                                "max.connections": "7"}  # fmt: skip
        await applier.reload()
        assert [d.max_message_bytes for d in defaults] == [1000]  # this broker's wins
        assert (cleaner.settings.threads, b.ctx.config.max_connections) == (2, 7)
        assert tls_reloads == []

        store.broker_configs[str(BROKER_ID)] = {"max.connections": "0"}  # past the checks
        await applier.reload()
        assert b.ctx.config.max_connections == 7  # refused whole: nothing changes
        assert len(defaults) == 1
