"""Client quota APIs (KIP-546's AlterClientQuotas 49 and DescribeClientQuotas 48), native door.

The same fields as Kafka's messages: an entity is a list of (entity type, name) with name None
for the default ("user", "client-id"); an op sets `key` to `value`, or removes it. Describe
takes filter components (entity type, match type 0 exact / 1 default / 2 any named, match) and
`strict` (only entities with exactly the filtered types). protocol/quota.py validates them.
"""

from __future__ import annotations

from dataclasses import dataclass

from protocol.api.spec import ApiSpec


@dataclass(frozen=True, slots=True)
class QuotaEntityPart:
    entity_type: str  # "user" or "client-id"
    entity_name: str | None  # None: the default entity


@dataclass(frozen=True, slots=True)
class QuotaOp:
    key: str
    value: float
    remove: bool = False


@dataclass(frozen=True, slots=True)
class QuotaAlteration:
    entity: list[QuotaEntityPart]
    ops: list[QuotaOp]


@dataclass(frozen=True, slots=True)
class AlterClientQuotasRequest:
    entries: list[QuotaAlteration]
    validate_only: bool = False


@dataclass(frozen=True, slots=True)
class AlterClientQuotasResult:
    error_code: int
    error_message: str | None
    entity: list[QuotaEntityPart]


@dataclass(frozen=True, slots=True)
class AlterClientQuotasResponse:
    entries: list[AlterClientQuotasResult]
    throttle_time_ms: int = 0


@dataclass(frozen=True, slots=True)
class QuotaFilterComponent:
    entity_type: str
    match_type: int  # 0 exact, 1 default, 2 any named
    match: str | None = None


@dataclass(frozen=True, slots=True)
class DescribeClientQuotasRequest:
    components: list[QuotaFilterComponent]
    strict: bool = False


@dataclass(frozen=True, slots=True)
class QuotaValue:
    key: str
    value: float


@dataclass(frozen=True, slots=True)
class DescribedQuotas:
    entity: list[QuotaEntityPart]
    values: list[QuotaValue]


@dataclass(frozen=True, slots=True)
class DescribeClientQuotasResponse:
    error_code: int
    error_message: str | None
    entries: list[DescribedQuotas]
    throttle_time_ms: int = 0


DESCRIBE_CLIENT_QUOTAS = ApiSpec(
    48, "DescribeClientQuotas", DescribeClientQuotasRequest, DescribeClientQuotasResponse
)
ALTER_CLIENT_QUOTAS = ApiSpec(
    49, "AlterClientQuotas", AlterClientQuotasRequest, AlterClientQuotasResponse
)
