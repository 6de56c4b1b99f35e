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
