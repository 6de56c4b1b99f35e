"""Where AlterClientQuotas and DescribeClientQuotas keep quotas: `QuotaStore`.

The daemon wires coordinator/cluster/quotas.py's `ZkQuotaStore` behind it (ZooKeeper, Kafka's
layout, every broker following the change notifications); `MemoryQuotaStore` is the same
contract in memory, applied at once to one broker's `Quotas` (tests, a broker without ZooKeeper).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from broker.quota.manager import Quotas
from protocol import quota as q
from protocol.quota import QuotaEntity

Ops = list[tuple[str, float | None]]  # (key, value to set) or (key, None) to remove


class QuotaStore(Protocol):
    async def alter(self, entity: QuotaEntity, ops: Ops, validate_only: bool) -> None:
        """Apply the ops to the entity's quotas (InvalidRequestError for a bad key or value)."""
        ...

    async def describe(
        self, components: Iterable[q.FilterComponent], strict: bool
    ) -> dict[QuotaEntity, dict[str, float]]:
        """The entities the filter selects, with their quota values."""
        ...


class MemoryQuotaStore:
    def __init__(self, quotas: Quotas) -> None:
        self.quotas = quotas
        self.configs: dict[QuotaEntity, dict[str, str]] = {}

    async def alter(self, entity: QuotaEntity, ops: Ops, validate_only: bool) -> None:
        updated = q.apply_ops(self.configs.get(entity, {}), ops)
        if validate_only:
            return
        self.configs[entity] = updated
        self.quotas.configure(entity, q.quota_values(updated))

    async def describe(
        self, components: Iterable[q.FilterComponent], strict: bool
    ) -> dict[QuotaEntity, dict[str, float]]:
        by_type = q.check_filter(components)
        return {
            e: values
            for e, config in self.configs.items()
            if (values := q.quota_values(config)) and q.filter_matches(by_type, strict, e)
        }
