"""Reading and checking the data source's options, the way Spark's Kafka source does.

Pure functions, no I/O: `parse_read_options(options, streaming)` turns the case-insensitive
option map Spark hands the source into a frozen `ReadOptions`, or raises `UsageError` with one
line saying what is wrong. The rules follow Spark's KafkaSourceProvider:

- exactly one of `subscribe` (comma-separated topics), `subscribePattern` (a regex matched
  against whole topic names) or `assign` (JSON `{"t": [0, 1]}`);
- `startingOffsets`: `earliest`, `latest` (streaming only) or JSON `{"t": {"0": 23, "1": -2}}`
  (-2 = earliest, -1 = latest, which a batch query may not use as a start);
- `endingOffsets` (batch only): `latest` or JSON (-1 = latest; -2 is refused);
- `startingTimestamp` / `endingTimestamp` (ms, one for every partition) and
  `startingOffsetsByTimestamp` / `endingOffsetsByTimestamp` (JSON of ms per partition); a
  timestamp option wins over the offsets option (global before per-partition, as in Spark);
  `startingOffsetsByTimestampStrategy` `error` (default) or `latest` says what happens when
  no record is at or after the starting timestamp;
- `minPartitions`, `maxRecordsPerPartition`, and (streaming) `maxOffsetsPerTrigger`,
  `minOffsetsPerTrigger` positive; `maxTriggerDelay` a duration (`15m`, `30s`, `500ms`;
  a bare number is ms, as Spark's time strings); `failOnDataLoss`, `includeHeaders` booleans;
  `fetchOffset.numRetries` (>= 0) and `fetchOffset.retryIntervalMs` bound the driver's
  offset lookups;
- `kafka.isolation.level`: `read_uncommitted` (default, as Spark's Kafka source) or
  `read_committed` (ranges end at the last stable offset, aborted transactions are skipped);
- (streaming) `kafka.group.id`, or else `groupIdPrefix` (default `spark-kafka-source`, the
  group being `<prefix>-<uuid>` per query start, as Spark names its consumers' groups): the
  group each finished micro-batch's end offsets are committed to, for monitoring (a batch
  query refuses `kafka.group.id`);
- `valueFormat` (`binary` or `avro`) and the registry's options (value_options.py);
- the other `kafka.` options are the client's security settings (spark_connector/
  security.py), checked against each other here; any other is refused with its reason.

Every option name is checked: one this connector does not know is an error naming the nearest
known one (difflib), and one that belongs to the other kind of query (a batch-only option in a
streaming query, a read option on a write) says so. `checkpointLocation`, `queryName` and
`path` are Spark's own (a `path` is refused: topics are named by `subscribe` or `assign`).

Writes (`parse_write_options`): `exactlyOnce` (boolean, default false) needs
`transactionalIdPrefix` (letters, digits, `.`, `_`, `-`), which names the transactional ids of
the sink's two-phase commit (spark_connector/exactly_once.py).

Offsets in JSON and in the streaming offsets Spark checkpoints are `{topic: {"partition":
offset}}` with string keys, as Spark's Kafka source writes them.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from client.read_committed import READ_COMMITTED, READ_UNCOMMITTED
from protocol.errors import UsageError
from spark_connector.security import Props, security_props
from spark_connector.value_options import (
    BINARY_VALUES,
    VALUE_OPTIONS,
    ValueFormat,
    parse_value_format,
)

EARLIEST = -2
LATEST = -1
SOURCE_NAME = "odradek"
DEFAULT_MAX_TRIGGER_DELAY_MS = 15 * 60 * 1000  # Spark's maxTriggerDelay default, 15m

# Every option this connector reads, by kind of query (Spark's spelling; matched lower-cased).
# kafka.bootstrap.servers, kafka.isolation.level and the security ones are `kafka.` options,
# checked by spark_connector/security.py.
READ_OPTIONS = (
    "bootstrap", "subscribe", "subscribePattern", "assign", "startingOffsets",
    "startingTimestamp", "startingOffsetsByTimestamp", "startingOffsetsByTimestampStrategy",
    "failOnDataLoss", "includeHeaders", "minPartitions", "maxRecordsPerPartition",
    "pollTimeoutMs", "kafkaConsumer.pollTimeoutMs", "fetchMaxBytes", "fetchOffset.numRetries",
    "fetchOffset.retryIntervalMs", *VALUE_OPTIONS,
)  # fmt: skip
BATCH_READ_OPTIONS = ("endingOffsets", "endingTimestamp", "endingOffsetsByTimestamp")
STREAM_READ_OPTIONS = ("maxOffsetsPerTrigger", "minOffsetsPerTrigger", "maxTriggerDelay",
                       "groupIdPrefix")  # fmt: skip
DEFAULT_GROUP_ID_PREFIX = "spark-kafka-source"  # Spark's Kafka source's groupIdPrefix default
WRITE_OPTIONS = ("bootstrap", "topic", "acks", "lingerMs", "batchSize", "exactlyOnce",
                 "transactionalIdPrefix")  # fmt: skip
SPARK_OWN = ("checkpointLocation", "queryName")  # Spark's, handed to the source as well
REFUSED_OPTIONS = {
    "path": "the odradek source takes no path: name topics with 'subscribe', "
    "'subscribePattern' or 'assign'",
}

PartitionOffsets = dict[str, dict[int, int]]
"""{topic: {partition: offset or timestamp}}: offsets in JSON options, decoded."""


@dataclass(frozen=True, slots=True)
class OffsetSpec:
    """Where a range starts or ends: a keyword, per-partition offsets or timestamps."""

    kind: str  # "earliest" | "latest" | "offsets" | "timestamp" | "timestamps"
    offsets: PartitionOffsets | None = None  # kind "offsets" or "timestamps"
    timestamp_ms: int | None = None  # kind "timestamp"


@dataclass(frozen=True, slots=True)
class ReadOptions:
    bootstrap: str
    subscribe: tuple[str, ...] | None
    subscribe_pattern: str | None
    assign: dict[str, tuple[int, ...]] | None
    starting: OffsetSpec
    ending: OffsetSpec
    timestamp_strategy: str  # "error" | "latest"
    min_partitions: int | None
    max_offsets_per_trigger: int | None
    fail_on_data_loss: bool
    include_headers: bool
    poll_timeout_ms: int
    fetch_max_bytes: int
    isolation_level: str = READ_UNCOMMITTED  # or READ_COMMITTED
    kafka_bootstrap: bool = False  # `bootstrap` came from kafka.bootstrap.servers (see below)
    security: Props = ()  # the kafka.* security properties (spark_connector/security.py)
    min_offsets_per_trigger: int | None = None  # streaming: wait for this many new offsets...
    max_trigger_delay_ms: int = DEFAULT_MAX_TRIGGER_DELAY_MS  # ...at most this long
    max_records_per_partition: int | None = None  # split ranges larger than this
    fetch_offset_retries: int | None = None  # None: retry lookups for up to a minute
    fetch_offset_retry_interval_ms: int = 200
    group_id: str | None = None  # streaming: kafka.group.id, the group its progress goes to...
    group_id_prefix: str = DEFAULT_GROUP_ID_PREFIX  # ...else groupIdPrefix-<a uuid per start>
    values: ValueFormat = BINARY_VALUES  # valueFormat and the registry (value_options.py)


@dataclass(frozen=True, slots=True)
class WriteOptions:
    bootstrap: str
    topic: str | None
    acks: str
    linger_ms: int
    batch_size: int
    exactly_once: bool = False
    transactional_id_prefix: str | None = None  # set when exactly_once
    kafka_bootstrap: bool = False  # `bootstrap` came from kafka.bootstrap.servers (see below)
    security: Props = ()  # the kafka.* security properties (spark_connector/security.py)


def check_names(
    opts: Mapping[str, str], known: Sequence[str], elsewhere: Mapping[str, str]
) -> None:
    """Every non-`kafka.` option of `opts` (lower-case names) must be in `known`; one in
    `elsewhere` ({name: where it applies}) says where, any other names the nearest known."""
    canonical = {n.lower(): n for n in (*known, *SPARK_OWN)}
    other = {n.lower(): (n, where) for n, where in elsewhere.items()}
    refused = {n.lower(): (n, why) for n, why in REFUSED_OPTIONS.items()}
    for name in sorted(opts):
        if name in canonical or name.startswith("kafka."):
            continue
        if name in refused:
            raise UsageError(f"option '{refused[name][0]}' is not supported: {refused[name][1]}")
        if name in other:
            raise UsageError(f"option '{other[name][0]}' {other[name][1]}")
        near = difflib.get_close_matches(name, list(canonical), n=1, cutoff=0.6)
        hint = f" (did you mean '{canonical[near[0]]}'?)" if near else ""
        raise UsageError(f"unknown option '{name}'{hint}")


def _read_elsewhere(streaming: bool) -> dict[str, str]:
    out = dict.fromkeys(
        [n for n in WRITE_OPTIONS if n not in READ_OPTIONS], "applies to writes, not reads"
    )
    if streaming:
        out.update(dict.fromkeys(BATCH_READ_OPTIONS, "is not allowed in a streaming query"))
    else:
        out.update(dict.fromkeys(STREAM_READ_OPTIONS, "only applies to streaming queries"))
    return out


def lower_keys(options: Mapping[str, Any]) -> dict[str, str]:
    """Spark's option names are case-insensitive: one lower-case dict, values as strings."""
    return {str(k).lower(): str(v) for k, v in options.items()}


