"""Kafka's topic configs, one row each: what every part of odradek knows about a topic config.

`TOPIC_CONFIGS` is the table (Kafka's `LogConfig`/`TopicConfig` for 4.x, as a ConfigDef): per
config its Kafka name, ConfigDef type (and the DescribeConfigs type code it is described as),
default as Kafka writes it, valid values, the broker setting that supplies its default (Kafka's
synonym, e.g. `log.cleanup.policy`), who reads it, and one line of doc. A config odradek does
not do is a row too, `refused` with a one-line reason: every Kafka 4.x topic config is either
in effect or refused, none is accepted and ignored. Adding a config is adding one row.

Who reads a config (`reader`):

    log         the partition's log (broker/log/config.py LogConfig, the produce path)
    cleaner     the log cleaner (compaction)
    partition   the partition's replication (acks=all)
    controller  the controller (leader election), read from ZooKeeper; not a LogConfig field
    refused     nobody: a create or alter naming it fails with `refused` as its message

`parse(text)` turns a config's text into its value (int, float, bool, str; None for a value
meaning "unlimited"/"never") or raises InvalidConfigError in one line; `text(value)` is the
reverse, as DescribeConfigs shows it. Sans-I/O: the broker, the CLI and the console import it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from protocol.api.admin import (
    TYPE_BOOLEAN,
    TYPE_DOUBLE,
    TYPE_INT,
    TYPE_LIST,
    TYPE_LONG,
    TYPE_STRING,
)
from protocol.errors import InvalidConfigError

LONG_MAX = (1 << 63) - 1
LONG_MIN = -(1 << 63)
INT_MAX = (1 << 31) - 1
INT_MIN = -(1 << 31)
OFFSET_INDEX_ENTRY_BYTES = 16

LOG, CLEANER, PARTITION, CONTROLLER, REFUSED = (
    "log",
    "cleaner",
    "partition",
    "controller",
    "refused",
)
READERS = (LOG, CLEANER, PARTITION, CONTROLLER, REFUSED)

# Kafka's ConfigDef.Type name -> DescribeConfigs config_type code.
TYPE_CODES = {"BOOLEAN": TYPE_BOOLEAN, "STRING": TYPE_STRING, "INT": TYPE_INT,
              "LONG": TYPE_LONG, "DOUBLE": TYPE_DOUBLE, "LIST": TYPE_LIST}  # fmt: skip
_INT_BOUNDS = {"INT": (INT_MIN, INT_MAX), "LONG": (LONG_MIN, LONG_MAX)}

CLEANUP_DELETE, CLEANUP_COMPACT, CLEANUP_BOTH = "delete", "compact", "compact,delete"
COMPRESSION_TYPES = ("producer", "uncompressed", "gzip", "snappy", "lz4", "zstd")
TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")
NO_TIERED_STORAGE = "odradek has no tiered storage"
NO_QUOTAS = "odradek has no replication quotas (throttles)"
GONE_IN_4 = "removed in Kafka 4.0 with message formats v0 and v1 (odradek writes v2 only)"


@dataclass(frozen=True, slots=True)
class TopicConfigDef:
    name: str  # Kafka's topic config name
    kind: str  # Kafka's ConfigDef type: BOOLEAN STRING INT LONG DOUBLE LIST
    default: str  # as Kafka writes it (DescribeConfigs, `kafka-configs --describe`)
    broker_name: str | None  # the broker setting that supplies the default (Kafka's synonym)
    reader: str  # one of READERS
    doc: str  # one line
    attr: str | None = None  # the LogConfig field it sets (reader log / cleaner / partition)
    minimum: float | None = None  # INT / LONG / DOUBLE: inclusive bounds
    maximum: float | None = None
    unlimited: int | None = None  # the number meaning "never"/"unlimited" (parsed as None)
    choices: tuple[str, ...] = ()  # STRING / LIST: the values allowed
    refused: str | None = None  # reader refused: why, in one line

    @property
    def type_code(self) -> int:
        return TYPE_CODES[self.kind]

    @property
    def valid(self) -> str:
        """Valid values, as Kafka's docs write them."""
        if self.choices:
            return f"[{', '.join(self.choices)}]"
        if self.kind == "BOOLEAN":
            return "[true, false]"
        lo = "..." if self.minimum is None else _number_text(self.minimum)
        hi = "..." if self.maximum is None else _number_text(self.maximum)
        return f"[{lo},...,{hi}]" if self.minimum is not None or self.maximum is not None else ""

    def parse(self, text: str) -> object:
        """The config's value from its text; InvalidConfigError (one line) if it is not valid."""
        if self.refused is not None:
            raise InvalidConfigError(f"{self.name} is refused: {self.refused}")
        raw = str(text).strip()
        parser = _PARSERS.get(self.kind)
        if parser is None:
            raise InvalidConfigError(f"{self.name}: type {self.kind} is not supported")
        return parser(self, raw)

    def check(self, value: object) -> object:
        """A value given directly (a LogConfig field) checked as `parse` checks text; the value
        normalized (a LIST joined in its canonical order)."""
        if value is None and self.unlimited is not None:
            return None
        if self.kind == "BOOLEAN":
            if not isinstance(value, bool):
                raise InvalidConfigError(f"{self.name} must be true or false, not {value!r}")
            return value
        if self.kind in ("INT", "LONG"):
            if not isinstance(value, int) or isinstance(value, bool):
                raise InvalidConfigError(f"{self.name} must be an integer, not {value!r}")
            return _in_bounds(self, value)
        if self.kind == "DOUBLE":
            if not isinstance(value, int | float) or isinstance(value, bool):
                raise InvalidConfigError(f"{self.name} must be a number, not {value!r}")
            return _in_bounds(self, float(value))
        return self.parse(str(value))

    def text(self, value: object) -> str:
        """A value as DescribeConfigs shows it (None: the `unlimited` number)."""
        if value is None:
            return str(self.unlimited)
        if isinstance(value, bool):
            return "true" if value else "false"
        return str(value)


