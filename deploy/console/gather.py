"""One snapshot of the cluster for the console, through the client library and the admin APIs.

`Gatherer.refresh()` asks, each part bounded by `timeout_ms` and the parts at once:

    metadata   AsyncAdmin.describe_cluster: brokers, controller, leaders, replicas, ISR
    offsets    ListOffsets to each partition's leader: log start (earliest), high watermark
               (latest, as a consumer sees it) and log end (latest, as the leader's own replica
               reads it: replica_id >= 0 gets the log end offset instead of the HW)
    sizes      DescribeLogDirs on every live broker's Kafka listener (bytes per replica), every
               `sizes_every` refreshes
    groups     client/group/admin.py's GroupAdmin: ListGroups, DescribeGroups, OffsetFetch and
               the end offsets: state, generation, members, committed offset and lag
    configs    DescribeConfigs of every topic's cleanup.policy (delete, compact or
               compact,delete), every `sizes_every` refreshes
    dirty      each compacted partition's dirty ratio, from the Prometheus metrics of the broker
               that leads it (`odradek_log_cleaner_dirty_ratio`, parsed by
               model.leader_readings, which also reads each share partition's in-flight and
               archived counts there for the groups view),
               every `sizes_every` refreshes. Only brokers whose metrics port is known are asked:
               a local cluster's state file has it (--dir); the Metadata answer does not, so
               against any other cluster no ratio is shown rather than a port guessed
    loop_lag   each broker's event-loop lag (p50, p99, max) between this reading of its metrics
               and the last (deploy/loop_lag.py's LagWatch), every `sizes_every` refreshes;
               the live brokers whose metrics port is known, as for `dirty`
    processes  with a local cluster (--dir): each broker's process state from its state file
               (alive, paused, dead), which the Metadata answer cannot tell
    chaos      the tail of the chaos events file (deploy/console/timeline.py)
    transactions  AsyncAdmin.list_transactions (every broker) of the open states, then
               describe_transactions at each id's coordinator: producer, state, start, partitions
    hanging    AsyncAdmin.find_hanging_transactions over every partition (DescribeProducers at
               each leader, judged against the coordinators), every `sizes_every` refreshes;
               `hanging_max_age_ms` is its threshold (None: Kafka's, 20 minutes)

A part that fails keeps its last good data and is reported stale with its age (model.py); a
partition whose leader did not answer keeps its last offsets. A part the broker refuses (an
authorization error: the reader's principal lacks an ACL) is reported as refused, with the
broker's error, not as stale: sizes need Describe on the Cluster (DescribeLogDirs), a topic's
policy DescribeConfigs on it, its hanging transactions Read on it (DescribeProducers); configs
and hanging ask topic by topic once a whole-cluster request was refused, and keep the rest.

A `Viewer` (deploy/console/views.py: a logged-in user on a secured cluster, whose own SASL
session this Gatherer's clients use) also narrows what the broker's answers leave in: a group's
members' assignments and lag rows list only topics the user's Metadata answer lists (Kafka's
DescribeGroups hands out assignments as they are), and the chaos timeline (a local file, no
broker resource) is only for users allowed Alter on the Cluster, the controls' right.

The metadata is stale while no controller is up: a controller id the brokers do not list, or
(local cluster) whose process is not alive. Nothing reads segment files.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp

from client.admin import AsyncAdmin
from client.cluster import Cluster, ClusterMetadata
from client.group.admin import owner, state_name
from client.group.share_admin import SHARE, ShareGroupAdmin
from client.txn_admin import HangingTxn, TxnDescription
from client.types import TopicPartition
from deploy.console import model, timeline
from deploy.console.refusals import REFUSALS, Refused, Viewer, each_topic, refused_text
from deploy.loop_lag import LagWatch
from protocol.api.list_offsets import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsResponse,
    ListOffsetsTopic,
)
from protocol.errors import OdradekError, for_code
from transport.security import PLAINTEXT_CONFIG, SecurityConfig

GROUPS_MAX = 50  # groups described per refresh
TXNS_MAX = 200  # transactions described per refresh
UNCLEAN = "unclean.leader.election.enable"
POLICY = "cleanup.policy"
DESCRIBE_LOG_DIRS = 35
DESCRIBE_LOG_DIRS_VERSION = 4
METRICS_BYTES_MAX = 16 * 1024 * 1024  # a /metrics answer larger than this is refused

Offsets = dict[tuple[str, int], tuple[int, int, int]]  # (log start, high watermark, log end)
Scrape = Callable[[str, int, float], Awaitable[str]]  # (host, metrics port, timeout) -> text


class PartlyFailed(Exception):
    """Some brokers did not answer (what the others said is kept)."""


def _why(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return "no answer in time"
    if isinstance(exc, OdradekError | PartlyFailed):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"


async def describe_log_dirs(
    host: str, port: int, timeout_s: float, security: SecurityConfig = PLAINTEXT_CONFIG
) -> dict[tuple[str, int], int]:
    """{(topic, partition): bytes} of one broker's replicas, from its Kafka listener (logged in
    as the console's --command-config says, on a secured cluster: kafka_door.py)."""
    from deploy.console.kafka_door import kafka_request

    resp = await kafka_request(host, port, DESCRIBE_LOG_DIRS, DESCRIBE_LOG_DIRS_VERSION,
                               timeout_s, security, topics=None)  # fmt: skip
    if resp.error_code:  # CLUSTER_AUTHORIZATION_FAILED: the principal may not Describe the Cluster
        raise for_code(resp.error_code)()
    return {(t.name, int(p.partition_index)): int(p.partition_size)
            for r in resp.results for t in r.topics for p in t.partitions
            if not p.is_future_key}  # a replica being moved: its current log's size  # fmt: skip


