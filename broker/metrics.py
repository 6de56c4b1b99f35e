"""A broker's Prometheus metrics: one CollectorRegistry per broker, served on the metrics port.

Three kinds of metric, each kept where it costs least (docs/metrics.md lists every one, with
its Kafka counterpart):
- Per request (broker/metrics_requests.py: `RequestMetrics`, fed by `MeteredDoor`, which wraps
  each listener's door): count, latency histogram and errors by code, per API and protocol
  (native or Kafka), bumped in plain dicts on the loop.
- Hot-path counters (bytes and records in and out per topic, ISR shrinks and expands, fsyncs):
  plain ints bumped by the replica manager and the log (broker/metrics_counters.py) and only
  read at scrape time.
- State (partition counts, under-replicated, purgatory sizes, controller, ZooKeeper session,
  log sizes, connections, groups; broker/metrics_state.py): computed at scrape time by
  `BrokerStateCollector` from the broker's own objects, read on the broker's loop and built
  into families on the HTTP thread, never updated on change. The event loop's lag
  (broker/loop_lag.py, a timer every 10 ms from `start` on) and the garbage collector's pauses
  (broker/gc_pauses.py) are bucket counts read the same way.

`BrokerMetrics` ties them together: the registry, the request metrics that every door's
`MeteredDoor` shares, the ZooKeeper state listener, and the HTTP server (broker/metrics_http.py,
its own thread, rendering the registry there).
"""

from __future__ import annotations

import asyncio

from prometheus_client import CollectorRegistry, generate_latest

from broker.doors import Door
from broker.loop_lag import start_recorder
from broker.metrics_http import HttpLimits, MetricsHttpServer
from broker.metrics_requests import MeteredDoor, RequestMetrics
from broker.metrics_state import BrokerParts, BrokerStateCollector


class BrokerMetrics:
    """The registry of one broker, its request metrics, and (once started) its HTTP server."""

    def __init__(self, parts: BrokerParts) -> None:
        self.parts = parts
        self.registry = CollectorRegistry()
        self.requests = parts.requests = RequestMetrics()
        self.http: MetricsHttpServer | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def door(self, door: Door) -> MeteredDoor:
        return MeteredDoor(door, self.requests)

    def on_zk_state(self, state: str) -> None:
        """A ZooKeeper session state listener (coordinator/cluster/zk.py calls it on the loop)."""
        self.parts.zk_state = state

    def start(self, host: str, port: int, limits: HttpLimits | None = None) -> int:
        """Register the state collector (reading on the running loop), start the loop-lag
        recorder (broker/loop_lag.py) and serve; the port."""
        self._loop = asyncio.get_running_loop()
        self.parts.loop_lag = start_recorder()
        self.registry.register(BrokerStateCollector(self.parts, asyncio.get_running_loop()))
        self.http = MetricsHttpServer(host, port, self.render, limits)
        self.http.start()
        return self.http.port

    def render(self) -> bytes:
        """The exposition text; called on the HTTP server's thread."""
        return generate_latest(self.registry)

    def stop(self) -> None:
        """Stop serving; any thread (the daemon calls it from an executor)."""
        recorder = self.parts.loop_lag
        if recorder is not None and self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(recorder.stop)
        if self.http is not None:
            self.http.stop()
