"""Golden bytes for the client quota APIs on each door (broker/codecs/{native,kafka}/quotas.py;
harness in golden.py): the native frame and Kafka v0 and v1 (v1 is v0 made flexible). Read
against Kafka's schemas: an entity is (entity type, nullable name) pairs, an op (key, float64
value, remove); DescribeClientQuotas' entries are null with an error.
"""

from __future__ import annotations

from typing import Any

import pytest

from broker.operations import alter_client_quotas as alter
from broker.operations import describe_client_quotas as describe
from protocol.api import quotas
from protocol.kafka import codec as kafka_codec
from protocol.kafka import versions as v
from protocol.quota import FilterComponent

from .golden import Case, check, kio, many


def nested(name: str, **fields: Any) -> Any:
    """golden.nested, with nested entities inside (they are in the same kio module)."""

    def build(cls: Any) -> Any:
        values = {k: (f(cls) if callable(f) else f) for k, f in fields.items()}
        return kafka_codec.make(kafka_codec.nested(cls, name), **values)

    return build


BOB = (("user", "bob"), ("client-id", None))
ALTERED = alter.AlterClientQuotasResult(
    (alter.Altered(0, None, BOB), alter.Altered(42, "bad key", (("user", "x"),)))
)
ALTER_MODEL = alter.AlterClientQuotas((
    alter.Alteration(BOB, (alter.Op("producer_byte_rate", 1024.0),
                           alter.Op("consumer_byte_rate", 0.0, True))),
    alter.Alteration((("user", "x"),), (alter.Op("nope", 1.0),)),
), True)  # fmt: skip
COMPONENTS = (FilterComponent("user", 0, "bob"), FilterComponent("client-id", 1))
DESCRIBED = describe.DescribeClientQuotasResult(0, None, (
    describe.Described(BOB, (("producer_byte_rate", 1024.0),)),
))  # fmt: skip
REFUSED = describe.DescribeClientQuotasResult(31, "no")


def _alter_request(version: int):  # type: ignore[no-untyped-def]
    def entity(t: str, n: str | None):  # type: ignore[no-untyped-def]
        return nested("EntityData", entity_type=t, entity_name=n)

    return kio(v.ALTER_CLIENT_QUOTAS, version, validate_only=True, entries=many(
        nested("EntryData", entity=many(entity("user", "bob"), entity("client-id", None)),
               ops=many(nested("OpData", key="producer_byte_rate", value=1024.0, remove=False),
                        nested("OpData", key="consumer_byte_rate", value=0.0, remove=True))),
        nested("EntryData", entity=many(entity("user", "x")),
               ops=many(nested("OpData", key="nope", value=1.0, remove=False)))))  # fmt: skip


def _describe_request(version: int):  # type: ignore[no-untyped-def]
    return kio(v.DESCRIBE_CLIENT_QUOTAS, version, strict=True, components=many(
        nested("ComponentData", entity_type="user", match_type=0, match="bob"),
        nested("ComponentData", entity_type="client-id", match_type=1, match=None)))  # fmt: skip


NATIVE_ALTER = quotas.AlterClientQuotasRequest([
    quotas.QuotaAlteration([quotas.QuotaEntityPart("user", "bob"),
                            quotas.QuotaEntityPart("client-id", None)],
                           [quotas.QuotaOp("producer_byte_rate", 1024.0),
                            quotas.QuotaOp("consumer_byte_rate", 0.0, True)]),
    quotas.QuotaAlteration([quotas.QuotaEntityPart("user", "x")], [quotas.QuotaOp("nope", 1.0)]),
], True)  # fmt: skip
NATIVE_DESCRIBE = quotas.DescribeClientQuotasRequest(
    [quotas.QuotaFilterComponent("user", 0, "bob"), quotas.QuotaFilterComponent("client-id", 1)],
    True,
)

CASES = [
    Case("AlterClientQuotas native", v.ALTER_CLIENT_QUOTAS, -1, lambda: NATIVE_ALTER,
         ALTER_MODEL, ALTERED,
         "0000007995310007a1639292929292a475736572a3626f6292a9636c69656e742d6964c09293b270726f64756365725f627974655f72617465cb4090000000000000c293b2636f6e73756d65725f627974655f72617465cb0000000000000000c3929192a475736572a1789193a46e6f7065cb3ff0000000000000c2c3",
         "0000003393070092929300c09292a475736572a3626f6292a9636c69656e742d6964c0932aa7626164206b65799192a475736572a17800"),
    Case("AlterClientQuotas v0", v.ALTER_CLIENT_QUOTAS, 0, _alter_request(0),
         ALTER_MODEL, ALTERED,
         "00000090003100000000000700076f64726164656b00000002000000020004757365720003626f620009636c69656e742d6964ffff00000002001270726f64756365725f627974655f726174654090000000000000000012636f6e73756d65725f627974655f72617465000000000000000001000000010004757365720001780000000100046e6f70653ff00000000000000001",
         "000000440000000700000000000000020000ffff000000020004757365720003626f620009636c69656e742d6964ffff002a0007626164206b657900000001000475736572000178"),
    Case("AlterClientQuotas v1", v.ALTER_CLIENT_QUOTAS, 1, _alter_request(1),
         ALTER_MODEL, ALTERED,
         "00000082003100010000000700076f64726164656b000303057573657204626f62000a636c69656e742d69640000031370726f64756365725f627974655f726174654090000000000000000013636f6e73756d65725f627974655f72617465000000000000000001000002057573657202780002056e6f70653ff00000000000000000000100",
         "0000003a0000000700000000000300000003057573657204626f62000a636c69656e742d6964000000002a08626164206b65790205757365720278000000"),
    Case("DescribeClientQuotas native", v.DESCRIBE_CLIENT_QUOTAS, -1, lambda: NATIVE_DESCRIBE,
         describe.DescribeClientQuotas(COMPONENTS, True), DESCRIBED,
         "0000002195300007a163929293a47573657200a3626f6293a9636c69656e742d696401c0c3",
         "0000003e9307009400c091929292a475736572a3626f6292a9636c69656e742d6964c09192b270726f64756365725f627974655f72617465cb409000000000000000"),
    Case("DescribeClientQuotas v0", v.DESCRIBE_CLIENT_QUOTAS, 0, _describe_request(0),
         describe.DescribeClientQuotas(COMPONENTS, True), DESCRIBED,
         "00000030003000000000000700076f64726164656b00000002000475736572000003626f620009636c69656e742d696401ffff01",
         "0000004c00000007000000000000ffff00000001000000020004757365720003626f620009636c69656e742d6964ffff00000001001270726f64756365725f627974655f726174654090000000000000"),
    Case("DescribeClientQuotas v1 refused", v.DESCRIBE_CLIENT_QUOTAS, 1, _describe_request(1),
         describe.DescribeClientQuotas(COMPONENTS, True), REFUSED,
         "0000002d003000010000000700076f64726164656b000305757365720004626f62000a636c69656e742d69640100000100",
         "00000010000000070000000000001f036e6f0000"),
]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_golden_bytes(case: Case) -> None:
    check(case)