def bootstrap_of(opts: Mapping[str, str]) -> tuple[str, bool]:
    """The bootstrap addresses, and whether they came from `kafka.bootstrap.servers`: Spark's
    own option, which Spark users give the Kafka listener's addresses (the driver swaps those
    for native ones before planning: spark_connector/lookup.py `native_options`)."""
    native = (opts.get("bootstrap") or "").strip()
    kafka = (opts.get("kafka.bootstrap.servers") or "").strip()
    if not native and not kafka:
        raise UsageError(
            "option 'bootstrap' is required (the native host:port[,host:port...]), or "
            "'kafka.bootstrap.servers' with the Kafka listener's"
        )
    return (native, False) if native else (kafka, True)


def parse_bool(opts: Mapping[str, str], name: str, default: bool) -> bool:
    raw = opts.get(name.lower())
    if raw is None:
        return default
    if raw.strip().lower() in ("true", "false"):
        return raw.strip().lower() == "true"
    raise UsageError(f"option '{name}' must be true or false, not {raw!r}")


def parse_positive(opts: Mapping[str, str], name: str, default: int | None) -> int | None:
    raw = opts.get(name.lower())
    if raw is None:
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        raise UsageError(f"option '{name}' must be a positive integer, not {raw!r}") from None
    if value <= 0:
        raise UsageError(f"option '{name}' must be a positive integer, not {value}")
    return value


