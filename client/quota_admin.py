"""Client quotas in the admin client (KIP-546), what `odradek quotas` uses. AsyncAdmin inherits
`QuotaAdmin`; the sync Admin inherits `SyncQuotaAdmin`, whose methods run the same calls on
its loop.

    alter_client_quotas     AlterClientQuotas (49): set and remove quota keys of one entity
                            (a user, a client id or both; DEFAULT for a default entity)
    describe_client_quotas  DescribeClientQuotas (48): entities and their values, filtered as
                            Kafka's ClientQuotaFilter (`user`, `client_id`: a name, DEFAULT, or
                            ANY for any named entity; `strict`: only entities of those types)

Entities are protocol/quota.py's `QuotaEntity`. A refused change raises its error naming the
entity (InvalidRequestError for an unknown key or a bad value).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from protocol import quota as q
from protocol.api.quotas import (
    AlterClientQuotasRequest,
    AlterClientQuotasResponse,
    DescribeClientQuotasRequest,
    DescribeClientQuotasResponse,
    QuotaAlteration,
    QuotaEntityPart,
    QuotaFilterComponent,
    QuotaOp,
)
from protocol.errors import UsageError, for_code
from protocol.quota import DEFAULT, QuotaEntity

ANY = "*any*"  # a filter for any named entity of a type (Kafka's ofEntityType)


def _parts(entity: QuotaEntity) -> list[QuotaEntityPart]:
    return [QuotaEntityPart(t, n) for t, n in entity.wire()]


def _component(entity_type: str, wanted: str) -> QuotaFilterComponent:
    if wanted == ANY:
        return QuotaFilterComponent(entity_type, q.MATCH_SPECIFIED, None)
    if wanted == DEFAULT:
        return QuotaFilterComponent(entity_type, q.MATCH_DEFAULT, None)
    return QuotaFilterComponent(entity_type, q.MATCH_EXACT, wanted)


def _entity(parts: Iterable[QuotaEntityPart]) -> QuotaEntity:
    return q.entity_from_wire((p.entity_type, p.entity_name) for p in parts)


class QuotaAdmin:
    request_timeout_ms: int
    _send_admin: Callable[..., Any]

    async def alter_client_quotas(
        self,
        entity: QuotaEntity,
        set_quotas: Mapping[str, float] | None = None,
        remove: Iterable[str] = (),
        validate_only: bool = False,
    ) -> None:
        ops = [QuotaOp(k, float(v)) for k, v in (set_quotas or {}).items()]
        ops += [QuotaOp(k, 0.0, remove=True) for k in remove]
        if not ops:
            raise UsageError(f"nothing to change in the quotas of {entity}")
        req = AlterClientQuotasRequest([QuotaAlteration(_parts(entity), ops)], validate_only)
        resp: AlterClientQuotasResponse = await self._send_admin(req, self.request_timeout_ms)
        for result in resp.entries:
            if result.error_code:
                error = for_code(result.error_code)
                raise error(f"{entity}: {result.error_message or error.default_message}")

    async def describe_client_quotas(
        self, user: str | None = None, client_id: str | None = None, strict: bool = False
    ) -> dict[QuotaEntity, dict[str, float]]:
        components = []
        if user is not None:
            components.append(_component(q.USER, user))
        if client_id is not None:
            components.append(_component(q.CLIENT_ID, client_id))
        req = DescribeClientQuotasRequest(components, strict)
        resp: DescribeClientQuotasResponse = await self._send_admin(req, self.request_timeout_ms)
        if resp.error_code:
            error = for_code(resp.error_code)
            raise error(resp.error_message or error.default_message)
        return {_entity(e.entity): {v.key: v.value for v in e.values} for e in resp.entries}


class SyncQuotaAdmin:
    """The same calls on the sync Admin (client/sync.py), each run on its loop."""

    _run: Callable[..., Any]

    def alter_client_quotas(
        self,
        entity: QuotaEntity,
        set_quotas: Mapping[str, float] | None = None,
        remove: Iterable[str] = (),
        validate_only: bool = False,
    ) -> None:
        s, r = dict(set_quotas or {}), list(remove)
        self._run(lambda a: a.alter_client_quotas(entity, s, r, validate_only))

    def describe_client_quotas(
        self, user: str | None = None, client_id: str | None = None, strict: bool = False
    ) -> dict[QuotaEntity, dict[str, float]]:
        result: dict[QuotaEntity, dict[str, float]] = self._run(
            lambda a: a.describe_client_quotas(user, client_id, strict)
        )
        return result
