"""Share groups' own configs (KIP-932, Kafka's GroupConfig share.* entries), set with
IncrementalAlterConfigs on a GROUP resource like the consumer ones (group_configs.py), and read
on each partition leader for that group's share partitions (broker/share/settings.py).

Served: `share.auto.offset.reset` (latest, earliest: where a share partition starts),
`share.isolation.level` (read_uncommitted, read_committed), `share.record.lock.duration.ms`
(positive; Kafka's group.share.min/max.record.lock.duration.ms bounds are not kept yet) and
`share.delivery.count.limit` (2 to 10, Kafka's group.share.min/max.delivery.count.limit
defaults). Kafka's other share.* group configs are refused with a line saying so. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping

from protocol.errors import InvalidConfigError

AUTO_OFFSET_RESET = "share.auto.offset.reset"
ISOLATION_LEVEL = "share.isolation.level"
RECORD_LOCK_DURATION = "share.record.lock.duration.ms"
DELIVERY_COUNT_LIMIT = "share.delivery.count.limit"
CHOICES = {
    AUTO_OFFSET_RESET: ("latest", "earliest"),
    ISOLATION_LEVEL: ("read_uncommitted", "read_committed"),
}
INT_RANGES = {RECORD_LOCK_DURATION: (1, 2**31 - 1), DELIVERY_COUNT_LIMIT: (2, 10)}
SHARE_CONFIGS = (*CHOICES, *INT_RANGES)


def check(name: str, value: str) -> None:
    """InvalidConfigError with Kafka's kind of line unless `value` is valid for `name`."""
    if name in CHOICES:
        if value.strip().lower() not in CHOICES[name]:
            raise InvalidConfigError(
                f"Invalid value {value} for configuration {name}: String must be one of: "
                + ", ".join(CHOICES[name])
            )
        return
    if name not in INT_RANGES:
        raise InvalidConfigError(f"{name}: a share group config odradek does not serve yet")
    low, high = INT_RANGES[name]
    try:
        number = int(value.strip())
    except ValueError:
        raise InvalidConfigError(
            f"Invalid value {value} for configuration {name}: Not a number of type INT"
        ) from None
    if not low <= number <= high:
        raise InvalidConfigError(f"{name} must be within {low} and {high}")


def valid(overrides: Mapping[str, str]) -> dict[str, str]:
    """The group's share.* overrides that are valid (others are left out: defaults stand)."""
    out = {}
    for name, value in overrides.items():
        if name in SHARE_CONFIGS:
            try:
                check(name, value)
            except InvalidConfigError:
                continue
            out[name] = value.strip().lower()
    return out
