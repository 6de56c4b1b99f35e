"""The coordinator runtime's pure parts: the partition state table, and a coordinator's
transactional batch (the transactional bit, the producer id and epoch, no sequence)."""

from __future__ import annotations

import pytest

from coordinator.runtime.runtime import transactional
from coordinator.runtime.states import (
    TABLE,
    IllegalTransitionError,
    PartitionState,
    check_transition,
)
from protocol.batch import TRANSACTIONAL_BIT, build_batch, read_header, validate

S = PartitionState


def test_every_state_has_a_row_and_the_table_is_the_only_way() -> None:
    assert set(TABLE) == set(PartitionState)
    assert check_transition(S.DOWN, S.CATCH_UP) is S.CATCH_UP
    assert check_transition(S.CATCH_UP, S.READY) is S.READY
    assert check_transition(S.READY, S.DOWN) is S.DOWN
    for bad in ((S.DOWN, S.READY), (S.READY, S.CATCH_UP)):
        with pytest.raises(IllegalTransitionError):
            check_transition(*bad)


def test_a_coordinators_batch_joins_the_producers_transaction() -> None:
    batch = build_batch([(b"k", b"v", None, 1000)])
    txn = transactional(batch, producer_id=42, producer_epoch=3)
    validate(txn)  # the CRC was recomputed
    h = read_header(txn)
    assert h.attributes & TRANSACTIONAL_BIT
    assert (h.producer_id, h.producer_epoch, h.base_sequence) == (42, 3, -1)
    assert txn[61:] == batch[61:], "the records are untouched"


async def test_keyed_locks_keep_a_key_while_anyone_waits() -> None:
    """A holder releasing while another waits must not drop the key's lock: a newcomer then
    would take a fresh lock and run beside the waiter (the old cleanup did this)."""
    import asyncio

    from coordinator.runtime.runtime import KeyedLocks

    locks = KeyedLocks()
    inside: list[str] = []
    overlap: list[tuple[str, ...]] = []

    async def work(name: str) -> None:
        async with locks.hold("tx"):
            inside.append(name)
            overlap.append(tuple(inside))
            await asyncio.sleep(0.01)
            inside.remove(name)

    first = asyncio.ensure_future(work("a"))
    await asyncio.sleep(0)
    second = asyncio.ensure_future(work("b"))  # queued behind a
    await asyncio.sleep(0.011)  # a releases; b is woken but has not run yet
    third = asyncio.ensure_future(work("c"))
    await asyncio.gather(first, second, third)
    assert all(len(held) == 1 for held in overlap), overlap
    assert len(locks) == 0, "the key is dropped once nobody holds or waits"
