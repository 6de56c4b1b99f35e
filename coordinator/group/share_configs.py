"""Share groups' own configs (KIP-932, Kafka's GroupConfig share.* entries), set with
IncrementalAlterConfigs on a GROUP resource like the consumer ones (group_configs.py), read by
the coordinator's share heartbeats (`share_config`) and on each partition leader for that
group's share partitions (broker/share/settings.py).

One table, `SHARE_CONFIGS`, as Kafka's ConfigDef: each config's name, type, the broker
setting that gives its default (Kafka's group.share.*, or a fixed default), its valid values,
the broker's group.share.min/max.* settings that bound it, and its doc. Kafka 4.2's share
group configs are served (`share.auto.offset.reset`, `share.isolation.level`,
`share.record.lock.duration.ms`, `share.session.timeout.ms`, `share.heartbeat.interval.ms`)
and KIP-1240's `share.delivery.count.limit`; its other share.* names are refused with a line
saying odradek does not serve them yet.

Checks, as Kafka's GroupConfig.validate makes them (each failure INVALID_CONFIG with Kafka's
line): a choice among its values or an integer at least its floor, within the broker's
bounds (`ShareBounds`), and a session timeout above the heartbeat interval. The broker's own
group.share.* settings must meet the same bounds (`broker_bounds`, called when its config
is loaded, UsageError). Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from coordinator.group.share_group import ShareConfig
from protocol.errors import InvalidConfigError, UsageError

AUTO_OFFSET_RESET = "share.auto.offset.reset"
ISOLATION_LEVEL = "share.isolation.level"
RECORD_LOCK_DURATION = "share.record.lock.duration.ms"
DELIVERY_COUNT_LIMIT = "share.delivery.count.limit"
SESSION = "share.session.timeout.ms"
HEARTBEAT = "share.heartbeat.interval.ms"


@dataclass(frozen=True, slots=True)
class ShareConfigDef:
    name: str
    field: str | None  # ShareConfig's field (and group.share.<same> the broker setting): default
    default: str  # when field is None
    choices: tuple[str, ...]  # () for an INT
    floor: int  # an INT's least value (Kafka's atLeast)
    bounded: bool  # held to group.share.min/max.<field> (ShareBounds)
    doc: str


SHARE_CONFIGS: dict[str, ShareConfigDef] = {d.name: d for d in (
    ShareConfigDef(AUTO_OFFSET_RESET, None, "latest", ("latest", "earliest"), 0, False,
                   "The strategy to initialize the share-partition start offset."),
    ShareConfigDef(DELIVERY_COUNT_LIMIT, "delivery_count_limit", "", (), 2, True,
                   "The maximum number of delivery attempts for a record delivered to a "
                   "share group."),
    ShareConfigDef(HEARTBEAT, "heartbeat_interval_ms", "", (), 1, True,
                   "The heartbeat interval given to the members of a share group."),
    ShareConfigDef(ISOLATION_LEVEL, None, "read_uncommitted",
                   ("read_committed", "read_uncommitted"), 0, False,
                   "Controls how to read records written transactionally: read_committed "
                   "delivers only committed transactional records."),
    ShareConfigDef(RECORD_LOCK_DURATION, "record_lock_duration_ms", "", (), 1000, True,
                   "The record acquisition lock duration in milliseconds for share groups."),
    ShareConfigDef(SESSION, "session_timeout_ms", "", (), 1, True,
                   "The timeout to detect client failures when using the share group "
                   "protocol."),
)}  # fmt: skip
BOUNDED = ("session_timeout_ms", "heartbeat_interval_ms", "record_lock_duration_ms",
           "delivery_count_limit")  # fmt: skip


@dataclass(frozen=True, slots=True)
class ShareBounds:
    """The broker's group.share.min/max.* settings (Kafka's defaults), by ShareConfig field."""

    min_session_timeout_ms: int = 45_000
    max_session_timeout_ms: int = 60_000
    min_heartbeat_interval_ms: int = 5_000
    max_heartbeat_interval_ms: int = 15_000
    min_record_lock_duration_ms: int = 15_000
    max_record_lock_duration_ms: int = 60_000
    min_delivery_count_limit: int = 2
    max_delivery_count_limit: int = 10

    def of(self, field: str) -> tuple[int, int]:
        return getattr(self, f"min_{field}"), getattr(self, f"max_{field}")


def broker_bounds(settings: Mapping[str, object]) -> ShareBounds:
    """The bounds in the broker's settings (by their config-file names, group_share_*), with
    the settings they bound checked against them, as Kafka's GroupCoordinatorConfig and
    ShareGroupConfig require: UsageError naming the settings otherwise."""

    def get(name: str) -> int:
        return int(settings[f"group_share_{name}"])  # type: ignore[call-overload]

    for what in BOUNDED:
        low, value, high = get(f"min_{what}"), get(what), get(f"max_{what}")
        if not low <= value <= high:
            raise UsageError(f"group_share_{what} {value} must be within group_share_min_"
                             f"{what} {low} and group_share_max_{what} {high}")  # fmt: skip
    if get("heartbeat_interval_ms") >= get("session_timeout_ms"):
        raise UsageError("group_share_heartbeat_interval_ms must be below "
                         "group_share_session_timeout_ms")  # fmt: skip
    return ShareBounds(*(get(f"{m}_{what}") for what in BOUNDED for m in ("min", "max")))


def check(name: str, value: str, bounds: ShareBounds | None = None) -> None:
    """InvalidConfigError with Kafka's line unless `value` is valid for `name` (and within
    `bounds`, when given)."""
    row = SHARE_CONFIGS.get(name)
    if row is None:
        raise InvalidConfigError(f"{name}: a share group config odradek does not serve yet")
    if row.choices:
        if value.strip().lower() not in row.choices:
            one_of = ", ".join(row.choices)
            raise InvalidConfigError(f"Invalid value {value} for configuration {name}: "
                                     f"String must be one of: {one_of}")  # fmt: skip
        return
    number = _int(name, value)
    if number < row.floor:
        raise InvalidConfigError(f"Invalid value {value} for configuration {name}: "
                                 f"Value must be at least {row.floor}")  # fmt: skip
    if bounds is not None and row.field is not None and row.bounded:
        low, high = bounds.of(row.field)
        broker = row.field.replace("_", ".")
        if number < low:
            raise InvalidConfigError(f"{name} must be greater than or equal to "
                                     f"group.share.min.{broker}")  # fmt: skip
        if number > high:
            raise InvalidConfigError(f"{name} must be less than or equal to "
                                     f"group.share.max.{broker}")  # fmt: skip


def check_all(overrides: Mapping[str, str], defaults: ShareConfig, bounds: ShareBounds) -> None:
    """Each share.* override checked, then the session timeout above the heartbeat interval
    (the broker's value where the group has none), as Kafka's GroupConfig.validate."""
    for name, value in overrides.items():
        check(name, value, bounds)
    session = _int(SESSION, overrides.get(SESSION, str(defaults.session_timeout_ms)))
    beat = _int(HEARTBEAT, overrides.get(HEARTBEAT, str(defaults.heartbeat_interval_ms)))
    if (SESSION in overrides or HEARTBEAT in overrides) and session <= beat:
        raise InvalidConfigError(f"{SESSION} must be greater than {HEARTBEAT}")


def valid(overrides: Mapping[str, str], bounds: ShareBounds | None = None) -> dict[str, str]:
    """The group's share.* overrides that are valid (others are left out: defaults stand)."""
    out = {}
    for name, value in overrides.items():
        if name in SHARE_CONFIGS:
            try:
                check(name, value, bounds)
            except InvalidConfigError:
                continue
            out[name] = value.strip().lower()
    return out


def share_config(
    overrides: Mapping[str, str], defaults: ShareConfig, bounds: ShareBounds
) -> ShareConfig:
    """The settings a share group's members get: the broker's, with the group's valid
    overrides (a session timeout left at or under the heartbeat interval: the broker's)."""
    own = valid(overrides, bounds)
    fields = {row.field: int(own[name]) for name, row in SHARE_CONFIGS.items()
              if row.field is not None and name in own}  # fmt: skip
    out = replace(defaults, **fields)
    if out.session_timeout_ms <= out.heartbeat_interval_ms:
        return replace(out, session_timeout_ms=defaults.session_timeout_ms,
                       heartbeat_interval_ms=defaults.heartbeat_interval_ms)  # fmt: skip
    return out


def _int(name: str, value: str) -> int:
    try:
        return int(value.strip())
    except ValueError:
        raise InvalidConfigError(
            f"Invalid value {value} for configuration {name}: Not a number of type INT"
        ) from None
