"""Many partitions at a broker's death: new leaders go out before the ISR shrinks (seed 002).

A real ZooKeeper; brokers are ZooKeeper sessions and the controller talks to a RecordingChannel
(the helpers of test_controller.py). With 900 partitions at RF 3 on 3 brokers, a broker that
dies leads 300 and follows 600: the controller writes and sends the 300 elections first (one
LeaderAndIsr and one UpdateMetadata per surviving broker, batched), then the 600 ISR shrinks
in a second batch per broker, so clients find the new leaders without waiting for the rest.
"""

from __future__ import annotations

import pytest

from coordinator.cluster import topics
from protocol.api.controller import LeaderAndIsrRequest, UpdateMetadataRequest
from tests.fixtures.zk import wait_until
from tests.integration.test_controller import (
    WAIT_S,
    Cluster,
    all_states,
    cluster,  # noqa: F401  (the fixture)
    eventually,
    start_controller,
)

pytestmark = pytest.mark.integration

PARTITIONS = 900


async def test_death_sends_new_leaders_before_isr_shrinks(cluster: Cluster) -> None:  # noqa: F811
    channel = await start_controller(cluster, [1, 2, 3], replicated=True)
    await topics.create_topic(cluster.admin, "m", PARTITIONS, 3, {}, [1, 2, 3])

    async def created() -> bool:
        return len(await all_states(cluster, "m", PARTITIONS)) == PARTITIONS

    await eventually(created, "every partition's state")
    before = await all_states(cluster, "m", PARTITIONS)
    led = {p for p, s in enumerate(before) if s.leader == 2}
    assert len(led) == PARTITIONS // 3
    channel.clear()

    await cluster.kill_broker(2)

    def two_rounds() -> bool:
        return all(
            sum(1 for b, r in channel.sent if b == broker and isinstance(r, UpdateMetadataRequest))
            >= 2
            for broker in (1, 3)
        )

    await wait_until(two_rounds, WAIT_S, "two rounds of requests")
    for broker in (1, 3):
        sent = [r for b, r in channel.sent if b == broker]
        kinds = [type(r) for r in sent]
        assert kinds == [LeaderAndIsrRequest, UpdateMetadataRequest] * 2
        first_lai, first_um, second_lai, second_um = sent
        elected = {s.partition for s in first_lai.partition_states}
        assert elected == led  # every partition that lost its leader, and only those
        assert all(s.leader in (1, 3) for s in first_lai.partition_states)
        assert {s.partition for s in first_um.partition_states} == led
        rest = {s.partition for s in second_lai.partition_states}
        assert rest == set(range(PARTITIONS)) - led
        assert all(
            2 not in s.isr for s in [*first_lai.partition_states, *second_um.partition_states]
        )
    after = await all_states(cluster, "m", PARTITIONS)
    assert all(2 not in s.isr and s.leader != 2 for s in after)
    assert all(a.leader_epoch == b.leader_epoch + 1 for a, b in zip(after, before, strict=True))