def _json_object(name: str, raw: str) -> dict[str, Any]:
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise UsageError(f"option '{name}' is not valid JSON ({exc.msg}): {raw!r}") from None
    if not isinstance(value, dict):
        raise UsageError(f"option '{name}' must be a JSON object, not {raw!r}")
    return value


def parse_partition_offsets(name: str, raw: str) -> PartitionOffsets:
    """`{"t": {"0": 23, "1": -2}}` -> {"t": {0: 23, 1: -2}}; one line on what is wrong."""
    out: PartitionOffsets = {}
    for topic, parts in _json_object(name, raw).items():
        if not isinstance(parts, dict) or not parts:
            raise UsageError(f"option '{name}': topic {topic!r} needs {{\"partition\": offset}}")
        out[topic] = {}
        for p, off in parts.items():
            if not str(p).lstrip("-").isdigit() or int(p) < 0:
                raise UsageError(f"option '{name}': {topic!r} has a bad partition {p!r}")
            if type(off) is not int:
                raise UsageError(f"option '{name}': {topic}/{p} must be an integer, not {off!r}")
            out[topic][int(p)] = off
    return out


def _parse_assign(raw: str) -> dict[str, tuple[int, ...]]:
    out: dict[str, tuple[int, ...]] = {}
    for topic, parts in _json_object("assign", raw).items():
        if (
            not isinstance(parts, list)
            or not parts
            or not all(type(p) is int and p >= 0 for p in parts)
        ):
            raise UsageError(f"option 'assign': topic {topic!r} needs a list of partitions")
        out[topic] = tuple(parts)
    if not out:
        raise UsageError("option 'assign' names no partitions (use {\"topic\": [0, 1]})")
    return out