def _number_text(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


def _in_bounds(row: TopicConfigDef, value: float) -> float:
    lo, hi = row.minimum, row.maximum
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        raise InvalidConfigError(f"{row.name} = {_number_text(value)} is outside {row.valid}")
    return value


def _parse_int(row: TopicConfigDef, raw: str) -> int | None:
    try:
        value = int(raw)
    except ValueError:
        raise InvalidConfigError(f"{row.name} must be an integer, not {raw!r}") from None
    lo, hi = _INT_BOUNDS[row.kind]
    if not lo <= value <= hi:
        raise InvalidConfigError(f"{row.name} = {value} does not fit a Java {row.kind.lower()}")
    if row.unlimited is not None and value in (row.unlimited, -1):
        return None
    return int(_in_bounds(row, value))


def _parse_double(row: TopicConfigDef, raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise InvalidConfigError(f"{row.name} must be a number, not {raw!r}") from None
    if value != value:  # NaN
        raise InvalidConfigError(f"{row.name} must be a number, not {raw!r}")
    return _in_bounds(row, value)


def _parse_bool(row: TopicConfigDef, raw: str) -> bool:
    lowered = raw.lower()
    if lowered not in ("true", "false"):
        raise InvalidConfigError(f"{row.name} must be true or false, not {raw!r}")
    return lowered == "true"


def _parse_string(row: TopicConfigDef, raw: str) -> str:
    if row.choices and raw not in row.choices:
        raise InvalidConfigError(f"{row.name} must be one of {row.valid}, not {raw!r}")
    return raw


def _parse_list(row: TopicConfigDef, raw: str) -> str:
    """A LIST's items, checked against `choices`, joined in `choices` order ("delete,compact"
    and "compact, delete" are both "compact,delete")."""
    items = {item.strip() for item in raw.split(",")}
    bad = sorted(i for i in items if i not in row.choices)
    if not raw or bad:
        raise InvalidConfigError(f"{row.name} must be a list of {row.valid}, not {raw!r}")
    return ",".join(c for c in row.choices if c in items)


_PARSERS: dict[str, Callable[[TopicConfigDef, str], object]] = {
    "INT": _parse_int, "LONG": _parse_int, "DOUBLE": _parse_double, "BOOLEAN": _parse_bool,
    "STRING": _parse_string, "LIST": _parse_list,
}  # fmt: skip


def _refused(name: str, kind: str, default: str, broker_name: str | None, doc: str,
             why: str) -> TopicConfigDef:  # fmt: skip
    return TopicConfigDef(name, kind, default, broker_name, REFUSED, doc, refused=why)


WEEK_MS = 7 * 24 * 3600 * 1000
DAY_MS = 24 * 3600 * 1000

# fmt: off
TOPIC_CONFIGS: dict[str, TopicConfigDef] = {row.name: row for row in (
    # ----- the log: segments, flushing, retention, sizes ---------------------------------------
    TopicConfigDef("segment.bytes", "INT", str(1 << 30), "log.segment.bytes", LOG,
                   "Roll the active segment at this size.", "segment_bytes", 1, INT_MAX),
    TopicConfigDef("segment.ms", "LONG", str(WEEK_MS), "log.roll.ms", LOG,
                   "Roll the active segment this long after its first append.", "segment_ms",
                   1, LONG_MAX),
    TopicConfigDef("segment.jitter.ms", "LONG", "0", "log.roll.jitter.ms", LOG,
                   "A random jitter in [0, this) chosen per segment is taken off segment.ms.",
                   "segment_jitter_ms", 0, LONG_MAX),
    TopicConfigDef("segment.index.bytes", "INT", str(10 * 1024 * 1024),
                   "log.index.size.max.bytes", LOG,
                   "Roll the active segment when its offset index reaches this size.",
                   "segment_index_bytes", OFFSET_INDEX_ENTRY_BYTES, INT_MAX),
    TopicConfigDef("index.interval.bytes", "INT", "4096", "log.index.interval.bytes", LOG,
                   "One sparse index entry per this many bytes of log.",
                   "index_interval_bytes", 0, INT_MAX),
    TopicConfigDef("flush.messages", "LONG", str(LONG_MAX), "log.flush.interval.messages", LOG,
                   "fsync after this many messages (1: always; the maximum: never).",
                   "flush_messages", 1, LONG_MAX, unlimited=LONG_MAX),
    TopicConfigDef("flush.ms", "LONG", str(LONG_MAX), "log.flush.interval.ms", LOG,
                   "fsync this long after an unflushed append (the maximum: never).",
                   "flush_ms", 0, LONG_MAX, unlimited=LONG_MAX),
    TopicConfigDef("retention.ms", "LONG", str(WEEK_MS), "log.retention.ms", LOG,
                   "Delete closed segments older than this (-1: unlimited; policy delete).",
                   "retention_ms", 0, LONG_MAX, unlimited=-1),
    TopicConfigDef("retention.bytes", "LONG", "-1", "log.retention.bytes", LOG,
                   "Delete the oldest segments while the log is above this (-1: unlimited).",
                   "retention_bytes", 0, LONG_MAX, unlimited=-1),
    TopicConfigDef("max.message.bytes", "INT", "1048588", "message.max.bytes", LOG,
                   "The largest record batch accepted, after compression.",
                   "max_message_bytes", 61, INT_MAX),
    TopicConfigDef("file.delete.delay.ms", "LONG", "60000", "log.segment.delete.delay.ms", LOG,
                   "Keep a deleted segment's files open this long (reads in flight).",
                   "file_delete_delay_ms", 0, LONG_MAX),
    TopicConfigDef("preallocate", "BOOLEAN", "false", "log.preallocate", LOG,
                   "A hint, stored and described only: odradek never preallocates segments.",
                   "preallocate"),
    TopicConfigDef("message.downconversion.enable", "BOOLEAN", "true",
                   "log.message.downconversion.enable", LOG,
                   "A hint, stored and described only: odradek serves message format v2 only.",
                   "message_downconversion_enable"),
    # ----- the produce path: codecs and timestamps --------------------------------------------
    TopicConfigDef("compression.type", "STRING", "producer", "compression.type", LOG,
                   "The codec batches are stored with (producer: the producer's own); the "
                   "leader recompresses a batch whose codec differs.", "compression_type",
                   choices=COMPRESSION_TYPES),
    TopicConfigDef("compression.gzip.level", "INT", "-1", "compression.gzip.level", LOG,
                   "gzip level of recompressed batches (-1: zlib's default, 6).",
                   "compression_gzip_level", -1, 9),
    TopicConfigDef("compression.lz4.level", "INT", "9", "compression.lz4.level", LOG,
                   "lz4 level of recompressed batches.", "compression_lz4_level", 1, 17),
    TopicConfigDef("compression.zstd.level", "INT", "3", "compression.zstd.level", LOG,
                   "zstd level of recompressed batches.", "compression_zstd_level", -131072, 22),
    TopicConfigDef("message.timestamp.type", "STRING", "CreateTime",
                   "log.message.timestamp.type", LOG,
                   "CreateTime: the producer's timestamps; LogAppendTime: the leader stamps "
                   "each batch with its append time.", "message_timestamp_type",
                   choices=TIMESTAMP_TYPES),
    TopicConfigDef("message.timestamp.before.max.ms", "LONG", str(LONG_MAX),
                   "log.message.timestamp.before.max.ms", LOG,
                   "CreateTime: refuse (INVALID_TIMESTAMP) a batch with a timestamp more than "
                   "this before the broker's time.", "message_timestamp_before_max_ms",
                   0, LONG_MAX),
    TopicConfigDef("message.timestamp.after.max.ms", "LONG", str(LONG_MAX),
                   "log.message.timestamp.after.max.ms", LOG,
                   "CreateTime: refuse (INVALID_TIMESTAMP) a batch with a timestamp more than "
                   "this after the broker's time.", "message_timestamp_after_max_ms",
                   0, LONG_MAX),
    # ----- the cleaner: compaction -------------------------------------------------------------
    TopicConfigDef("cleanup.policy", "LIST", "delete", "log.cleanup.policy", CLEANER,
                   "delete: retention deletes old segments; compact: the cleaner keeps the "
                   "latest record per key; or both.", "cleanup_policy",
                   choices=(CLEANUP_COMPACT, CLEANUP_DELETE)),
    TopicConfigDef("delete.retention.ms", "LONG", str(DAY_MS),
                   "log.cleaner.delete.retention.ms", CLEANER,
                   "Keep a tombstone this long after the cleaning pass that first reached it.",
                   "delete_retention_ms", 0, LONG_MAX),
    TopicConfigDef("min.cleanable.dirty.ratio", "DOUBLE", "0.5",
                   "log.cleaner.min.cleanable.ratio", CLEANER,
                   "Clean a log once this share of it is dirty (not yet cleaned).",
                   "min_cleanable_dirty_ratio", 0, 1),
    TopicConfigDef("min.compaction.lag.ms", "LONG", "0", "log.cleaner.min.compaction.lag.ms",
                   CLEANER, "Never compact a record younger than this.",
                   "min_compaction_lag_ms", 0, LONG_MAX),
    TopicConfigDef("max.compaction.lag.ms", "LONG", str(LONG_MAX),
                   "log.cleaner.max.compaction.lag.ms", CLEANER,
                   "Clean a log whose oldest dirty record is this old, whatever its ratio.",
                   "max_compaction_lag_ms", 1, LONG_MAX),
    # ----- replication ------------------------------------------------------------------------
    TopicConfigDef("min.insync.replicas", "INT", "1", "min.insync.replicas", PARTITION,
                   "acks=all needs at least this many replicas in the ISR.",
                   "min_insync_replicas", 1, INT_MAX),
    TopicConfigDef("unclean.leader.election.enable", "BOOLEAN", "false",
                   "unclean.leader.election.enable", CONTROLLER,
                   "Elect a replica outside the ISR as a last resort (may lose records)."),
    # ----- refused ----------------------------------------------------------------------------
    _refused("remote.storage.enable", "BOOLEAN", "false", None,
             "Tiered storage for this topic.", NO_TIERED_STORAGE),
    _refused("local.retention.ms", "LONG", "-2", "log.local.retention.ms",
             "Local retention of a tiered topic.", NO_TIERED_STORAGE),
    _refused("local.retention.bytes", "LONG", "-2", "log.local.retention.bytes",
             "Local retention of a tiered topic.", NO_TIERED_STORAGE),
    _refused("remote.log.copy.disable", "BOOLEAN", "false", None,
             "Stop copying segments to tiered storage.", NO_TIERED_STORAGE),
    _refused("remote.log.delete.on.disable", "BOOLEAN", "false", None,
             "Delete tiered segments when tiering is turned off.", NO_TIERED_STORAGE),
    _refused("leader.replication.throttled.replicas", "LIST", "", None,
             "Replicas throttled on the leader side.", NO_QUOTAS),
    _refused("follower.replication.throttled.replicas", "LIST", "", None,
             "Replicas throttled on the follower side.", NO_QUOTAS),
    _refused("message.format.version", "STRING", "3.0-IV1", "log.message.format.version",
             "The message format version.", GONE_IN_4),
    _refused("message.timestamp.difference.max.ms", "LONG", str(LONG_MAX),
             "log.message.timestamp.difference.max.ms",
             "Replaced by message.timestamp.before.max.ms and after.max.ms.", GONE_IN_4),
)}
# fmt: on

IN_EFFECT: tuple[str, ...] = tuple(n for n, r in TOPIC_CONFIGS.items() if r.refused is None)
LIST_CONFIGS = frozenset(n for n in IN_EFFECT if TOPIC_CONFIGS[n].kind == "LIST")


def lookup(name: str) -> TopicConfigDef:
    """The row of an in-effect config; InvalidConfigError for an unknown or refused one."""
    row = TOPIC_CONFIGS.get(name)
    if row is None:
        raise InvalidConfigError(f"unknown topic config {name!r}")
    if row.refused is not None:
        raise InvalidConfigError(f"{name} is refused: {row.refused}")
    return row


def markdown_table() -> list[str]:
    """The registry as docs/configs.md shows it (a unit test keeps the two the same):
    `python -m protocol.topic_config` prints it."""
    lines = [
        "| config | type | default | valid values | broker setting | read by | what it does |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in TOPIC_CONFIGS.values():
        what = row.doc if row.refused is None else f"Refused: {row.refused}. ({row.doc})"
        cells = (f"`{row.name}`", row.kind, f"`{row.default}`" if row.default else "(empty)",
                 row.valid.replace("|", "\\|") or "-", f"`{row.broker_name}`"
                 if row.broker_name else "-", row.reader, what)  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    return lines


if __name__ == "__main__":
    print("\n".join(markdown_table()))
