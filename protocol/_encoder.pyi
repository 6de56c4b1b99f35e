"""Types of the C record encoder (protocol/_encoder.c, which says how it works)."""

from collections.abc import Sequence

def encode_records(
    keys: list[bytes | None],
    values: list[bytes | None],
    headers: list[Sequence[tuple[str, bytes | None]] | None] | None,
    stamps: list[int],
    first_timestamp: int,
    /,
) -> bytes: ...

ColumnSpec = tuple[int, object, object, object, int, int]
"""(length, validity buffer or None, offsets buffer, data buffer, array offset, large)"""
HeadersSpec = tuple[int, object, object, int, ColumnSpec, ColumnSpec]
"""(length, validity or None, int32 offsets buffer, array offset, key column, value column)"""

def encode_arrow(
    key: ColumnSpec | None,
    value: ColumnSpec | None,
    headers: HeadersSpec | None,
    indices: object,
    start: int,
    max_bytes: int,
    /,
) -> tuple[bytes, int]: ...
def murmur2_arrow(key: ColumnSpec, /) -> bytes: ...
