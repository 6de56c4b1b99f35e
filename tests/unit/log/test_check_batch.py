"""The log's fast batch check agrees with protocol.batch.validate on valid and mutated bytes."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from broker.log.batch_checks import check_batch
from protocol.batch import HEADER, build_batch, validate
from protocol.errors import OdradekError

from .conftest import T0


def _outcome(fn, buf: bytes, max_bytes: int | None) -> object:  # type: ignore[no-untyped-def]
    try:
        return ("ok", tuple(fn(buf, 0, max_bytes)))
    except OdradekError as exc:
        return ("error", type(exc))


def _as_tuple(header: object) -> tuple[int, ...]:
    return tuple(getattr(header, name) for name in header.__slots__)  # type: ignore[attr-defined]


@settings(max_examples=300, deadline=None)
@given(
    values=st.lists(st.binary(max_size=40), min_size=1, max_size=5),
    flips=st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), max_size=3),
    cut=st.integers(0, 300),
    max_bytes=st.one_of(st.none(), st.integers(0, 400)),
)
def test_check_batch_matches_validate(
    values: list[bytes], flips: list[tuple[int, int]], cut: int, max_bytes: int | None
) -> None:
    data = bytearray(build_batch([(None, v, None, T0 + i) for i, v in enumerate(values)]))
    for at, value in flips:
        data[at % len(data)] = value
    buf = bytes(data[: max(0, len(data) - cut % 4)])
    fast = _outcome(check_batch, buf, max_bytes)
    slow = _outcome(lambda b, p, m: _as_tuple(validate(b, p, m)), buf, max_bytes)
    assert fast == slow
    if fast[0] == "ok":
        assert fast[1] == HEADER.unpack_from(buf, 0)
