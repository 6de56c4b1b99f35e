"""The Kafka door's codecs of the client quota APIs, v0-v1 (see broker/codecs/kafka/__init__.py):
v1 is v0 made flexible. DescribeClientQuotas answers its entries as null with an error, as
Kafka does; each answer's throttle time is the quota manager's (0 here, set after)."""

from __future__ import annotations

from typing import Any

from broker.codecs import Codec
from broker.operations import alter_client_quotas as alter
from broker.operations import describe_client_quotas as describe
from protocol.kafka import versions as v
from protocol.kafka.codec import KafkaRequest, make, nested, response_class
from protocol.quota import FilterComponent


def _entity(cls: Any, entity: alter.Entity) -> tuple[Any, ...]:
    entity_cls = nested(cls, "EntityData")
    return tuple(make(entity_cls, entity_type=t, entity_name=n) for t, n in entity)


# ----- AlterClientQuotas (49) -----------------------------------------------------------------


def _alter_in(request: KafkaRequest) -> alter.AlterClientQuotas:
    req = request.body
    return alter.AlterClientQuotas(tuple(
        alter.Alteration(tuple((e.entity_type, e.entity_name) for e in entry.entity),
                         tuple(alter.Op(op.key, float(op.value), bool(op.remove))
                               for op in entry.ops))
        for entry in req.entries
    ), bool(req.validate_only))  # fmt: skip


def _alter_out(request: KafkaRequest, result: alter.AlterClientQuotasResult) -> Any:
    cls = response_class(v.ALTER_CLIENT_QUOTAS, request.header.api_version)
    entry_cls = nested(cls, "EntryData")
    return make(cls, throttle_time=0, entries=tuple(
        make(entry_cls, error_code=e.error_code, error_message=e.error_message,
             entity=_entity(cls, e.entity))
        for e in result.entries
    ))  # fmt: skip


ALTER_CLIENT_QUOTAS = Codec(_alter_in, _alter_out)

# ----- DescribeClientQuotas (48) --------------------------------------------------------------


def _describe_in(request: KafkaRequest) -> describe.DescribeClientQuotas:
    req = request.body
    components = tuple(
        FilterComponent(c.entity_type, int(c.match_type), c.match) for c in req.components
    )
    return describe.DescribeClientQuotas(components, bool(req.strict))


def _describe_out(request: KafkaRequest, result: describe.DescribeClientQuotasResult) -> Any:
    cls = response_class(v.DESCRIBE_CLIENT_QUOTAS, request.header.api_version)
    entry_cls, value_cls = nested(cls, "EntryData"), nested(cls, "ValueData")
    entries = None
    if result.error_code == 0:
        entries = tuple(
            make(entry_cls, entity=_entity(cls, e.entity),
                 values=tuple(make(value_cls, key=k, value=val) for k, val in e.values))
            for e in result.entries
        )  # fmt: skip
    return make(cls, throttle_time=0, error_code=result.error_code,
                error_message=result.error_message, entries=entries)  # fmt: skip


DESCRIBE_CLIENT_QUOTAS = Codec(_describe_in, _describe_out)
