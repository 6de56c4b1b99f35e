"""client/producer_config.py: which producer settings go together, as a pure function."""

from __future__ import annotations

from typing import Any

import pytest

from client.producer_config import ACKS_ALL, check_settings, parse_acks
from protocol.errors import UsageError

DEFAULTS: dict[str, Any] = {
    "acks": None, "batch_size": 16384, "max_request_size": 1024 * 1024,
    "buffer_memory": 32 * 1024 * 1024, "max_in_flight_per_partition": 5,
    "compression_type": None, "enable_idempotence": None, "transactional_id": None,
    "enable_2pc": False,
}  # fmt: skip


def settings(**changes: Any) -> tuple[int, bool]:
    return check_settings(**{**DEFAULTS, **changes})


def test_acks_in_effect_and_idempotence() -> None:
    assert settings() == (1, False)  # acks=1 by default: idempotence has no effect
    assert settings(acks="all") == (ACKS_ALL, True)  # idempotent by default with acks=all
    assert settings(acks=-1, enable_idempotence=False) == (ACKS_ALL, False)
    assert settings(acks="0") == (0, False)
    assert settings(transactional_id="t") == (ACKS_ALL, True)  # acks=all implied
    assert settings(transactional_id="t", enable_2pc=True) == (ACKS_ALL, True)
    assert [parse_acks(a) for a in (0, 1, -1, "all", "0", "1", "-1")] == [0, 1, -1, -1, 0, 1, -1]


@pytest.mark.parametrize(
    ("changes", "words"),
    [
        ({"acks": 2}, "acks must be 0, 1, -1 or 'all', not 2"),
        ({"batch_size": 0}, "need batch_size >= 1"),
        ({"max_request_size": 1000}, "max_request_size >= 1024"),
        ({"buffer_memory": 1024}, "buffer_memory >= max_request_size"),
        ({"compression_type": "brotli"}, "compression_type must be None or one of"),
        ({"enable_2pc": True}, "enable_2pc (two-phase commit) needs a transactional_id"),
        ({"transactional_id": "t", "acks": 1}, "a transactional producer needs acks='all'"),
        ({"transactional_id": "t", "enable_idempotence": False}, "is idempotent"),
        ({"acks": "all", "max_in_flight_per_partition": 6}, "keeps 1 to 5 batches in flight"),
    ],
)
def test_settings_that_cannot_go_together_are_refused_in_a_line(
    changes: dict[str, Any], words: str
) -> None:
    with pytest.raises(UsageError) as refused:
        settings(**changes)
    assert words in str(refused.value)
    assert "\n" not in str(refused.value)


def test_max_in_flight_is_free_without_idempotence() -> None:
    assert settings(acks=1, max_in_flight_per_partition=50) == (1, False)
