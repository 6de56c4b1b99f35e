"""The options that say how a read decodes the `value` column; pure, no I/O.

    valueFormat            binary (default: Spark's Kafka schema, value binary) | avro
    schemaRegistryAddress  the registry's URL(s), comma-separated (Databricks' from_avro
                           argument's name); default: the one the cluster's brokers serve
    subject                default <topic>-value (Confluent's TopicNameStrategy): the query
                           must then read one topic
    schemaVersion          latest (default) or a version number of the subject
    mode                   FAILFAST (default) | PERMISSIVE (from_avro's option): a value that
                           cannot be decoded fails the task, or reads as null

`json` and `protobuf` are refused with a line saying so: only Avro is decoded. The registry
options without `valueFormat=avro` are refused, as an option that would be ignored.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from protocol.errors import UsageError

VALUE_OPTIONS = ("valueFormat", "schemaRegistryAddress", "subject", "schemaVersion", "mode")
BINARY, AVRO = "binary", "avro"
MODES = ("FAILFAST", "PERMISSIVE")
_NOT_YET = ("json", "protobuf", "jsonschema", "json_schema")
_URL = re.compile(r"https?://[^\s/,]+(/[^\s,]*)?")


@dataclass(frozen=True, slots=True)
class ValueFormat:
    kind: str = BINARY  # or AVRO
    registry_urls: tuple[str, ...] = ()  # empty: found from the cluster (lookup.py)
    subject: str = ""
    version: str = "latest"  # or a number
    mode: str = "FAILFAST"


BINARY_VALUES = ValueFormat()


def parse_value_format(opts: Mapping[str, str], topics: Sequence[str] | None) -> ValueFormat:
    """The value options among `opts` (lower-case names); `topics` are the topics the query
    names (None for subscribePattern), for the default subject."""
    kind = opts.get("valueformat", BINARY).strip().lower()
    given = [n for n in VALUE_OPTIONS[1:] if n.lower() in opts]
    if kind == BINARY:
        if given:
            raise UsageError(f"option '{given[0]}' needs valueFormat=avro")
        return BINARY_VALUES
    if kind in _NOT_YET:
        raise UsageError(f"valueFormat={kind} is not supported: only avro (registry-framed "
                         "Avro values) and binary")  # fmt: skip
    if kind != AVRO:
        raise UsageError(f"option 'valueFormat' must be binary or avro, not {kind!r}")
    urls = tuple(u.strip().rstrip("/") for u in opts.get("schemaregistryaddress", "").split(","))
    urls = tuple(u for u in urls if u)
    for url in urls:
        if not _URL.fullmatch(url):
            raise UsageError(f"option 'schemaRegistryAddress' must be http(s)://host:port "
                             f"URLs, comma-separated; not {url!r}")  # fmt: skip
    return ValueFormat(AVRO, urls, _subject(opts, topics), _version(opts), _mode(opts))


def _subject(opts: Mapping[str, str], topics: Sequence[str] | None) -> str:
    subject = opts.get("subject", "").strip()
    if subject:
        return subject
    if topics is None or len(set(topics)) != 1:
        raise UsageError("valueFormat=avro reading more than one topic (or a pattern) needs "
                         "option 'subject': one reader schema for every record")  # fmt: skip
    return f"{topics[0]}-value"


def _version(opts: Mapping[str, str]) -> str:
    version = opts.get("schemaversion", "latest").strip().lower()
    if version != "latest" and not (version.isdigit() and int(version) > 0):
        raise UsageError(f"option 'schemaVersion' must be latest or a version number >= 1, "
                         f"not {version!r}")  # fmt: skip
    return version


def _mode(opts: Mapping[str, str]) -> str:
    mode = opts.get("mode", "FAILFAST").strip().upper()
    if mode not in MODES:
        raise UsageError(f"option 'mode' must be FAILFAST or PERMISSIVE, not {mode!r}")
    return mode