def _parse_subscription(
    opts: Mapping[str, str],
) -> tuple[tuple[str, ...] | None, str | None, dict[str, tuple[int, ...]] | None]:
    given = [k for k in ("subscribe", "subscribepattern", "assign") if k in opts]
    if not given:
        raise UsageError(
            "one of the options 'subscribe', 'subscribePattern' or 'assign' must be given"
        )
    if len(given) > 1:
        raise UsageError(
            "only one of the options 'subscribe', 'subscribePattern' or 'assign' may be given"
        )
    if "subscribe" in opts:
        topics = tuple(t.strip() for t in opts["subscribe"].split(",") if t.strip())
        if not topics:
            raise UsageError("option 'subscribe' names no topics (comma-separated topic names)")
        return topics, None, None
    if "subscribepattern" in opts:
        pattern = opts["subscribepattern"].strip()
        if not pattern:
            raise UsageError("option 'subscribePattern' is empty")
        try:
            re.compile(pattern)
        except re.error as exc:
            raise UsageError(f"option 'subscribePattern' is not a valid regex: {exc}") from None
        return None, pattern, None
    return None, None, _parse_assign(opts["assign"])


def _parse_timestamp(name: str, raw: str) -> int:
    try:
        value = int(raw.strip())
    except ValueError:
        raise UsageError(f"option '{name}' must be a timestamp in ms, not {raw!r}") from None
    if value < 0:
        raise UsageError(f"option '{name}' must be a timestamp in ms >= 0, not {value}")
    return value


def _offset_spec(opts: Mapping[str, str], which: str, default: str, streaming: bool) -> OffsetSpec:
    """`which` is "starting" or "ending": timestamp options first, then offsets."""
    ts_name, by_ts_name, off_name = (
        f"{which}Timestamp", f"{which}OffsetsByTimestamp", f"{which}Offsets",
    )  # fmt: skip
    if ts_name.lower() in opts:
        return OffsetSpec(
            "timestamp", timestamp_ms=_parse_timestamp(ts_name, opts[ts_name.lower()])
        )
    if by_ts_name.lower() in opts:
        parsed = parse_partition_offsets(by_ts_name, opts[by_ts_name.lower()])
        if any(ts < 0 for parts in parsed.values() for ts in parts.values()):
            raise UsageError(f"option '{by_ts_name}' holds a negative timestamp")
        return OffsetSpec("timestamps", offsets=parsed)
    raw = opts.get(off_name.lower(), default).strip()
    if raw.lower() in ("earliest", "latest"):
        return OffsetSpec(raw.lower())
    parsed = parse_partition_offsets(off_name, raw)
    for topic, parts in parsed.items():
        for p, off in parts.items():
            if off < EARLIEST:
                raise UsageError(f"option '{off_name}': {topic}/{p} has offset {off} (< -2)")
    return OffsetSpec("offsets", offsets=parsed)


def _check_batch_bounds(starting: OffsetSpec, ending: OffsetSpec) -> None:
    if starting.kind == "latest":
        raise UsageError("startingOffsets 'latest' is not allowed in a batch query")
    if starting.kind == "offsets" and starting.offsets is not None:
        for topic, parts in starting.offsets.items():
            for p, off in parts.items():
                if off == LATEST:
                    raise UsageError(
                        f"startingOffsets for {topic}/{p} can't be latest (-1) in a batch query"
                    )
    if ending.kind == "earliest":
        raise UsageError("endingOffsets 'earliest' is not allowed in a batch query")
    if ending.kind == "offsets" and ending.offsets is not None:
        for topic, parts in ending.offsets.items():
            for p, off in parts.items():
                if off == EARLIEST:
                    raise UsageError(
                        f"endingOffsets for {topic}/{p} can't be earliest (-2) in a batch query"
                    )


