"""The partition reads' operations besides Fetch (broker/operations/list_offsets.py), tested
once, whichever door serves them: called directly with a `Session` on an in-process broker
(tests/unit/broker/harness.py). The doors' codecs are tested apart (test_partition_read_codecs.py).
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from broker.operations import list_offsets
from broker.security.authorizer import AclCache, Authorizer
from broker.session import Session
from protocol.acl import AclOperation, ResourceType
from protocol.errors import TopicAuthorizationFailedError, UnknownTopicOrPartitionError
from protocol.principal import KafkaPrincipal
from tests.unit.broker.harness import running_broker
from tests.unit.broker.helpers import batch, produce
from tests.unit.broker.test_acl_rules import grant

SESSION = Session(principal=KafkaPrincipal.user("alice"), peer_host="127.0.0.1", peer_port=5555)


def _no_offsets(*_: Any) -> tuple[int, int, int, int]:
    return UnknownTopicOrPartitionError.code, -1, -1, -1


# For test_table.py: a request model per API, and what its operation needs on the context.
SAMPLES: dict[str, Any] = {
    "ListOffsets": list_offsets.ListOffsets((("t", (list_offsets.Asked(0, -1),)),)),
}
CONTEXTS: dict[str, Any] = {
    "ListOffsets": {"replicas": SimpleNamespace(list_offset=_no_offsets)},
}


def ask(topic: str, ts: int) -> list_offsets.ListOffsets:
    return list_offsets.ListOffsets(((topic, (list_offsets.Asked(0, ts),)),))


async def test_list_offsets_earliest_latest_and_by_time(tmp_path: Path) -> None:
    """Moved from test_admin.py (the native door's)."""
    async with running_broker(tmp_path) as b:
        await b.lead("o")
        conn = await b.connect()
        for i in range(3):
            await conn.send(produce("o", 0, batch(10, ts_ms=1000 * (i + 1))))

        def lookup(ts: int, topic: str = "o") -> tuple[int, int]:
            (listed,) = list_offsets.run(b.ctx, SESSION, ask(topic, ts)).topics[0][1]
            return listed.error_code, listed.offset

        assert lookup(-2) == (0, 0)
        assert lookup(-1) == (0, 30)
        assert lookup(1500) == (0, 10)
        assert lookup(3000) == (0, 20)
        assert lookup(9000) == (0, -1)
        assert lookup(-1, "nope")[0] == UnknownTopicOrPartitionError.code


async def test_list_offsets_refuses_each_partition_of_a_topic_not_described(
    tmp_path: Path,
) -> None:
    async with running_broker(tmp_path) as b:
        await b.lead("o", partitions=2)
        b.ctx.authorizer = authz = Authorizer(AclCache())
        both = list_offsets.ListOffsets(
            (("o", (list_offsets.Asked(0, -1), list_offsets.Asked(1, -2))),)
        )
        refused = list_offsets.run(b.ctx, SESSION, both).topics
        auth = TopicAuthorizationFailedError.code
        assert [(p.partition, p.error_code) for p in refused[0][1]] == [(0, auth), (1, auth)]
        grant(authz, AclOperation.DESCRIBE, ResourceType.TOPIC, "o")
        allowed = list_offsets.run(b.ctx, SESSION, both).topics
        assert [(p.partition, p.error_code, p.offset) for p in allowed[0][1]] == [
            (0, 0, 0), (1, 0, 0)]  # fmt: skip
