"""Golden bytes of the controller requests' native codecs (broker/codecs/native/controller.py,
harness in golden.py). Native only: no Kafka version to pin. The partition states and broker
addresses pass through to the operations as decoded.
"""

from __future__ import annotations

import pytest

from broker.operations import controlled_shutdown, leader_and_isr, stop_replica, update_metadata
from broker.operations.from_controller import PartitionResult
from protocol.api import controller as wire
from protocol.api.metadata import BrokerInfo

from .golden import Case, check

STATE = wire.PartitionState("t", 0, 3, 1, 2, [1, 2], 5, [1, 2], [], False, None)
LIVE = BrokerInfo(1, "h", 9092)
ERRORS = (PartitionResult("t", 0, 0), PartitionResult("t", 1, 11))

CASES = [
    Case("LeaderAndIsr native", wire.LEADER_AND_ISR.key, -1,
         lambda: wire.LeaderAndIsrRequest(0, 3, [STATE], [LIVE]),
         leader_and_isr.LeaderAndIsr(0, 3, (STATE,), (LIVE,)),
         leader_and_isr.LeaderAndIsrResult(0, ERRORS),
         "0000002795040007a163940003919ba174000301029201020592010290c2c0919701a168cd2384c0c0ff90",
         "0000001093070092009293a174000093a174010b"),
    Case("StopReplica native", wire.STOP_REPLICA.key, -1,
         lambda: wire.StopReplicaRequest(0, 3, True, [wire.TopicPartitionRef("t", 1)]),
         stop_replica.StopReplica(0, 3, True, (("t", 1),)),
         stop_replica.StopReplicaResult(0, ERRORS),
         "0000000f95050007a163940003c39192a17401",
         "0000001093070092009293a174000093a174010b"),
    Case("UpdateMetadata native", wire.UPDATE_METADATA.key, -1,
         lambda: wire.UpdateMetadataRequest(0, 3, [STATE], [LIVE], ["old"]),
         update_metadata.UpdateMetadata(0, 3, (STATE,), (LIVE,), ("old",)),
         update_metadata.UpdateMetadataResult(11),
         "0000002c95060007a163950003919ba174000301029201020592010290c2c0919701a168cd2384c0c0ff9091a36f6c64",
         "00000005930700910b"),
    Case("ControlledShutdown native", wire.CONTROLLED_SHUTDOWN.key, -1,
         lambda: wire.ControlledShutdownRequest(2),
         controlled_shutdown.ControlledShutdown(2),
         controlled_shutdown.ControlledShutdownResult(0, (("t", 0), ("u", 2))),
         "0000000895070007a1639102",
         "0000000e93070092009292a1740092a17502"),
]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_golden_bytes(case: Case) -> None:
    check(case)
