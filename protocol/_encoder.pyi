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
