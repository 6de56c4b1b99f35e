"""DescribeConfigs and AlterConfigs / IncrementalAlterConfigs on a GROUP resource (type 32):
a group's configs (KIP-848), for broker/operations/describe_configs.py and alter_configs.py.

The table, the checks and every broker's copy are coordinator/group/group_configs.py's
(`ctx.groups.configs`); the overrides are read from and written to its store (ZooKeeper,
/config/groups/<group>), so a write through one broker is described by any other at once, and
the coordinators follow it through the config change notifications.

Described as Kafka describes a group: every group config (the consumer ones and the share
ones, share_configs.SHARE_CONFIGS), a group's own value as GROUP_CONFIG (8), else the
broker's group.consumer.* / group.share.* setting (STATIC_BROKER_CONFIG when its config file
sets it, else DEFAULT_CONFIG; a share config without a broker setting, such as
share.auto.offset.reset, has its fixed DEFAULT_CONFIG); INT or STRING, never read-only or
sensitive; synonyms in that order under their own names. A group need not exist to have
configs (Kafka's rule); an empty group name is INVALID_REQUEST. A change is applied as
alter_configs.py applies a topic's (a whole-set replace, or SET / DELETE in order; APPEND and
SUBTRACT take only LIST configs, and a group has none: INVALID_CONFIG), then the whole set is
checked (`GroupConfigs.check`: INVALID_CONFIG with Kafka's line, the share.* ones within the
broker's group.share.min/max.*) and, unless validate_only, written.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from broker.config import BrokerConfig
from broker.context import BrokerContext
from coordinator.group.group_configs import GROUP_CONFIGS, HEARTBEAT, SESSION
from coordinator.group.share_configs import SHARE_CONFIGS
from protocol.api.admin import (
    OP_DELETE,
    OP_SET,
    SOURCE_DEFAULT_CONFIG,
    SOURCE_GROUP_CONFIG,
    SOURCE_STATIC_BROKER_CONFIG,
    TYPE_INT,
    TYPE_STRING,
    ConfigEntry,
    ConfigSynonym,
)
from protocol.errors import InvalidConfigError, InvalidRequestError

Change = tuple[str, "str | None", int]  # (name, value, op): alter_configs.ConfigChange's fields
# each group config's broker setting (BrokerConfig's field)
_BROKER_FIELDS = {SESSION: "group_consumer_session_timeout_ms",
                  HEARTBEAT: "group_consumer_heartbeat_interval_ms"}  # fmt: skip


async def overrides(ctx: BrokerContext, group_id: str) -> dict[str, str]:
    if not group_id:
        raise InvalidRequestError("the group name must not be empty")
    configs = ctx.groups.configs
    return await configs.store.read(group_id) if configs.store else configs.overrides(group_id)


async def describe(ctx: BrokerContext, group_id: str, synonyms: bool) -> list[ConfigEntry]:
    return entries(ctx.config, await overrides(ctx, group_id), synonyms)


def _rows() -> list[tuple[str, str | None, str | None, int, str]]:
    """(name, BrokerConfig field or None, broker setting's name, type, doc) of every group
    config, by name."""
    rows: list[tuple[str, str | None, str | None, int, str]] = [
        (name, _BROKER_FIELDS[name], row.broker_name, TYPE_INT, row.doc)
        for name, row in GROUP_CONFIGS.items()
    ]
    for name, share in SHARE_CONFIGS.items():
        field = f"group_share_{share.field}" if share.field else None
        broker = field.replace("_", ".") if field else None
        rows.append((name, field, broker, TYPE_STRING if share.choices else TYPE_INT, share.doc))
    return sorted(rows)


def entries(config: BrokerConfig, own: Mapping[str, str], synonyms: bool) -> list[ConfigEntry]:
    """The group's entries (pure), by name."""
    out = []
    for name, field, broker_name, kind, doc in _rows():
        found = [(name, own[name], SOURCE_GROUP_CONFIG)] if name in own else []
        if field is None or broker_name is None:
            found.append((name, SHARE_CONFIGS[name].default, SOURCE_DEFAULT_CONFIG))
        else:
            default = str(BrokerConfig.__dataclass_fields__[field].default)
            broker = str(getattr(config, field))
            if field in config.explicit or broker != default:
                found.append((broker_name, broker, SOURCE_STATIC_BROKER_CONFIG))
            found.append((broker_name, default, SOURCE_DEFAULT_CONFIG))
        _, value, source = found[0]
        out.append(ConfigEntry(
            name, value, False, source != SOURCE_GROUP_CONFIG, source, kind, False,
            [ConfigSynonym(*f) for f in found] if synonyms else [], doc,
        ))  # fmt: skip
    return out


async def alter(
    ctx: BrokerContext, group_id: str, changes: Sequence[Change], incremental: bool,
    validate_only: bool,
) -> None:  # fmt: skip
    current = await overrides(ctx, group_id)
    new = altered(current, changes, incremental)
    configs = ctx.groups.configs
    configs.check(new)  # InvalidConfigError: Kafka's line
    if validate_only or configs.store is None:
        return
    await configs.store.write(group_id, new)


def altered(
    current: Mapping[str, str], changes: Sequence[Change], incremental: bool
) -> dict[str, str]:
    """The group's new override set (pure)."""
    if any(n > 1 for n in Counter(name for name, _, _ in changes).values()):
        raise InvalidRequestError("error due to duplicate config keys")
    if not incremental:
        return {name: value for name, value, _ in changes if value is not None}
    out = dict(current)
    for name, value, op in changes:
        if op == OP_SET:
            if value is None:
                raise InvalidRequestError(f"SET {name} needs a value, not null")
            out[name] = value
        elif op == OP_DELETE:
            out.pop(name, None)
        else:
            raise InvalidConfigError(f"{name} is not a list: only SET and DELETE apply to it")
    return out
