"""How `odradek` turns text into requests and answers into lines: pure functions, unit-tested
directly, that deploy/cli.py calls.

- `stdin_chunks`: `produce`'s stdin as lists of lines, in chunks of whatever has arrived;
  `split_line` splits one into key and value at `--key-separator`.
- `format_record`: one consumed record as one stdout line, `[partition:offset TAB] [key TAB]
  value`, bytes shown as UTF-8 (undecodable bytes replaced), a missing key or value as `null`.
- `parse_topic_configs`: `topics create --config k=v` items as a dict.
- `format_topic`: `topics describe`'s seed-004 header line and partition lines.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import IO, Any

from deploy.cli_common import format_partition
from protocol.errors import UsageError

MAX_LINE_BYTES = 1 << 20  # the broker's largest batch (message.max.bytes) is about this


def parse_topic_configs(items: Sequence[str] | None) -> dict[str, str]:
    """["retention.ms=1000", ...] -> {"retention.ms": "1000"}; UsageError on a bad item."""
    configs: dict[str, str] = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise UsageError(f"--config expects key=value, got {item!r}")
        configs[key.strip()] = value.strip()
    return configs


def split_line(
    line: bytes, key_separator: bytes | None, line_no: int
) -> tuple[bytes | None, bytes]:
    """One stdin line (without its newline) -> (key, value)."""
    if key_separator is None:
        return None, line
    key, sep, value = line.partition(key_separator)
    if not sep:
        raise UsageError(f"line {line_no}: no key separator {key_separator.decode()!r} found")
    return key, value


def format_topic(description: Any, configs: dict[str, str] | None = None) -> list[str]:
    """A header line like seed 004's (with the topic's own configs), then one line per
    partition, by partition number."""
    partitions = sorted(description.partitions, key=lambda p: p.partition)
    rf = max((len(p.replicas) for p in partitions), default=0)
    shown = ",".join(f"{k}={v}" for k, v in sorted((configs or {}).items()))
    header = (
        f"Topic: {description.name} PartitionCount: {len(partitions)} "
        f"ReplicationFactor: {rf} Configs: {shown}"
    ).rstrip()
    return [header] + [format_partition(description.name, p) for p in partitions]


def format_record(record: Any, print_key: bool, print_offset: bool) -> str:
    """One consumed record as one line: [partition:offset TAB] [key TAB] value (UTF-8)."""
    fields = []
    if print_offset:
        fields.append(f"{record.partition}:{record.offset}")
    if print_key:
        fields.append("null" if record.key is None else _text(record.key))
    fields.append("null" if record.value is None else _text(record.value))
    return "\t".join(fields)


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def stdin_chunks(stream: IO[bytes], read_bytes: int = 1 << 16) -> Iterator[list[bytes]]:
    """Lines, without their line endings, in chunks of whatever has arrived: `read1` returns
    the bytes at hand without waiting for more, so typed lines go out at once and piped files
    go out in large chunks. A line longer than MAX_LINE_BYTES is a UsageError."""
    rest = b""
    while True:
        data = stream.read1(read_bytes)  # type: ignore[attr-defined]
        if not data:
            if rest:
                yield [rest.removesuffix(b"\r")]
            return
        *lines, rest = (rest + data).split(b"\n")
        if len(rest) > MAX_LINE_BYTES:
            raise UsageError(f"a stdin line is longer than {MAX_LINE_BYTES} bytes")
        if lines:
            yield [line.removesuffix(b"\r") for line in lines]
