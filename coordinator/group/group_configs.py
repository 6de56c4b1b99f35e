"""Group configs (KIP-848, Kafka's GroupConfig): per-group overrides of the broker's
group.consumer.* settings, set with IncrementalAlterConfigs / AlterConfigs on a GROUP resource
(type 32) and read back with DescribeConfigs.

A group's overrides are a {name: value} map kept in ZooKeeper (coordinator/cluster/
group_configs.py: /config/groups/<group>) and followed by every broker into `GroupConfigs`,
whose `consumer_config(group)` is what the coordinator's KIP-848 heartbeats use: the session
timeout after which a silent member is fenced, and the heartbeat interval members are told.

The table (`GROUP_CONFIGS`) is Kafka's consumer group configs; its share-group ones
(`share.*`, Kafka's share groups, KIP-932) are share_configs.py's, checked against the
broker's group.share.min/max.* bounds there (`share_config(group)` is what a share group's
heartbeats use).
Checks, as Kafka's GroupConfig.validate makes them on the overrides over the broker's values
(each failure INVALID_CONFIG with Kafka's line): a known name, an integer, within the broker's
group.consumer.min/max.* bounds, and a session timeout above the heartbeat interval. The
broker's own group.consumer.* settings must meet the same bounds (`broker_bounds`, called
when its config is loaded). Pure, but for the in-memory map `GroupConfigs` keeps.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Protocol

from coordinator.group import share_configs
from coordinator.group.consumer_group import ConsumerConfig
from coordinator.group.share_configs import ShareBounds
from coordinator.group.share_group import ShareConfig
from protocol.errors import InvalidConfigError, UsageError

SESSION = "consumer.session.timeout.ms"
HEARTBEAT = "consumer.heartbeat.interval.ms"


@dataclass(frozen=True, slots=True)
class GroupConfigDef:
    name: str
    broker_name: str  # the broker setting it overrides, by Kafka's name
    doc: str


GROUP_CONFIGS: dict[str, GroupConfigDef] = {
    SESSION: GroupConfigDef(SESSION, "group.consumer.session.timeout.ms",
                            "The timeout to detect client failures when using the consumer "
                            "group protocol."),
    HEARTBEAT: GroupConfigDef(HEARTBEAT, "group.consumer.heartbeat.interval.ms",
                              "The heartbeat interval given to the members of a consumer "
                              "group."),
}  # fmt: skip
SHARE_PREFIX = "share."


@dataclass(frozen=True, slots=True)
class ConsumerBounds:
    """The broker's group.consumer.min/max.session.timeout.ms and heartbeat.interval.ms."""

    min_session_timeout_ms: int = 45_000
    max_session_timeout_ms: int = 60_000
    min_heartbeat_interval_ms: int = 5_000
    max_heartbeat_interval_ms: int = 15_000


def broker_bounds(settings: Mapping[str, object]) -> ConsumerBounds:
    """The bounds in the broker's settings (given by their config-file names, group_consumer_*),
    checked with the defaults they bound, as Kafka's GroupCoordinatorConfig requires them:
    UsageError naming the settings otherwise."""

    def get(name: str) -> int:
        return int(settings[f"group_consumer_{name}"])  # type: ignore[call-overload]

    for what in ("session_timeout_ms", "heartbeat_interval_ms"):
        low, value, high = get(f"min_{what}"), get(what), get(f"max_{what}")
        if not low <= value <= high:
            raise UsageError(f"group_consumer_{what} {value} must be within group_consumer_min_"
                             f"{what} {low} and group_consumer_max_{what} {high}")  # fmt: skip
    if get("heartbeat_interval_ms") >= get("session_timeout_ms"):
        raise UsageError("group_consumer_heartbeat_interval_ms must be below "
                         "group_consumer_session_timeout_ms")  # fmt: skip
    return ConsumerBounds(get("min_session_timeout_ms"), get("max_session_timeout_ms"),
                          get("min_heartbeat_interval_ms"),
                          get("max_heartbeat_interval_ms"))  # fmt: skip


def check_names(
    overrides: Mapping[str, str], share: ShareConfig, share_bounds: ShareBounds
) -> None:
    for name in overrides:
        if name not in GROUP_CONFIGS and not name.startswith(SHARE_PREFIX):
            raise InvalidConfigError(f"Unknown group config name: {name}")
    own = {n: v for n, v in overrides.items() if n.startswith(SHARE_PREFIX)}
    share_configs.check_all(own, share, share_bounds)


