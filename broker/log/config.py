"""A partition log's configuration, by Kafka's topic-config names.

`LogConfig` is frozen; a log changes configuration by `Log.update_config(new)`. The fields map
one-to-one to Kafka topic configs (`from_properties` / `to_properties`):

    segment.bytes          segment_bytes          roll the active segment at this size
    segment.ms             segment_ms             ... or this long after its first append
    index.interval.bytes   index_interval_bytes   one sparse index entry per this many bytes
    segment.index.bytes    segment_index_bytes    roll when the offset index reaches this size
    flush.messages         flush_messages         fsync after this many messages (None: never)
    flush.ms               flush_ms               fsync this long after an unflushed append
    retention.ms           retention_ms           delete closed segments older (-1: unlimited)
    retention.bytes        retention_bytes        keep the log under this size (-1: unlimited)
    max.message.bytes      max_message_bytes      the largest batch accepted
    file.delete.delay.ms   file_delete_delay_ms   keep deleted segments open this long
    min.insync.replicas    min_insync_replicas    acks=all needs at least this many in the ISR

plus the shorthand `fsync = always | never` (flush.messages 1 / never). "Never" is written as
Kafka writes it, Long.MAX_VALUE (9223372036854775807); -1 is accepted too.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

from protocol.errors import InvalidConfigError

LONG_MAX = (1 << 63) - 1
INT_MAX = (1 << 31) - 1
OFFSET_INDEX_ENTRY_BYTES = 16


@dataclass(frozen=True, slots=True)
class _Field:
    attr: str
    minimum: int
    maximum: int
    optional: bool  # may be None ("never" / "unlimited")


# Kafka config name -> how it maps. Positions stay below 2^32 in the index, so segment.bytes
# is an int as in Kafka.
_FIELDS: dict[str, _Field] = {
    "segment.bytes": _Field("segment_bytes", 1, INT_MAX, False),
    "segment.ms": _Field("segment_ms", 1, LONG_MAX, False),
    "index.interval.bytes": _Field("index_interval_bytes", 0, INT_MAX, False),
    "segment.index.bytes": _Field("segment_index_bytes", OFFSET_INDEX_ENTRY_BYTES, INT_MAX, False),
    "flush.messages": _Field("flush_messages", 1, LONG_MAX, True),
    "flush.ms": _Field("flush_ms", 0, LONG_MAX, True),
    "retention.ms": _Field("retention_ms", 0, LONG_MAX, True),
    "retention.bytes": _Field("retention_bytes", 0, LONG_MAX, True),
    "max.message.bytes": _Field("max_message_bytes", 61, INT_MAX, False),
    "file.delete.delay.ms": _Field("file_delete_delay_ms", 0, LONG_MAX, False),
    "min.insync.replicas": _Field("min_insync_replicas", 1, INT_MAX, False),
}
_UNLIMITED_TEXT = {"flush.messages": str(LONG_MAX), "flush.ms": str(LONG_MAX)}
# Topic configs the controller reads from ZooKeeper (not the log): accepted, checked, skipped.
CONTROLLER_BOOL_CONFIGS = frozenset({"unclean.leader.election.enable"})


@dataclass(frozen=True, slots=True)
class LogConfig:
    segment_bytes: int = 1 << 30
    segment_ms: int = 7 * 24 * 3600 * 1000
    index_interval_bytes: int = 4096
    segment_index_bytes: int = 10 * 1024 * 1024
    flush_messages: int | None = None  # None: never fsync (the OS decides); 1: always
    flush_ms: int | None = None
    retention_ms: int | None = 7 * 24 * 3600 * 1000  # None: unlimited
    retention_bytes: int | None = None
    max_message_bytes: int = 1048588
    file_delete_delay_ms: int = 60000
    min_insync_replicas: int = 1  # a partition-level setting; the log itself ignores it

    def __post_init__(self) -> None:
        for key, spec in _FIELDS.items():
            value = getattr(self, spec.attr)
            if value is None and spec.optional:
                continue
            if not isinstance(value, int) or isinstance(value, bool):
                raise InvalidConfigError(f"{key} must be an integer, not {value!r}")
            if not spec.minimum <= value <= spec.maximum:
                raise InvalidConfigError(
                    f"{key} = {value} is outside [{spec.minimum}, {spec.maximum}]"
                )

    @property
    def fsync_always(self) -> bool:
        return self.flush_messages == 1

    @classmethod
    def from_properties(cls, props: Mapping[str, str], base: LogConfig | None = None) -> LogConfig:
        """`base` (default: the defaults) overridden by Kafka-named properties."""
        changes: dict[str, Any] = {}
        for key, text in props.items():
            if key == "fsync":
                changes["flush_messages"] = _parse_fsync(text)
                continue
            if key in CONTROLLER_BOOL_CONFIGS:
                if str(text).strip().lower() not in ("true", "false"):
                    raise InvalidConfigError(f"{key} must be true or false, not {text!r}")
                continue
            spec = _FIELDS.get(key)
            if spec is None:
                raise InvalidConfigError(f"unknown log config {key!r}")
            changes[spec.attr] = _parse_value(key, spec, text)
        return replace(base if base is not None else cls(), **changes)

    def to_properties(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for key, spec in _FIELDS.items():
            value = getattr(self, spec.attr)
            out[key] = str(value) if value is not None else _UNLIMITED_TEXT.get(key, "-1")
        return out


def _parse_fsync(text: str) -> int | None:
    value = str(text).strip().lower()
    if value == "always":
        return 1
    if value == "never":
        return None
    raise InvalidConfigError(f"fsync must be 'always' or 'never', not {text!r}")


def _parse_value(key: str, spec: _Field, text: str) -> int | None:
    try:
        value = int(str(text).strip())
    except ValueError:
        raise InvalidConfigError(f"{key} must be an integer, not {text!r}") from None
    if spec.optional and (value == -1 or (value == LONG_MAX and key.startswith("flush."))):
        return None
    if not spec.minimum <= value <= spec.maximum:
        raise InvalidConfigError(f"{key} = {value} is outside [{spec.minimum}, {spec.maximum}]")
    return value


CONFIG_NAMES: tuple[str, ...] = (*_FIELDS, "fsync")
assert {f.name for f in fields(LogConfig)} == {s.attr for s in _FIELDS.values()}
