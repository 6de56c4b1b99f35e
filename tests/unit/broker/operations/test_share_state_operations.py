"""The share coordinator's state operations (KIP-932; broker/operations/*share_group_state*.py)
on an in-process broker (tests/unit/broker/harness.py) with the real share coordinator and
replica manager: each API once, fencing, a coordinator move that reloads the state by replay,
FindCoordinator key type 2, and the refusals. The records' bytes are
tests/unit/coordinator/test_share_state_records.py's, the shard's logic
test_share_state_shard.py's; both doors' codecs are exercised by test_share_state_codecs.py.
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

from broker.operations import (
    delete_share_group_state,
    find_coordinator,
    initialize_share_group_state,
    read_share_group_state,
    read_share_group_state_summary,
    write_share_group_state,
)
from broker.operations.read_share_group_state import PartitionRead
from broker.operations.share_state import PartitionState
from broker.operations.write_share_group_state import PartitionWrite
from broker.security.authorizer import AclCache, Authorizer
from coordinator.runtime.states import PartitionState as Loading
from coordinator.share.records import SHARE_STATE_TOPIC, ShareKey, StateBatch
from protocol.api.group import SHARE_KEY_TYPE
from tests.unit.broker.harness import BrokerHarness, running_broker
from tests.unit.broker.operations.test_group_operations import NOT_COORDINATOR, run

TOPIC_ID = uuid.UUID(int=7)
KEY = ShareKey("jobs", TOPIC_ID, 0)
FENCED_LEADER_EPOCH, FENCED_STATE_EPOCH, CLUSTER_AUTHORIZATION_FAILED = 74, 124, 31
INVALID_REQUEST = 42

# For test_table.py: a request model per API.
SAMPLES: dict[str, Any] = {
    "InitializeShareGroupState": initialize_share_group_state.InitializeShareGroupState(
        "s", ((TOPIC_ID, (initialize_share_group_state.PartitionInit(0, 0, -1),)),)
    ),
    "ReadShareGroupState": read_share_group_state.ReadShareGroupState(
        "s", ((TOPIC_ID, (PartitionRead(0, 0),)),)
    ),
    "WriteShareGroupState": write_share_group_state.WriteShareGroupState(
        "s", ((TOPIC_ID, (PartitionWrite(0, 0, 0, -1, ()),)),)
    ),
    "DeleteShareGroupState": delete_share_group_state.DeleteShareGroupState(
        "s", ((TOPIC_ID, (0,)),)
    ),
    "ReadShareGroupStateSummary": read_share_group_state_summary.ReadShareGroupStateSummary(
        "s", ((TOPIC_ID, (PartitionRead(0, 0),)),)
    ),
}


async def coordinate_shares(b: BrokerHarness) -> None:
    """Lead `__share_group_state` (one partition in the harness) and wait until it is loaded."""
    await b.lead(SHARE_STATE_TOPIC, 1)
    runtime = b.ctx.share_coordinator.runtime
    for _ in range(500):
        if runtime.owned and all(o.state is Loading.READY for o in runtime.owned.values()):
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the share coordinator did not load")


async def _one(b: BrokerHarness, operation: Any, request: Any) -> PartitionState:
    result = await run(operation, b, request)
    [topic] = result.topics
    [partition] = topic.partitions
    return partition


def _write(start: int, *batches: StateBatch, leader_epoch: int = 1, state_epoch: int = 0) -> Any:
    part = PartitionWrite(0, state_epoch, leader_epoch, start, batches)
    return write_share_group_state.WriteShareGroupState("jobs", ((TOPIC_ID, (part,)),))


def _read(leader_epoch: int) -> Any:
    return read_share_group_state.ReadShareGroupState(
        "jobs", ((TOPIC_ID, (PartitionRead(0, leader_epoch),)),)
    )


async def test_state_is_written_read_reloaded_by_a_new_coordinator_and_deleted(
    tmp_path: Path,
) -> None:
    async with running_broker(tmp_path) as b:
        assert (await _one(b, read_share_group_state.run, _read(0))).error_code == NOT_COORDINATOR
        await coordinate_shares(b)
        init = initialize_share_group_state.InitializeShareGroupState(
            "jobs", ((TOPIC_ID, (initialize_share_group_state.PartitionInit(0, 0, 10),)),)
        )
        assert (await _one(b, initialize_share_group_state.run, init)).error_code == 0
        read = await _one(b, read_share_group_state.run, _read(1))
        assert (read.error_code, read.start_offset, read.state_batches) == (0, 10, ())
        written = await _one(
            b,
            write_share_group_state.run,
            _write(12, StateBatch(12, 13, 2, 1), StateBatch(14, 15, 0, 2)),
        )
        assert written.error_code == 0
        # a new leader epoch of __share_group_state-0: the coordinator loads it again
        b.leader_epochs[(SHARE_STATE_TOPIC, 0)] = 1
        await coordinate_shares(b)
        read = await _one(b, read_share_group_state.run, _read(2))
        assert (read.error_code, read.state_epoch, read.start_offset) == (0, 0, 12)
        assert read.state_batches == (StateBatch(12, 13, 2, 1), StateBatch(14, 15, 0, 2))
        # the leader of epoch 1 is fenced now; the summary fences nobody
        fenced = await _one(b, write_share_group_state.run, _write(-1, leader_epoch=1))
        assert fenced.error_code == FENCED_LEADER_EPOCH
        summary = read_share_group_state_summary.ReadShareGroupStateSummary(
            "jobs", ((TOPIC_ID, (PartitionRead(0, 0),)),)
        )
        got = await _one(b, read_share_group_state_summary.run, summary)
        assert (got.error_code, got.leader_epoch, got.start_offset) == (0, 2, 12)
        deleted = delete_share_group_state.DeleteShareGroupState("jobs", ((TOPIC_ID, (0,)),))
        assert (await _one(b, delete_share_group_state.run, deleted)).error_code == 0
        gone = await _one(b, read_share_group_state.run, _read(3))
        assert (gone.error_code, gone.start_offset) == (0, -1)
        # an older state epoch is fenced by an initialization at a newer one
        later = initialize_share_group_state.InitializeShareGroupState(
            "jobs", ((TOPIC_ID, (initialize_share_group_state.PartitionInit(0, 5, 0),)),)
        )
        assert (await _one(b, initialize_share_group_state.run, later)).error_code == 0
        stale = await _one(b, write_share_group_state.run, _write(-1, leader_epoch=3))
        assert stale.error_code == FENCED_STATE_EPOCH


async def test_find_coordinator_key_type_2_and_refusals(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as b:
        await coordinate_shares(b)
        find = find_coordinator.FindCoordinator((KEY.coordinator_key(), "nokey"), SHARE_KEY_TYPE)
        found, bad = (await run(find_coordinator.run, b, find)).coordinators
        assert (found.error_code, found.node_id) == (0, b.ctx.config.broker_id)
        assert bad.error_code == INVALID_REQUEST
        # no group id, no topic id
        no_group = read_share_group_state.ReadShareGroupState(
            "", ((TOPIC_ID, (PartitionRead(0, 0),)),)
        )
        assert (await _one(b, read_share_group_state.run, no_group)).error_code == INVALID_REQUEST
        no_topic = read_share_group_state.ReadShareGroupState(
            "g", ((None, (PartitionRead(0, 0),)),)
        )
        assert (await _one(b, read_share_group_state.run, no_topic)).error_code == INVALID_REQUEST
        # brokers only: without ClusterAction every partition is refused, FindCoordinator too
        b.ctx.authorizer = Authorizer(AclCache(), allow_everyone_if_no_acl_found=False)
        refused = await _one(b, write_share_group_state.run, _write(0))
        assert refused.error_code == CLUSTER_AUTHORIZATION_FAILED
        [denied, _] = (await run(find_coordinator.run, b, find)).coordinators
        assert denied.error_code == CLUSTER_AUTHORIZATION_FAILED