async def scrape_metrics(host: str, port: int, timeout_s: float) -> str:
    """One broker's Prometheus metrics text (http://host:port/metrics), at most
    METRICS_BYTES_MAX bytes."""
    where = f"[{host}]" if ":" in host else host
    async with (
        aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout_s)) as session,
        session.get(f"http://{where}:{port}/metrics") as resp,
    ):
        if resp.status != 200:
            raise OdradekError(f"/metrics answered HTTP {resp.status}")
        body = bytearray()
        async for chunk in resp.content.iter_chunked(64 * 1024):
            body += chunk
            if len(body) > METRICS_BYTES_MAX:
                raise OdradekError(f"/metrics answer over {METRICS_BYTES_MAX} bytes")
    return body.decode("utf-8")


class Gatherer:
    def __init__(
        self,
        bootstrap: str,
        cluster_dir: Path | None = None,
        *,
        timeout_ms: int = 2000,
        sizes_every: int = 5,
        clock: Callable[[], float] = time.time,
        scrape: Scrape = scrape_metrics,
        hanging_max_age_ms: int | None = None,
        security: dict[str, Any] | None = None,
        viewer: Viewer | None = None,
    ) -> None:
        self.bootstrap = bootstrap
        self.viewer = viewer
        self.security = dict(security or {})  # the client's TLS/SASL settings (--command-config)
        self.cluster_dir = cluster_dir
        self.timeout_s = timeout_ms / 1000
        self.sizes_every = sizes_every
        self.clock = clock
        self.scrape = scrape
        self.hanging_max_age_ms = hanging_max_age_ms
        self.admin = AsyncAdmin(
            bootstrap, client_id="odradek-console", request_timeout_ms=timeout_ms, **self.security
        )
        self.conns = Cluster(
            bootstrap, client_id="odradek-console", request_timeout_ms=timeout_ms,
            security=SecurityConfig.from_options(self.security),
        )  # fmt: skip
        self.groups_admin = ShareGroupAdmin(
            bootstrap, request_timeout_ms=timeout_ms, **self.security
        )
        names = ("metadata", "offsets", "sizes", "groups", "processes", "chaos", "configs",
                 "dirty", "transactions", "hanging", "loop_lag")  # fmt: skip
        self.sections = {n: model.Section(n) for n in names}
        self.lag: dict[str, model.LagHistory] = {}
        self.known_brokers: dict[int, dict[str, Any]] = {}  # every broker ever seen, by id
        self.offsets: Offsets = {}
        self.sizes: dict[int, dict[tuple[str, int], int]] = {}
        self.metrics_at: dict[int, tuple[str, int]] = {}  # broker -> (host, metrics port)
        self.dirty: dict[tuple[str, int], float] = {}  # dirty ratios, from the leaders' metrics
        self.share_counts: model.ShareCounts = {}  # share partitions' counts, likewise
        self.lags = LagWatch()  # each broker's loop lag, from its metrics
        self.controller_down_since_ms: int | None = None
        self.last_controller = -1
        self.unclean: dict[str, bool | None] = {}  # of topics with offline partitions

    def now_ms(self) -> int:
        return int(self.clock() * 1000)

    async def close(self) -> None:
        await self.admin.close()
        await self.conns.close()
        await self.groups_admin.cluster.close()

    async def _bounded(self, name: str, coro: Any) -> None:
        """Run one part's refresh; a failure or timeout leaves its last data, marked stale."""
        section = self.sections[name]
        try:
            data = await asyncio.wait_for(coro, self.timeout_s * 1.5)
        except Refused as refused:
            section.ok(refused.data, self.now_ms())
            section.refused = str(refused)
        except REFUSALS as exc:
            section.refused = str(exc)
            section.error = None
        except (OdradekError, PartlyFailed, OSError, TimeoutError, ValueError) as exc:
            section.failed(_why(exc))
        else:
            section.ok(data, self.now_ms())

    def _parts(self) -> dict[str, tuple[Callable[[], Awaitable[Any]], float]]:
        """Each part's refresh and how often it runs (in units of the refresh interval)."""
        return {
            "metadata": (self._metadata, 1),
            "processes": (lambda: asyncio.to_thread(self._processes), 1),
            "chaos": (lambda: asyncio.to_thread(self._chaos), 2),
            "offsets": (self._offsets, 1),
            "sizes": (self._sizes, self.sizes_every),
            "groups": (self._groups, 1),
            "configs": (self._configs, self.sizes_every),
            "dirty": (self._dirty, self.sizes_every),
            "transactions": (self._transactions, 1),
            "hanging": (self._hanging, self.sizes_every),
            "loop_lag": (self._loop_lag, self.sizes_every),
        }

    async def refresh(self) -> dict[str, Any]:
        """Refresh every part once (the metadata first) and return the snapshot."""
        parts = self._parts()
        await asyncio.gather(*(self._bounded(n, parts[n][0]()) for n in ("metadata", "processes")))
        await asyncio.gather(*(self._bounded(n, f()) for n, (f, _) in parts.items()
                               if n not in ("metadata", "processes")))  # fmt: skip
        return self.snapshot()

    async def run(self, interval_s: float) -> None:
        """Refresh every part forever, each in a loop of its own, so that a slow part (a
        request waiting out its timeout at a dead broker) never holds up the others."""
        await asyncio.gather(
            *(self._loop(name, f, interval_s * every) for name, (f, every) in self._parts().items())
        )

    async def _loop(self, name: str, make: Callable[[], Awaitable[Any]], every_s: float) -> None:
        loop = asyncio.get_running_loop()
        while True:
            began = loop.time()
            await self._bounded(name, make())
            await asyncio.sleep(max(0.05, every_s - (loop.time() - began)))

    # ----- the parts -------------------------------------------------------------------------

    async def _metadata(self) -> ClusterMetadata:
        meta = await self.admin.describe_cluster()
        offline = sorted({t for t, ps in meta.partitions.items() for p in ps
                          if p.leader < 0 or p.leader not in meta.brokers})  # fmt: skip
        self.unclean = await self.unclean_configs(offline) if offline else {}
        return meta

    def _processes(self) -> dict[int, str] | None:
        if self.cluster_dir is None:
            return None
        from deploy.cluster import LocalCluster

        cluster = LocalCluster.open(self.cluster_dir)  # afresh: another shell may restart one
        state = cluster.state
        assert state is not None
        for b in state.brokers:
            self.known_brokers.setdefault(b.id, {
                "host": b.host or state.host, "port": b.port,
                "kafka_host": b.host or state.host, "kafka_port": b.kafka_port,
            })  # fmt: skip
        self.metrics_at = {b.id: (b.host or state.host, b.metrics_port)
                           for b in state.brokers if b.metrics_port > 0}  # fmt: skip
        for b in state.brokers:  # reap the brokers this console restarted, once they died
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(b.pid, os.WNOHANG)
        return cluster.broker_states()

    def _chaos(self) -> list[dict[str, Any]]:
        if self.cluster_dir is None or (self.viewer is not None and not self.viewer.cluster_alter):
            return []
        return timeline.read_tail(self.cluster_dir)

    async def _offsets(self) -> Offsets:
        by_leader = self._by_leader()
        if not set(by_leader) <= set(self.conns.metadata.brokers):
            await self.conns.request_update()  # its connections need the brokers' addresses
        answers = await asyncio.gather(
            *(self._leader_offsets(n, tps) for n, tps in by_leader.items()), return_exceptions=True
        )
        failed = []
        for node, answer in zip(by_leader, answers, strict=True):
            if isinstance(answer, BaseException):
                if not isinstance(answer, OdradekError | OSError | TimeoutError):
                    raise answer
                failed.append(f"broker {node}: {_why(answer)}")
            else:
                self.offsets.update(answer)
        if failed:
            raise PartlyFailed("ListOffsets failed at " + "; ".join(failed))
        return self.offsets

    def _by_leader(self) -> dict[int, list[tuple[str, int]]]:
        """{leader: the partitions it leads}, of the partitions whose leader is listed."""
        meta: ClusterMetadata | None = self.sections["metadata"].data
        if meta is None:
            raise PartlyFailed("no metadata yet")
        by_leader: dict[int, list[tuple[str, int]]] = {}
        for topic, parts in meta.partitions.items():
            for p in parts:
                if p.leader >= 0 and p.leader in meta.brokers:
                    by_leader.setdefault(p.leader, []).append((topic, p.partition))
        return by_leader

    async def _leader_offsets(self, node: int, tps: list[tuple[str, int]]) -> Offsets:
        conn = await self.conns.connection(node)

        async def ask(timestamp: int, replica_id: int) -> dict[tuple[str, int], int]:
            topics: dict[str, list[ListOffsetsPartition]] = {}
            for t, p in tps:
                topics.setdefault(t, []).append(ListOffsetsPartition(p, timestamp))
            req = ListOffsetsRequest(
                replica_id, [ListOffsetsTopic(t, ps) for t, ps in topics.items()]
            )
            resp: ListOffsetsResponse = await conn.send(req, self.timeout_s * 1000)
            return {(t.name, p.partition): p.offset for t in resp.topics for p in t.partitions
                    if p.error_code == 0}  # fmt: skip

        start, hw, end = await asyncio.gather(
            ask(EARLIEST_TIMESTAMP, -1), ask(LATEST_TIMESTAMP, -1), ask(LATEST_TIMESTAMP, node)
        )
        return {tp: (start[tp], hw[tp], end[tp]) for tp in start if tp in hw and tp in end}

    async def _sizes(self) -> dict[int, dict[tuple[str, int], int]]:
        meta: ClusterMetadata | None = self.sections["metadata"].data
        if meta is None:
            raise PartlyFailed("no metadata yet")
        brokers = [b for b in meta.brokers.values() if b.kafka_port > 0]
        answers = await asyncio.gather(
            *(describe_log_dirs(b.kafka_host or b.host, b.kafka_port, self.timeout_s,
                                self.conns.security)
              for b in brokers), return_exceptions=True,
        )  # fmt: skip
        failed = []
        for b, answer in zip(brokers, answers, strict=True):
            if isinstance(answer, REFUSALS):  # needs Describe on the Cluster
                raise Refused(f"{answer} (DescribeLogDirs)", self.sizes)
            if isinstance(answer, BaseException):
                if not isinstance(answer, OdradekError | OSError | TimeoutError | ValueError):
                    raise answer
                failed.append(f"broker {b.node_id}: {_why(answer)}")
            else:
                self.sizes[b.node_id] = answer
        if failed:
            raise PartlyFailed("DescribeLogDirs failed at " + "; ".join(failed))
        return self.sizes

    async def _dirty(self) -> dict[tuple[str, int], float]:
        """{(topic, partition): dirty ratio} of the compacted partitions, each from its
        leader's metrics (a broker reports its follower copies too: those are left out), and
        from the same answers each share partition's in-flight and archived counts
        (`share_counts`). A leader that did not answer keeps its partitions' last readings."""
        asked = {n: tps for n, tps in self._by_leader().items() if n in self.metrics_at}
        answers = await asyncio.gather(
            *(self._leader_dirty(*self.metrics_at[n]) for n in asked), return_exceptions=True
        )
        out: dict[tuple[str, int], float] = {}
        shares: model.ShareCounts = {}
        failed = []
        for (node, tps), answer in zip(asked.items(), answers, strict=True):
            led = set(tps)
            if isinstance(answer, BaseException):
                if not isinstance(answer, OdradekError | OSError | TimeoutError | ValueError
                                  | aiohttp.ClientError):  # fmt: skip
                    raise answer
                failed.append(f"broker {node}: {_why(answer)}")
                out.update({tp: self.dirty[tp] for tp in tps if tp in self.dirty})
                shares.update({k: c for k, c in self.share_counts.items() if k[1:] in led})
            else:
                dirty, counts = answer
                out.update({tp: dirty[tp] for tp in tps if tp in dirty})
                shares.update({k: c for k, c in counts.items() if k[1:] in led})
        self.dirty, self.share_counts = out, shares
        if failed:
            raise PartlyFailed("metrics failed at " + "; ".join(failed))
        return out

    async def _leader_dirty(
        self, host: str, port: int
    ) -> tuple[dict[tuple[str, int], float], model.ShareCounts]:
        text = await self.scrape(host, port, self.timeout_s)
        return await asyncio.to_thread(model.leader_readings, text)  # a big text: off the loop

    async def _loop_lag(self) -> dict[int, dict[str, float]]:
        meta: ClusterMetadata | None = self.sections["metadata"].data
        procs: dict[int, str] = self.sections["processes"].data or {}
        up = {
            b: at
            for b, at in self.metrics_at.items()  # a dead or paused one shows "-"
            if (meta is None or b in meta.brokers) and procs.get(b, "alive") == "alive"
        }
        failed = await self.lags.refresh(up, self.scrape, self.timeout_s)
        if failed:
            raise PartlyFailed("metrics failed at " + "; ".join(failed))
        return {b: lag.as_dict() for b, lag in self.lags.intervals.items()}

    async def _groups(self) -> list[dict[str, Any]]:
        admin = self.groups_admin
        every = (await admin.listed_groups())[:GROUPS_MAX]
        listed = [g for g in every if g.group_type != SHARE]
        described = await asyncio.gather(*(admin.lag(g.group_id) for g in listed))
        now = self.now_ms()
        out = []
        shown = self._shown_topics()
        for g in (g for g in every if g.group_type == SHARE):  # KIP-932's own describe
            share = await admin.describe_share_group(g.group_id)
            counts = {k[1:]: c for k, c in self.share_counts.items() if k[0] == g.group_id}
            view = model.share_group_view(share, await admin.share_offsets(g.group_id), shown,
                                          counts)  # fmt: skip
            self.lag.setdefault(g.group_id, model.LagHistory()).add(now, view["lag"])
            out.append({"id": g.group_id, **view,
                        "history": self.lag[g.group_id].as_list()})  # fmt: skip
        for (desc, rows), g in zip(described, listed, strict=True):
            offsets = [
                {"topic": r.topic, "partition": r.partition, "committed": r.current_offset,
                 "end": r.log_end_offset, "lag": r.lag, "owner": r.owner}
                for r in rows if shown(r.topic)
            ]  # fmt: skip
            history = self.lag.setdefault(g.group_id, model.LagHistory())
            total = model.group_total_lag(offsets)
            history.add(now, total)
            kind = "kafka" if desc.protocol_type is not None else "native"
            view = model.group_kind_view(desc)
            epochs = view.pop("members", {})
            members = [
                {"id": m.member_id, "owner": owner(desc, m),
                 "assignment": [f"{tp.topic}-{p}" for tp in m.assignment if shown(tp.topic)
                                for p in tp.partitions],
                 **epochs.get(m.member_id, {})}
                for m in desc.members
            ]  # fmt: skip
            out.append({
                "id": g.group_id, "kind": kind, "state": state_name(desc),
                "generation": desc.generation_id, "assignor": desc.assignment_strategy,
                "members": members, "offsets": offsets, "lag": total,
                "history": history.as_list(), **view,
            })  # fmt: skip
        return out

    def _shown_topics(self) -> Callable[[str], bool]:
        """Whether a topic may be named to the reader: any, for the console's own settings; for
        a Viewer, those its Metadata answer listed (the broker's Describe rule)."""
        meta: ClusterMetadata | None = self.sections["metadata"].data
        if self.viewer is None:
            return lambda topic: True
        listed = set(meta.partitions) if meta is not None else set()
        return listed.__contains__

    async def _transactions(self) -> list[TxnDescription]:
        listed = await self.admin.list_transactions(model.OPEN_TXN_STATES)
        described = await self.admin.describe_transactions(
            [t.transactional_id for t in listed[:TXNS_MAX]]
        )
        return list(described.values())

    async def _hanging(self) -> list[HangingTxn]:
        meta: ClusterMetadata | None = self.sections["metadata"].data
        if meta is None:
            raise PartlyFailed("no metadata yet")

        async def ask(topics: list[str]) -> list[HangingTxn]:
            tps = [TopicPartition(t, p.partition) for t in topics for p in meta.partitions[t]]
            return await self.admin.find_hanging_transactions(
                tps, max_age_ms=self.hanging_max_age_ms, now_ms=self.now_ms
            )

        answers, refused = await each_topic(sorted(meta.partitions), ask)
        found = [h for a in answers for h in a]
        if refused:  # DescribeProducers needs Read on the topic
            raise Refused(refused_text(refused, "DescribeProducers needs Read"), found)
        return found

    async def _configs(self) -> dict[str, str]:
        """{topic: its cleanup.policy} of every topic the metadata lists."""
        meta: ClusterMetadata | None = self.sections["metadata"].data
        topics = sorted(meta.partitions) if meta is not None else []
        if not topics:
            return {}
        answers, refused = await each_topic(
            topics, lambda ts: self.admin.describe_configs(ts, [POLICY])
        )
        out = {t: str(e[POLICY].value) for a in answers for t, e in a.items() if POLICY in e}
        if refused:
            raise Refused(refused_text(refused, "DescribeConfigs"), out)
        return out

    async def unclean_configs(self, topics: list[str]) -> dict[str, bool | None]:
        """unclean.leader.election.enable of topics with offline partitions (for the cause)."""
        try:
            configs = await asyncio.wait_for(
                self.admin.describe_configs(topics, [UNCLEAN]), self.timeout_s
            )
        except (OdradekError, OSError, TimeoutError):
            return {}
        out: dict[str, bool | None] = {}
        for topic, entries in configs.items():
            entry = entries.get(UNCLEAN)
            out[topic] = None if entry is None else str(entry.value).lower() == "true"
        return out

    # ----- the snapshot ----------------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        now = self.now_ms()
        meta: ClusterMetadata | None = self.sections["metadata"].data
        procs: dict[int, str] | None = self.sections["processes"].data
        live = set(meta.brokers) if meta is not None else set()
        if procs is not None:  # a paused or killed broker may still be listed for a while
            live = {b for b in live if procs.get(b, "alive") == "alive"}
        controller = meta.controller_id if meta is not None else -1
        for info in meta.brokers.values() if meta is not None else ():
            self.known_brokers[info.node_id] = {
                "host": info.host, "port": info.port,
                "kafka_host": info.kafka_host or info.host, "kafka_port": info.kafka_port,
            }  # fmt: skip
        if controller in live:
            self.controller_down_since_ms = None
            self.last_controller = controller
        elif self.controller_down_since_ms is None:
            self.controller_down_since_ms = now
        topics = self._topics(meta, live) if meta is not None else []
        return {
            "now_ms": now,
            "local": self.cluster_dir is not None,
            "bootstrap": self.bootstrap,
            "controller": controller if controller in live else None,
            "cluster_id": meta.cluster_id if meta is not None else None,
            "brokers": self._brokers(meta, live, procs, controller, topics),
            "topics": topics,
            "groups": self.sections["groups"].data or [],
            "chaos": self.sections["chaos"].data or [],
            "transactions": model.transactions_view(
                self.sections["transactions"].data or [], self.sections["hanging"].data or [], now
            ),
            "stale": model.stale_sections(
                list(self.sections.values()), now, self.controller_down_since_ms
            ),
            "refused": model.refused_sections(list(self.sections.values())),
            "viewer": None if self.viewer is None else self.viewer.user,
            "lag_window_ms": model.LAG_WINDOW_MS,
        }

    def _topics(self, meta: ClusterMetadata, live: set[int]) -> list[dict[str, Any]]:
        policies: dict[str, str] = self.sections["configs"].data or {}
        out = []
        for topic in sorted(meta.partitions):
            rows = []
            for p in meta.partitions[topic]:
                key = (topic, p.partition)
                status, cause = model.partition_status(
                    f"{topic}-{p.partition}",
                    p.leader,
                    p.replicas,
                    p.isr,
                    live,
                    self.unclean.get(topic),
                )
                start, hw, end = self.offsets.get(key, (None, None, None))
                sizes = [self.sizes[r][key] for r in p.replicas
                         if r in self.sizes and key in self.sizes[r]]  # fmt: skip
                leader_size = self.sizes.get(p.leader, {}).get(key)
                dirty = self.dirty.get(key) if model.is_compacted(policies.get(topic)) else None
                rows.append({
                    "partition": p.partition, "leader": p.leader if p.leader in live else None,
                    "replicas": list(p.replicas), "isr": list(p.isr), "status": status,
                    "cause": cause, "log_start": start, "hw": hw, "log_end": end,
                    "size": leader_size if leader_size is not None else max(sizes, default=None),
                    "dirty_ratio": dirty,
                })  # fmt: skip
            out.append({"name": topic, "internal": topic.startswith("__"), "partitions": rows,
                        "cleanup_policy": policies.get(topic)})  # fmt: skip
        return out

    def _brokers(
        self,
        meta: ClusterMetadata | None,
        live: set[int],
        procs: dict[int, str] | None,
        controller: int,
        topics: list[dict[str, Any]],
    ) -> list[dict[str, Any]]:
        ids = set(self.known_brokers) | set(procs or ())
        out = []
        for b in sorted(ids):
            info = self.known_brokers.get(b, {})
            if procs is not None and b in procs:
                state = procs[b]
            else:
                state = "alive" if b in live else "dead"
            parts = [p for t in topics for p in t["partitions"]]
            endpoints = []
            if info:
                endpoints.append(f"{info['host']}:{info['port']}")
                if info.get("kafka_port", 0) > 0:
                    endpoints.append(f"kafka://{info['kafka_host']}:{info['kafka_port']}")
            out.append({
                "id": b, "state": state, "endpoints": endpoints,
                "controller": b == controller and b in live,
                "partitions": sum(1 for p in parts if b in p["replicas"]),
                "leaders": sum(1 for p in parts if p["leader"] == b),
                "listed": meta is not None and b in meta.brokers,
                "loop_lag": lag.as_dict() if (lag := self.lags.intervals.get(b)) else None,
            })  # fmt: skip
        return out
