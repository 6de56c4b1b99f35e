"""The client quota APIs' operations (broker/operations/{alter,describe}_client_quotas.py),
each tested once, whichever door serves it: called directly with a `Session` on a context with
the in-memory quota store (broker/quota/store.py's MemoryQuotaStore, over a real `Quotas`) and,
where a test says so, a real Authorizer. Kafka's checks of entities, keys and filters are
protocol/quota.py's (tests/unit/broker/test_quota_math.py); the codecs test_quota_codecs.py's.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from broker.operations import alter_client_quotas as alter
from broker.operations import describe_client_quotas as describe
from broker.quota.manager import Quotas
from broker.quota.store import MemoryQuotaStore
from broker.security.authorizer import AclCache, Authorizer
from broker.session import Session
from protocol.errors import (
    ClusterAuthorizationFailedError,
    InvalidRequestError,
)
from protocol.principal import KafkaPrincipal
from protocol.quota import MATCH_EXACT, FilterComponent

ALICE = KafkaPrincipal.user("alice")
SESSION = Session(principal=ALICE, peer_host="127.0.0.1", peer_port=5555)
RATE = "producer_byte_rate"
INVALID = InvalidRequestError.code


def entry(user: str | None, *ops: alter.Op) -> alter.Alteration:
    return alter.Alteration((("user", user),), ops)


def quota_context(authorizer: Any = None) -> Any:
    return SimpleNamespace(authorizer=authorizer, quota_store=MemoryQuotaStore(Quotas()))


# For test_table.py: a request model per API, and what its operation needs on the context.
SAMPLES: dict[str, Any] = {
    "AlterClientQuotas": alter.AlterClientQuotas((entry("u", alter.Op(RATE, 1024.0)),), True),
    "DescribeClientQuotas": describe.DescribeClientQuotas(()),
}
CONTEXTS: dict[str, Any] = {
    "AlterClientQuotas": {"quota_store": MemoryQuotaStore(Quotas())},
    "DescribeClientQuotas": {"quota_store": MemoryQuotaStore(Quotas())},
}


async def test_each_entry_is_checked_and_written_on_its_own() -> None:
    ctx = quota_context()
    asked = alter.AlterClientQuotas((
        entry("bob", alter.Op(RATE, 1024.0)),
        entry("carol", alter.Op("no_such_key", 1.0)),
        alter.Alteration((), (alter.Op(RATE, 1.0),)),  # an empty entity
        entry(None, alter.Op(RATE, 2048.0)),  # the default user
    ))  # fmt: skip
    result = await alter.run(ctx, SESSION, asked)
    assert [(e.error_code, e.entity) for e in result.entries] == [
        (0, (("user", "bob"),)), (INVALID, (("user", "carol"),)), (INVALID, ()),
        (0, (("user", None),)),
    ]  # fmt: skip
    assert "no_such_key" in (result.entries[1].error_message or "")
    described = await describe.run(ctx, SESSION, describe.DescribeClientQuotas(()))
    assert described.error_code == 0
    assert [(d.entity, d.values) for d in described.entries] == [
        ((("user", None),), ((RATE, 2048.0),)),  # <default> sorts first by entity path
        ((("user", "bob"),), ((RATE, 1024.0),)),
    ]


async def test_validate_only_writes_nothing_and_remove_clears_a_key() -> None:
    ctx = quota_context()
    dry = alter.AlterClientQuotas((entry("bob", alter.Op(RATE, 1024.0)),), validate_only=True)
    assert [e.error_code for e in (await alter.run(ctx, SESSION, dry)).entries] == [0]
    assert (await describe.run(ctx, SESSION, describe.DescribeClientQuotas(()))).entries == ()
    await alter.run(ctx, SESSION, alter.AlterClientQuotas((entry("bob", alter.Op(RATE, 1.0)),)))
    gone = alter.AlterClientQuotas((entry("bob", alter.Op(RATE, 0.0, remove=True)),))
    assert [e.error_code for e in (await alter.run(ctx, SESSION, gone)).entries] == [0]
    assert (await describe.run(ctx, SESSION, describe.DescribeClientQuotas(()))).entries == ()


async def test_a_filter_selects_and_a_bad_filter_is_the_whole_answers_error() -> None:
    ctx = quota_context()
    both = alter.AlterClientQuotas((
        entry("bob", alter.Op(RATE, 1.0)), entry("carol", alter.Op(RATE, 2.0)),
    ))  # fmt: skip
    await alter.run(ctx, SESSION, both)
    bob = describe.DescribeClientQuotas((FilterComponent("user", MATCH_EXACT, "bob"),), True)
    found = await describe.run(ctx, SESSION, bob)
    assert [d.entity for d in found.entries] == [(("user", "bob"),)]
    twice = (FilterComponent("user", MATCH_EXACT, "a"), FilterComponent("user", MATCH_EXACT, "b"))
    bad = await describe.run(ctx, SESSION, describe.DescribeClientQuotas(twice))
    assert (bad.error_code, bad.entries) == (INVALID, ())


async def test_acls_alter_configs_and_describe_configs_on_the_cluster() -> None:
    ctx = quota_context(Authorizer(AclCache()))
    refused = ClusterAuthorizationFailedError.code
    asked = alter.AlterClientQuotas((entry("a", alter.Op(RATE, 1.0)),
                                     entry("b", alter.Op(RATE, 1.0))))  # fmt: skip
    denied = await alter.run(ctx, SESSION, asked)
    assert [(e.error_code, e.entity) for e in denied.entries] == [
        (refused, (("user", "a"),)), (refused, (("user", "b"),))
    ]  # fmt: skip
    assert "may not AlterConfigs the cluster" in (denied.entries[0].error_message or "")
    hidden = await describe.run(ctx, SESSION, describe.DescribeClientQuotas(()))
    assert hidden.error_code == refused
