"""Types of the cleaner's C record scanner (broker/log/cleaner/_compact.c says how it works)."""

Buffer = bytes | bytearray | memoryview

def map_keys(
    section: Buffer,
    count: int,
    base: int,
    last: int,
    lo: int,
    hi: int,
    found: dict[bytes, int],
    /,
) -> int: ...

PRODUCED_OFFSET_DELTA: int
PRODUCED_KEYLESS: int
PRODUCED_TIMESTAMP: int

def produced(
    section: Buffer, count: int, keys: bool, first_ts: int, low: int, high: int, /
) -> list[tuple[int, int, int]]: ...
def retain(
    section: Buffer,
    count: int,
    base: int,
    last: int,
    latest: dict[bytes, int],
    now_ms: int,
    horizon_ms: int,
    /,
) -> tuple[bytes, int, int]: ...