def effective(
    overrides: Mapping[str, str], defaults: ConsumerConfig, bounds: ConsumerBounds,
    share: ShareConfig | None = None, share_bounds: ShareBounds | None = None,
) -> ConsumerConfig:  # fmt: skip
    """`defaults` with the group's overrides, checked as Kafka's GroupConfig.validate checks
    them, the share.* ones against `share` and `share_bounds` (Kafka's defaults when not
    given) (InvalidConfigError: a refusal's line)."""
    check_names(overrides, share or ShareConfig(), share_bounds or ShareBounds())
    session = _int(overrides, SESSION, defaults.session_timeout_ms)
    heartbeat = _int(overrides, HEARTBEAT, defaults.heartbeat_interval_ms)
    b = bounds
    for name, value, low, high, setting in (
        (HEARTBEAT, heartbeat, b.min_heartbeat_interval_ms, b.max_heartbeat_interval_ms,
         "heartbeat.interval.ms"),
        (SESSION, session, b.min_session_timeout_ms, b.max_session_timeout_ms,
         "session.timeout.ms"),
    ):  # fmt: skip
        if value < low:
            raise InvalidConfigError(f"{name} must be greater than or equal to "
                                     f"group.consumer.min.{setting} ({low})")  # fmt: skip
        if value > high:
            raise InvalidConfigError(f"{name} must be less than or equal to "
                                     f"group.consumer.max.{setting} ({high})")  # fmt: skip
    if session <= heartbeat:
        raise InvalidConfigError(f"{SESSION} must be greater than {HEARTBEAT}")
    return replace(defaults, session_timeout_ms=session, heartbeat_interval_ms=heartbeat)


def _int(overrides: Mapping[str, str], name: str, default: int) -> int:
    text = overrides.get(name)
    if text is None:
        return default
    try:
        return int(text.strip())
    except ValueError:
        raise InvalidConfigError(
            f"Invalid value {text} for configuration {name}: Not a number of type INT"
        ) from None


class GroupConfigStore(Protocol):
    """Where group configs are kept (coordinator/cluster/group_configs.py: ZooKeeper)."""

    async def read(self, group_id: str) -> dict[str, str]: ...

    async def write(self, group_id: str, config: Mapping[str, str]) -> None: ...


class GroupConfigs:
    """Every group's overrides on this broker, as ZooKeeper last said (`apply`, `replace_all`
    are the follower's), what they make of the broker's group.consumer.* settings, and the
    `store` DescribeConfigs and AlterConfigs read and write (None: not kept, a bare
    coordinator's)."""

    def __init__(
        self, defaults: ConsumerConfig, bounds: ConsumerBounds,
        store: GroupConfigStore | None = None, share: ShareConfig | None = None,
        share_bounds: ShareBounds | None = None,
    ) -> None:  # fmt: skip
        self.defaults = defaults
        self.bounds = bounds
        self.store = store
        self.share = share or ShareConfig()  # the broker's group.share.* settings
        self.share_bounds = share_bounds or ShareBounds()
        self._overrides: dict[str, dict[str, str]] = {}

    def overrides(self, group_id: str) -> dict[str, str]:
        return dict(self._overrides.get(group_id, {}))

    def group_ids(self) -> list[str]:
        """The groups with overrides of their own, sorted."""
        return sorted(self._overrides)

    def apply(self, group_id: str, overrides: Mapping[str, str]) -> None:
        if overrides:
            self._overrides[group_id] = dict(overrides)
        else:
            self._overrides.pop(group_id, None)

    def replace_all(self, configs: Mapping[str, Mapping[str, str]]) -> None:
        self._overrides = {g: dict(c) for g, c in configs.items() if c}

    def consumer_config(self, group_id: str) -> ConsumerConfig:
        """The settings the group's KIP-848 members get: the broker's, with the group's
        overrides where they are valid (ones the broker's bounds, narrowed since, refuse are
        left out: the broker's value stands)."""
        overrides = self._overrides.get(group_id)
        if not overrides:
            return self.defaults
        try:
            return effective(overrides, self.defaults, self.bounds, self.share, self.share_bounds)
        except InvalidConfigError:
            return self.defaults

    def share_config(self, group_id: str) -> ShareConfig:
        """The settings a share group's members get: the broker's group.share.* ones, with
        the group's share.* overrides where they are valid (share_configs.share_config)."""
        overrides = self._overrides.get(group_id)
        if not overrides:
            return self.share
        return share_configs.share_config(overrides, self.share, self.share_bounds)

    def check(self, overrides: Mapping[str, str]) -> None:
        """A new override set checked as Kafka checks it (InvalidConfigError: its line)."""
        effective(overrides, self.defaults, self.bounds, self.share, self.share_bounds)
