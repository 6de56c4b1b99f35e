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
def keyless(section: Buffer, count: int, /) -> int: ...
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
