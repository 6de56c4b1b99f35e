"""The cluster id: Kafka's /cluster/id znode, {"version":"1","id":"<22 characters>"}.

Created once, by whichever broker starts first (a create that loses the race reads the
winner's), and read by every broker at start-up, as Kafka's brokers do (KafkaServer's
getOrGenerateClusterId). The id is a random UUID in URL-safe base64 without padding, 22
characters, as Kafka's `Uuid.randomUuid().toString()`. Brokers give it in Metadata and
DescribeCluster; it never changes for the life of the ZooKeeper data.
"""

from __future__ import annotations

import base64
import contextlib
import uuid
from collections.abc import Callable

from coordinator.cluster import zk_paths as paths
from coordinator.cluster.zk import ZkClient, ZkError, ZkNodeExists, ZkNoNode
from coordinator.cluster.zk_paths import ClusterId, ZkDataError

CLUSTER_ID_CHARS = 22


def random_cluster_id() -> str:
    """22 characters of URL-safe base64: a random (version 4) UUID's 16 bytes."""
    text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode("ascii").rstrip("=")
    assert len(text) == CLUSTER_ID_CHARS
    return text


async def get_or_create_cluster_id(
    zk: ZkClient, new_id: Callable[[], str] = random_cluster_id
) -> str:
    """The cluster id in ZooKeeper, creating /cluster/id with `new_id()` when there is none.
    Raises ZkError when the znode holds something that is not a cluster id."""
    existing = await _read(zk)
    if existing is not None:
        return existing
    with contextlib.suppress(ZkNodeExists):  # another broker created it first: theirs is it
        await zk.create(paths.CLUSTER_ID, ClusterId(new_id()).encode(), makepath=True)
    found = await _read(zk)
    if found is None:
        raise ZkError(f"{paths.CLUSTER_ID} vanished after it was created", paths.CLUSTER_ID)
    return found


async def _read(zk: ZkClient) -> str | None:
    try:
        data, _ = await zk.get(paths.CLUSTER_ID)
    except ZkNoNode:
        return None
    try:
        return ClusterId.decode(data).id
    except ZkDataError as exc:
        raise ZkError(f"{paths.CLUSTER_ID}: {exc}", paths.CLUSTER_ID) from None
