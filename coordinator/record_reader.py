"""Reading the coordinators' records that are Kafka's own bytes: in `__consumer_offsets` the classic
group and offset records (group/classic_records.py) and KIP-848's consumer group records
(group/consumer_records.py), in `__share_group_state` the share coordinator's (share/records.py).

`RecordReader` walks one key or value left to right with Kafka's primitives at one schema
version: flexible (compact lengths as unsigned varints + 1, tagged fields) or not (int16 string
lengths, int32 bytes and array lengths). Every read is bounded by the data: a record cut short,
an array longer than MAX_ARRAY, a varint over 5 bytes or text that is not UTF-8 is
CorruptMessageError naming `what` the record is, so a coordinator's load skips it.
"""

from __future__ import annotations

import struct

from protocol.errors import CorruptMessageError

MAX_ARRAY = 1 << 20  # a bound on any decoded array's length


class RecordReader:
    def __init__(self, data: bytes, what: str, flexible: bool = False) -> None:
        self.data, self.pos, self.what, self.flexible = data, 0, what, flexible

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise CorruptMessageError(f"truncated {self.what} record")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def num(self, fmt: str) -> int:
        value: int = struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0]
        return value

    def unpack(self, fmt: str) -> tuple[int, ...]:
        """Several fixed-width numbers at once (a struct format)."""
        return tuple(struct.unpack(fmt, self.take(struct.calcsize(fmt))))

    def uvarint(self) -> int:
        n = shift = 0
        while shift < 35:
            b = self.take(1)[0]
            n |= (b & 0x7F) << shift
            if not b & 0x80:
                return n
            shift += 7
        raise CorruptMessageError(f"uvarint too long in a {self.what} record")

    def length(self, wide: bool = False) -> int:
        """A string's, bytes' or array's length; -1: null."""
        if self.flexible:
            return self.uvarint() - 1
        return self.num(">i" if wide else ">h")

    def nstring(self) -> str | None:
        n = self.length()
        try:
            return None if n < 0 else self.take(n).decode()
        except UnicodeDecodeError as exc:
            raise CorruptMessageError(f"a string that is not UTF-8: {exc}") from None

    def string(self) -> str:
        return self.nstring() or ""

    def blob(self) -> bytes:
        return self.take(max(self.length(wide=True), 0))

    def count(self) -> int:
        """An array's length (0 for a null one)."""
        n = self.length(wide=True)
        if n > MAX_ARRAY:
            raise CorruptMessageError(f"array of {n} in a {self.what} record")
        return max(n, 0)

    def tags(self) -> None:
        if self.flexible:
            for _ in range(self.uvarint()):
                self.uvarint()
                self.take(self.uvarint())

    def end(self) -> None:
        if self.pos != len(self.data):
            raise CorruptMessageError(f"{len(self.data) - self.pos} bytes after a record")