def parse_read_options(options: Mapping[str, Any], streaming: bool) -> ReadOptions:
    """Check every read option; raises UsageError naming the first thing that is wrong."""
    opts = lower_keys(options)
    extra = STREAM_READ_OPTIONS if streaming else BATCH_READ_OPTIONS
    check_names(opts, (*READ_OPTIONS, *extra), _read_elsewhere(streaming))
    subscribe, pattern, assign = _parse_subscription(opts)
    starting = _offset_spec(opts, "starting", "latest" if streaming else "earliest", streaming)
    ending = _offset_spec(opts, "ending", "latest", streaming)
    if not streaming:
        _check_batch_bounds(starting, ending)
    strategy = opts.get("startingoffsetsbytimestampstrategy", "error").strip().lower()
    if strategy not in ("error", "latest"):
        raise UsageError(
            f"option 'startingOffsetsByTimestampStrategy' must be error or latest, not {strategy!r}"
        )
    bootstrap, kafka_bootstrap = bootstrap_of(opts)
    return ReadOptions(
        bootstrap=bootstrap,
        subscribe=subscribe,
        subscribe_pattern=pattern,
        assign=assign,
        starting=starting,
        ending=ending,
        timestamp_strategy=strategy,
        min_partitions=parse_positive(opts, "minPartitions", None),
        max_offsets_per_trigger=parse_positive(opts, "maxOffsetsPerTrigger", None),
        fail_on_data_loss=parse_bool(opts, "failOnDataLoss", True),
        include_headers=parse_bool(opts, "includeHeaders", False),
        poll_timeout_ms=_poll_timeout_ms(opts),
        fetch_max_bytes=parse_positive(opts, "fetchMaxBytes", 4 * 1024 * 1024) or 1,
        isolation_level=_isolation_level(opts),
        kafka_bootstrap=kafka_bootstrap,
        security=security_props(opts),
        min_offsets_per_trigger=parse_positive(opts, "minOffsetsPerTrigger", None),
        max_trigger_delay_ms=_duration_ms(opts, "maxTriggerDelay", DEFAULT_MAX_TRIGGER_DELAY_MS),
        max_records_per_partition=parse_positive(opts, "maxRecordsPerPartition", None),
        fetch_offset_retries=_non_negative(opts, "fetchOffset.numRetries"),
        fetch_offset_retry_interval_ms=parse_positive(opts, "fetchOffset.retryIntervalMs", 200)
        or 200,
        group_id=_group_id(opts, streaming),
        group_id_prefix=opts.get("groupidprefix", DEFAULT_GROUP_ID_PREFIX).strip()
        or DEFAULT_GROUP_ID_PREFIX,
        values=parse_value_format(opts, subscribe or (tuple(assign) if assign else None)),
    )


def _group_id(opts: Mapping[str, str], streaming: bool) -> str | None:
    """`kafka.group.id`: the group a streaming query commits each finished micro-batch's end
    offsets to (spark_connector/streaming.py); a batch query has no such moment."""
    raw = opts.get("kafka.group.id")
    if raw is None:
        return None
    if not streaming:
        raise UsageError(
            "option 'kafka.group.id' only applies to streaming queries (each finished "
            "micro-batch's end offsets are committed to it); a batch read commits nothing"
        )
    if not raw.strip():
        raise UsageError("option 'kafka.group.id' is empty")
    return raw.strip()


def parse_value_options(options: Mapping[str, Any]) -> tuple[ValueFormat, str, bool, Props]:
    """What the source's schema needs before Spark says batch or streaming: the value format
    (its default subject from the topics named), the bootstrap (and whether it came from
    kafka.bootstrap.servers) and the security properties. The reader checks the rest."""
    opts = lower_keys(options)
    subscribe, _, assign = _parse_subscription(opts)
    values = parse_value_format(opts, subscribe or (tuple(assign) if assign else None))
    bootstrap, kafka_bootstrap = bootstrap_of(opts)
    return values, bootstrap, kafka_bootstrap, security_props(opts)


def _poll_timeout_ms(opts: Mapping[str, str]) -> int:
    """`kafkaConsumer.pollTimeoutMs` (Spark's name) or `pollTimeoutMs`, not both."""
    if "polltimeoutms" in opts and "kafkaconsumer.polltimeoutms" in opts:
        raise UsageError("give 'kafkaConsumer.pollTimeoutMs' or 'pollTimeoutMs', not both")
    name = (
        "kafkaConsumer.pollTimeoutMs" if "kafkaconsumer.polltimeoutms" in opts else "pollTimeoutMs"
    )
    return parse_positive(opts, name, 120_000) or 120_000


def _non_negative(opts: Mapping[str, str], name: str) -> int | None:
    raw = opts.get(name.lower())
    if raw is None:
        return None
    if not raw.strip().isdigit():
        raise UsageError(f"option '{name}' must be an integer >= 0, not {raw!r}")
    return int(raw.strip())


_DURATION = re.compile(r"(\d+)\s*(us|ms|s|m|min|h|d)?")
_UNIT_MS = {"us": 0.001, "ms": 1, "": 1, "s": 1000, "m": 60_000, "min": 60_000,
            "h": 3_600_000, "d": 86_400_000}  # fmt: skip


