"""The configs of odradek's internal topics, set when they are created and enforced after.

`__consumer_offsets` is compacted, as Kafka's: a group's commits keep only the latest offset
per (group, topic, partition) key, and a gone group's tombstones remove it, so the topic (and a
coordinator's load, a replay of it) follows the live groups and offsets, not the history of
commits. It is created with OFFSETS_TOPIC_CONFIGS (Kafka's offsets topic: compact, 100 MiB
segments). A cluster made before it was compacted has `retention.ms=-1` and no policy: at
start the controller corrects it (`enforce_offsets_topic_config`), writing the ENFORCED configs
over what differs in its /config/topics znode, with a change notification so every broker's
logs take it at once, as Kafka enforces its internal topics' configs. Other overrides stay.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from coordinator.cluster import zk_paths as paths
from coordinator.cluster.config_changes import write_topic_config
from coordinator.cluster.topics import read_topic_config
from coordinator.cluster.zk import ZkClient
from coordinator.group.records import OFFSETS_TOPIC
from protocol.errors import UnknownTopicOrPartitionError

log = logging.getLogger("odradek.controller")

OFFSETS_SEGMENT_BYTES = 100 * 1024 * 1024  # Kafka's offsets.topic.segment.bytes
OFFSETS_TOPIC_CONFIGS = {"cleanup.policy": "compact", "segment.bytes": str(OFFSETS_SEGMENT_BYTES)}
ENFORCED = {"cleanup.policy": "compact"}  # corrected on an existing topic
# Kafka's __transaction_state: compacted (a transactional id's latest state is what a new
# coordinator loads), 100 MiB segments (transaction.state.log.segment.bytes)
TRANSACTION_TOPIC_CONFIGS = {"cleanup.policy": "compact", "segment.bytes": str(100 * 1024 * 1024)}
# Kafka's __share_group_state: compacted (a share partition's last ShareSnapshot and the
# ShareUpdates after it are what a share coordinator loads), 100 MiB segments, and
# min.insync.replicas from share.coordinator.state.topic.min.isr (2), set when it is created
SHARE_STATE_TOPIC_CONFIGS = {"cleanup.policy": "compact", "segment.bytes": str(100 * 1024 * 1024)}


def corrected(current: Mapping[str, str]) -> dict[str, str] | None:
    """The offsets topic's overrides with ENFORCED applied, or None when nothing differs."""
    if all(current.get(name) == value for name, value in ENFORCED.items()):
        return None
    return {**current, **ENFORCED}


async def enforce_offsets_topic_config(zk: ZkClient) -> bool:
    """Correct an existing `__consumer_offsets`' config; True when it was written."""
    if await zk.exists(paths.topic_path(OFFSETS_TOPIC)) is None:
        return False
    try:
        current = await read_topic_config(zk, OFFSETS_TOPIC)
        new = corrected(current)
        if new is None:
            return False
        await write_topic_config(zk, OFFSETS_TOPIC, new)
    except UnknownTopicOrPartitionError:  # deleted meanwhile: nothing to correct
        return False
    log.warning("%s config corrected: %s (it had %s)", OFFSETS_TOPIC, new, dict(current))
    return True
