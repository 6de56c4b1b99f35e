"""Driver-side questions to the cluster: which partitions a query reads, and their offsets.

`OffsetLookup` wraps one synchronous `client.Admin` (its own event loop thread), opened lazily
and closed by `close()`. Topics come from one Metadata request; offsets from ListOffsets (-2
earliest = the log start, -1 latest = the high watermark, or the last stable offset with
`kafka.isolation.level` read_committed, or a timestamp). Retriable errors
(a leader moving, a broker restarting) are retried with a backoff for up to `timeout_ms`.
Nothing here runs on executors: the answers travel to tasks inside their input partitions.

`native_options(opts)`: options whose addresses came from `kafka.bootstrap.servers` (Spark's
Kafka option, which users give the Kafka listener's addresses) get the native ones, once, on
the driver, before anything is planned: each address is asked, in Kafka's protocol, whether
it is a Kafka listener (transport/kafka_probe.py: ApiVersions, then the broker's own
DescribeConfigs), and one that is is replaced by the host:port its broker's PLAINTEXT native
listener advertises; any other address (already native, or not answering) is kept. Tasks
and the driver's clients then speak the native protocol, as with `bootstrap`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
import time
from collections.abc import Callable, Iterable, Mapping
from typing import TypeVar

from client import Admin, TopicPartition
from client.read_committed import READ_UNCOMMITTED
from protocol.errors import OdradekError, UsageError
from spark_connector.fetch import first_offset_at_or_after, worker_state
from spark_connector.options import EARLIEST, LATEST, ReadOptions, WriteOptions
from spark_connector.ranges import TP
from transport.kafka_probe import KafkaListener, probe

T = TypeVar("T")
Opts = TypeVar("Opts", ReadOptions, WriteOptions)
RETRY_BACKOFF_S = 0.2


class OffsetLookup:
    def __init__(
        self, bootstrap: str, timeout_ms: int = 60_000, isolation_level: str = READ_UNCOMMITTED
    ) -> None:
        self.bootstrap = bootstrap
        self.timeout_ms = timeout_ms
        self.isolation_level = isolation_level  # read_committed: latest is the LSO
        self._admin: Admin | None = None

    def _client(self) -> Admin:
        if self._admin is None:
            self._admin = Admin(self.bootstrap, request_timeout_ms=min(self.timeout_ms, 30_000))
        return self._admin

    def __getstate__(self) -> dict[str, object]:
        """Readers holding a lookup get pickled to tasks: the open client stays behind."""
        return {"bootstrap": self.bootstrap, "timeout_ms": self.timeout_ms,
                "isolation_level": self.isolation_level, "_admin": None}  # fmt: skip

    def close(self) -> None:
        if self._admin is not None:
            self._admin.close()
            self._admin = None

    def _retry(self, what: str, call: Callable[[Admin], T]) -> T:
        deadline = time.monotonic() + self.timeout_ms / 1000
        while True:
            try:
                return call(self._client())
            except OdradekError as exc:
                if not exc.retriable or time.monotonic() > deadline:
                    raise type(exc)(f"{what} failed: {exc}") from None
            time.sleep(RETRY_BACKOFF_S)

    def partitions(self, opts: ReadOptions) -> list[TP]:
        """Every topic-partition the subscription names that exists now, sorted."""
        if opts.assign is not None:
            return sorted((t, p) for t, ps in opts.assign.items() for p in ps)
        described = self._retry("describing topics", lambda a: a.describe_topics(None))
        if opts.subscribe is not None:
            wanted: Callable[[str], bool] = set(opts.subscribe).__contains__
        else:
            assert opts.subscribe_pattern is not None
            regex = re.compile(opts.subscribe_pattern)
            wanted = lambda name: regex.fullmatch(name) is not None  # noqa: E731
        return sorted(
            (t.name, p.partition)
            for t in described
            if wanted(t.name) and not t.is_internal and t.error_code == 0
            for p in t.partitions
        )

    def list_offsets(self, query: Mapping[TP, int]) -> dict[TP, int]:
        """{tp: -2 | -1 | timestamp ms} -> {tp: offset} (-1 for a timestamp past the end)."""
        if not query:
            return {}
        q = {TopicPartition(*tp): ts for tp, ts in query.items()}
        level = self.isolation_level
        answer = self._retry("listing offsets", lambda a: a.list_offsets(q, level))
        return {(tp.topic, tp.partition): ot.offset for tp, ot in answer.items()}

    def earliest(self, tps: Iterable[TP]) -> dict[TP, int]:
        return self.list_offsets(dict.fromkeys(tps, EARLIEST))

    def latest(self, tps: Iterable[TP]) -> dict[TP, int]:
        return self.list_offsets(dict.fromkeys(tps, LATEST))

    def for_timestamps(
        self, query: Mapping[TP, int], past_end: str, latest: Mapping[TP, int]
    ) -> dict[TP, int]:
        """First offset at or after each timestamp. With no such record, `past_end` says:
        "latest" (the high watermark) or "error" (UsageError naming the partition)."""
        found = self.list_offsets(query)
        out = {}
        for tp, offset in found.items():
            if offset >= 0:
                out[tp] = first_offset_at_or_after(self.bootstrap, *tp, offset, query[tp])
            elif past_end == "latest":
                out[tp] = latest[tp]
            else:
                raise UsageError(
                    f"no record in {tp[0]}/{tp[1]} has a timestamp at or after {query[tp]} ms"
                    " (set startingOffsetsByTimestampStrategy=latest to start at the end)"
                )
        return out


def native_options(opts: Opts) -> Opts:
    """`opts` with native addresses (the module's docstring); unchanged unless they came from
    `kafka.bootstrap.servers`."""
    if not opts.kafka_bootstrap:
        return opts
    return dataclasses.replace(opts, bootstrap=native_bootstrap(opts.bootstrap),
                               kafka_bootstrap=False)  # fmt: skip


def native_bootstrap(servers: str) -> str:
    """Each Kafka listener among `servers` swapped for its broker's native listener; UsageError
    when a Kafka listener's broker names none this connector can use (it reads plaintext)."""
    addresses = [a.strip() for a in servers.split(",") if a.strip()]

    async def ask_all() -> list[KafkaListener | None]:
        return await asyncio.gather(*(_probe(a) for a in addresses))

    out = []
    for address, listener in zip(addresses, worker_state().run(ask_all()), strict=True):
        if listener is None:
            out.append(address)  # not a Kafka listener: native already (or down: said later)
        elif listener.native_plaintext is None:
            said = f" (its native listeners: {listener.native})" if listener.native else ""
            raise UsageError(f"kafka.bootstrap.servers: {address} is a Kafka listener whose "
                             f"broker names no PLAINTEXT native listener{said}; give the native "
                             "address in option 'bootstrap'")  # fmt: skip
        else:
            out.append(listener.native_plaintext)
    return ",".join(dict.fromkeys(out))


async def _probe(address: str) -> KafkaListener | None:
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise UsageError(f"kafka.bootstrap.servers: {address!r} is not host:port")
    return await probe(host.strip("[]"), int(port))