def _duration_ms(opts: Mapping[str, str], name: str, default: int) -> int:
    """Spark's time strings (JavaUtils.timeStringAsMs): `15m`, `30s`, `500ms`, `500`."""
    raw = opts.get(name.lower())
    if raw is None:
        return default
    match = _DURATION.fullmatch(raw.strip().lower())
    if match is None:
        raise UsageError(f"option '{name}' must be a duration like 15m, 30s or 500ms, not {raw!r}")
    return int(int(match.group(1)) * _UNIT_MS[match.group(2) or ""])


def _isolation_level(opts: Mapping[str, str]) -> str:
    level = opts.get("kafka.isolation.level", READ_UNCOMMITTED).strip().lower()
    if level not in (READ_UNCOMMITTED, READ_COMMITTED):
        raise UsageError(
            f"option 'kafka.isolation.level' must be {READ_UNCOMMITTED} or {READ_COMMITTED}, "
            f"not {level!r}"
        )
    return level


_PREFIX = re.compile(r"[A-Za-z0-9._-]{1,100}")


def _exactly_once(opts: Mapping[str, str]) -> tuple[bool, str | None]:
    exactly_once = parse_bool(opts, "exactlyOnce", False)
    prefix = opts.get("transactionalidprefix", "").strip()
    if not exactly_once:
        if prefix:
            raise UsageError("option 'transactionalIdPrefix' needs exactlyOnce=true")
        return False, None
    if not prefix:
        raise UsageError(
            "exactlyOnce=true needs option 'transactionalIdPrefix' (a name of this query's own, "
            "kept across restarts)"
        )
    if not _PREFIX.fullmatch(prefix):
        raise UsageError(
            f"option 'transactionalIdPrefix' must be 1-100 letters, digits, '.', '_' or '-', "
            f"not {prefix!r}"
        )
    return True, prefix


def parse_write_options(options: Mapping[str, Any]) -> WriteOptions:
    opts = lower_keys(options)
    check_names(opts, WRITE_OPTIONS, dict.fromkeys(
        [n for n in (*READ_OPTIONS, *BATCH_READ_OPTIONS, *STREAM_READ_OPTIONS)
         if n not in WRITE_OPTIONS], "applies to reads, not writes"))  # fmt: skip
    for name in ("kafka.isolation.level", "kafka.group.id"):
        if name in opts:
            raise UsageError(f"option '{name}' applies to reads, not writes")
    acks = opts.get("acks", "all").strip().lower()
    if acks not in ("0", "1", "-1", "all"):
        raise UsageError(f"option 'acks' must be 0, 1, -1 or all, not {acks!r}")
    topic = opts.get("topic")
    exactly_once, prefix = _exactly_once(opts)
    if exactly_once and acks != "all" and acks != "-1":
        raise UsageError(f"exactlyOnce=true writes with acks=all, not acks={acks!r}")
    bootstrap, kafka_bootstrap = bootstrap_of(opts)
    return WriteOptions(
        bootstrap=bootstrap,
        topic=topic.strip() if topic and topic.strip() else None,
        acks=acks,
        linger_ms=parse_positive(opts, "lingerMs", 5) or 5,
        batch_size=parse_positive(opts, "batchSize", 256 * 1024) or 1,
        exactly_once=exactly_once,
        transactional_id_prefix=prefix,
        kafka_bootstrap=kafka_bootstrap,
        security=security_props(opts),
    )


def offsets_to_json(offsets: Mapping[str, Mapping[int, int]]) -> dict[str, dict[str, int]]:
    """{t: {0: 5}} -> {"t": {"0": 5}}: the JSON-friendly shape Spark checkpoints."""
    return {t: {str(p): int(o) for p, o in sorted(ps.items())} for t, ps in sorted(offsets.items())}


def offsets_from_json(value: Mapping[str, Any]) -> dict[str, dict[int, int]]:
    """The inverse of `offsets_to_json`, checking the shape of what a checkpoint held."""
    out: dict[str, dict[int, int]] = {}
    for topic, parts in value.items():
        if not isinstance(parts, Mapping):
            raise UsageError(f"a checkpointed offset for {topic!r} is not a partition map")
        out[str(topic)] = {int(p): int(o) for p, o in parts.items()}
    return out
