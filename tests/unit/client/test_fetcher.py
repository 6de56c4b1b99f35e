"""Fetcher over the fake cluster, alone (no consumer around it): what close() lets go of."""

import asyncio
import gc
import weakref

from client.cluster import Cluster
from client.fetcher import FetchConfig, Fetcher
from client.subscription import EARLIEST, SubscriptionState
from client.types import TopicPartition
from protocol.api.metadata import MetadataRequest
from protocol.batch import build_batch
from tests.unit.client.fake_broker import FakeState, bootstrap

TS = 1_700_000_000_000


async def test_close_settles_a_written_fetch_on_a_connection_that_outlives_the_fetcher(
    fake1: FakeState,
) -> None:
    """A fetch written inline holds an in-flight slot of a connection the fetcher does not own
    (a Cluster shared by Spark range readers). close() fails its answer: the slot comes back
    at once, nothing on the connection keeps the closed fetcher, its buffered data is dropped,
    no metadata is asked for, and the broker's late answer is dropped by the connection."""
    fake1.create_topic("t", 1)
    fake1.append(("t", 0), build_batch([(b"k", b"v%d" % i, None, TS + i) for i in range(3)]))
    tp = TopicPartition("t", 0)
    cluster = Cluster(bootstrap(fake1), retry_backoff_ms=10)
    try:
        cluster.add_topics(["t"])
        await cluster.request_update()
        conn = await cluster.connection(1)
        subs = SubscriptionState(EARLIEST)
        subs.assign([tp])
        subs.seek(tp, 0)
        fetcher = Fetcher(cluster, subs, FetchConfig(fetch_max_wait_ms=10))
        fetcher.send_fetches()
        for _ in range(100):
            if tp in fetcher.buffered():
                break
            await fetcher.wait(0.01)
        assert tp in fetcher.buffered() and conn.in_flight == 0
        gate = fake1.gates["Fetch"] = asyncio.Event()  # the broker holds the next answer
        fetcher.send_fetches()  # a prefetch from where the buffered data ends
        assert conn.in_flight == 1  # written inline: no task, only its timer, in the fetcher
        metadata_asked = fake1.requests["Metadata"]

        await fetcher.close()
        assert conn.in_flight == 0 and conn._slots.free == conn.max_in_flight
        assert fetcher.buffered() == set()
        closed = weakref.ref(fetcher)
        del fetcher
        gc.collect()
        assert closed() is None  # no callback left on the connection keeps it

        gate.set()  # the late answer comes; answers go out in order, so it comes first
        assert (await conn.send(MetadataRequest([]), timeout_ms=1000)).cluster_id == "fake"
        assert not conn.closed and conn.in_flight == 0
        assert fake1.requests["Metadata"] == metadata_asked + 1  # ours alone
    finally:
        await cluster.close()
