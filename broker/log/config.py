"""A partition log's configuration, by Kafka's topic-config names.

`LogConfig` is frozen; a log changes configuration by `Log.update_config(new)`. Its fields are
the topic configs read by the log, the cleaner and the partition, one field per row of the
registry (protocol/topic_config.py: name, type, default, bounds, doc), which `from_properties`
/ `to_properties` and `__post_init__` read; a field's name is its row's `attr`. So adding a
config is a row there and a field here.

`unclean.leader.election.enable` (read by the controller) is checked and skipped; a refused
config (tiered storage, ...) raises InvalidConfigError with its reason. Plus odradek's own
shorthand `fsync = always | never` (flush.messages 1 / never). "Never" and "unlimited" are
None; Kafka writes them as Long.MAX_VALUE (flush.*) or -1 (retention.*), and either is read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

from protocol.errors import InvalidConfigError
from protocol.topic_config import (
    CLEANUP_COMPACT,
    CLEANUP_DELETE,
    INT_MAX,
    LONG_MAX,
    OFFSET_INDEX_ENTRY_BYTES,
    TOPIC_CONFIGS,
    TopicConfigDef,
    lookup,
)

__all__ = ["CONFIG_NAMES", "INT_MAX", "LONG_MAX", "OFFSET_INDEX_ENTRY_BYTES", "LogConfig"]

_ROWS: dict[str, TopicConfigDef] = {
    row.attr: row for row in TOPIC_CONFIGS.values() if row.attr is not None
}  # LogConfig field -> its row


@dataclass(frozen=True, slots=True)
class LogConfig:
    segment_bytes: int = 1 << 30
    segment_ms: int = 7 * 24 * 3600 * 1000
    segment_jitter_ms: int = 0
    index_interval_bytes: int = 4096
    segment_index_bytes: int = 10 * 1024 * 1024
    flush_messages: int | None = None  # None: never fsync (the OS decides); 1: always
    flush_ms: int | None = None
    retention_ms: int | None = 7 * 24 * 3600 * 1000  # None: unlimited
    retention_bytes: int | None = None
    max_message_bytes: int = 1048588
    file_delete_delay_ms: int = 60000
    min_insync_replicas: int = 1  # a partition-level setting; the log itself ignores it
    cleanup_policy: str = CLEANUP_DELETE  # "delete", "compact" or "compact,delete"
    delete_retention_ms: int = 86_400_000
    min_cleanable_dirty_ratio: float = 0.5
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = LONG_MAX
    compression_type: str = "producer"
    compression_gzip_level: int = -1
    compression_lz4_level: int = 9
    compression_zstd_level: int = 3
    message_timestamp_type: str = "CreateTime"
    message_timestamp_before_max_ms: int = LONG_MAX
    message_timestamp_after_max_ms: int = LONG_MAX
    preallocate: bool = False  # a hint: stored and described only
    message_downconversion_enable: bool = True  # a hint: stored and described only

    def __post_init__(self) -> None:
        for attr, row in _ROWS.items():
            value = getattr(self, attr)
            checked = row.check(value)
            if checked != value or type(checked) is not type(value):
                object.__setattr__(self, attr, checked)  # normalized: "delete,compact", 1 -> 1.0

    @property
    def fsync_always(self) -> bool:
        return self.flush_messages == 1

    @property
    def compact(self) -> bool:
        """The cleaner compacts this log (policy compact or compact,delete)."""
        return CLEANUP_COMPACT in self.cleanup_policy.split(",")

    @property
    def delete_enabled(self) -> bool:
        """Retention deletes old segments (policy delete or compact,delete)."""
        return CLEANUP_DELETE in self.cleanup_policy.split(",")

    @property
    def log_append_time(self) -> bool:
        return self.message_timestamp_type == "LogAppendTime"

    @classmethod
    def from_properties(cls, props: Mapping[str, str], base: LogConfig | None = None) -> LogConfig:
        """`base` (default: the defaults) overridden by Kafka-named properties."""
        changes: dict[str, Any] = {}
        for key, text in props.items():
            if key == "fsync":
                changes["flush_messages"] = _parse_fsync(text)
                continue
            row = lookup(key)  # unknown or refused: InvalidConfigError
            value = row.parse(text)
            if row.attr is not None:
                changes[row.attr] = value
        return replace(base if base is not None else cls(), **changes)

    def to_properties(self) -> dict[str, str]:
        """{Kafka name: text} of every field, in the registry's order."""
        return {row.name: row.text(getattr(self, attr)) for attr, row in _ROWS.items()}


def _parse_fsync(text: str) -> int | None:
    value = str(text).strip().lower()
    if value == "always":
        return 1
    if value == "never":
        return None
    raise InvalidConfigError(f"fsync must be 'always' or 'never', not {text!r}")


CONFIG_NAMES: tuple[str, ...] = (*(r.name for r in _ROWS.values()), "fsync")
assert {f.name for f in fields(LogConfig)} == set(_ROWS), "a LogConfig field without a row"
assert LogConfig().to_properties() == {r.name: r.default for r in _ROWS.values()}
