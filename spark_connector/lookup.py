"""Driver-side questions to the cluster: which partitions a query reads, and their offsets.

`OffsetLookup` wraps one synchronous `client.Admin` (its own event loop thread), opened lazily
and closed by `close()`. Topics come from one Metadata request; offsets from ListOffsets (-2
earliest = the log start, -1 latest = the high watermark, or the last stable offset with
`kafka.isolation.level` read_committed, or a timestamp). Retriable errors
(a leader moving, a broker restarting) are retried with a backoff for up to `timeout_ms`.
Nothing here runs on executors: the answers travel to tasks inside their input partitions.
`registry_urls()` finds the schema registry the brokers serve (for `valueFormat=avro`).

`native_options(opts)`: options whose addresses came from `kafka.bootstrap.servers` (Spark's
Kafka option, which users give the Kafka listener's addresses) get the native ones, once, on
the driver, before anything is planned: each address is asked, in Kafka's protocol, whether
it is a Kafka listener (transport/kafka_probe.py: ApiVersions, then the broker's own
DescribeConfigs; with the kafka.* security options, over TLS and after logging in as they
say), and one that is is replaced by the host:port its broker's native listener of the same
security protocol advertises (PLAINTEXT without those options); any other address (already
native, or not answering) is kept. A refused login fails the query at once, saying so. Tasks
and the driver's clients then speak the native protocol, as with `bootstrap`, with the same
security settings.
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
from protocol.api.admin import RESOURCE_BROKER
from protocol.errors import OdradekError, UsageError
from spark_connector.fetch import first_offset_at_or_after, worker_state
from spark_connector.options import EARLIEST, LATEST, ReadOptions, WriteOptions
from spark_connector.ranges import TP
from spark_connector.security import Props, client_options, security_config
from transport.kafka_probe import KafkaListener, probe
from transport.sasl import AUTHENTICATION_ERRORS
from transport.security import SecurityConfig

T = TypeVar("T")
Opts = TypeVar("Opts", ReadOptions, WriteOptions)
RETRY_BACKOFF_S = 0.2


class OffsetLookup:
    def __init__(
        self,
        bootstrap: str,
        timeout_ms: int = 60_000,
        isolation_level: str = READ_UNCOMMITTED,
        security: Props = (),
        retries: int | None = None,
        retry_interval_ms: int = int(RETRY_BACKOFF_S * 1000),
    ) -> None:
        self.bootstrap = bootstrap
        self.timeout_ms = timeout_ms
        self.isolation_level = isolation_level  # read_committed: latest is the LSO
        self.security = security
        self.retries = retries  # fetchOffset.numRetries (None: retry until timeout_ms)
        self.retry_interval_ms = retry_interval_ms  # fetchOffset.retryIntervalMs
        self._admin: Admin | None = None

    @classmethod
    def of(cls, opts: ReadOptions) -> OffsetLookup:
        return cls(opts.bootstrap, isolation_level=opts.isolation_level, security=opts.security,
                   retries=opts.fetch_offset_retries,
                   retry_interval_ms=opts.fetch_offset_retry_interval_ms)  # fmt: skip

    def _client(self) -> Admin:
        if self._admin is None:
            self._admin = Admin(self.bootstrap, request_timeout_ms=min(self.timeout_ms, 30_000),
                                **client_options(self.security))  # fmt: skip
        return self._admin

    def __getstate__(self) -> dict[str, object]:
        """Readers holding a lookup get pickled to tasks: the open client stays behind."""
        return {**self.__dict__, "_admin": None}

    def close(self) -> None:
        if self._admin is not None:
            self._admin.close()
            self._admin = None

    def _retry(self, what: str, call: Callable[[Admin], T]) -> T:
        deadline = time.monotonic() + self.timeout_ms / 1000
        attempts = 0
        while True:
            try:
                return call(self._client())
            except OdradekError as exc:
                attempts += 1
                out_of_tries = self.retries is not None and attempts > self.retries
                if not exc.retriable or time.monotonic() > deadline or out_of_tries:
                    raise type(exc)(f"{what} failed: {exc}") from None
            time.sleep(self.retry_interval_ms / 1000)

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

    def registry_urls(self) -> tuple[str, ...]:
        """The schema registry URL of every broker that serves one: `http(s)://` its advertised
        host and its `schema.registry.port` (`schema.registry.ssl`: https), from each broker's
        own DescribeConfigs, as `odradek cluster status` lists them; () when none does."""
        brokers = self._retry("describing the cluster", lambda a: a.describe_cluster()).brokers
        urls = []
        for node_id, broker in sorted(brokers.items()):
            configs = self._broker_configs(node_id)
            port = configs.get("schema.registry.port") or "0"
            if port.isdigit() and int(port) > 0:
                scheme = "https" if configs.get("schema.registry.ssl") == "true" else "http"
                urls.append(f"{scheme}://{broker.host}:{port}")
        return tuple(urls)

    def _broker_configs(self, node_id: int) -> dict[str, str | None]:
        name = str(node_id)
        entries = self._retry(
            "describing a broker's configs",
            lambda a: a.describe_config_entries(RESOURCE_BROKER, name),
        )
        return {e.name: e.value for e in entries}

    def list_offsets(self, query: Mapping[TP, int]) -> dict[TP, int]:
        """{tp: -2 | -1 | timestamp ms} -> {tp: offset} (-1 for a timestamp past the end)."""
        if not query:
            return {}
        q = {TopicPartition(*tp): ts for tp, ts in query.items()}
        level = self.isolation_level
        answer = self._retry("listing offsets", lambda a: a.list_offsets(q, level))
        return {(tp.topic, tp.partition): ot.offset for tp, ot in answer.items()}

    def commit_group(self, group_id: str, offsets: Mapping[TP, int]) -> None:
        """Commit `offsets` to `group_id` from outside the group (Kafka's
        alterConsumerGroupOffsets): a group with members refuses it (NonEmptyGroupError)."""
        wanted = {TopicPartition(*tp): o for tp, o in offsets.items()}
        self._retry(f"committing offsets to group {group_id!r}",
                    lambda a: a.alter_consumer_group_offsets(group_id, wanted))  # fmt: skip

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
                out[tp] = first_offset_at_or_after(
                    self.bootstrap, *tp, offset, query[tp], security=self.security
                )
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
    bootstrap = native_bootstrap(opts.bootstrap, opts.security)
    return dataclasses.replace(opts, bootstrap=bootstrap, kafka_bootstrap=False)


def native_bootstrap(servers: str, security: Props = ()) -> str:
    """Each Kafka listener among `servers` swapped for its broker's native listener of the same
    security protocol (the kafka.* options': asked with them, logging in as they say);
    UsageError when a Kafka listener's broker names no such native listener."""
    addresses = [a.strip() for a in servers.split(",") if a.strip()]
    config = security_config(security)

    async def ask_all() -> list[KafkaListener | None]:
        return await asyncio.gather(*(_probe(a, config) for a in addresses))

    out = []
    for address, listener in zip(addresses, worker_state().run(ask_all()), strict=True):
        if listener is None:
            out.append(address)  # not a Kafka listener: native already (or down: said later)
        elif listener.native_same is None:
            said = f" (its native listeners: {listener.native})" if listener.native else ""
            raise UsageError(f"kafka.bootstrap.servers: {address} is a Kafka listener whose "
                             f"broker names no {config.security_protocol} native listener"
                             f"{said}; give the native address in option 'bootstrap'")  # fmt: skip
        else:
            out.append(listener.native_same)
    return ",".join(dict.fromkeys(out))


async def _probe(address: str, security: SecurityConfig) -> KafkaListener | None:
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise UsageError(f"kafka.bootstrap.servers: {address!r} is not host:port")
    try:
        return await probe(host.strip("[]"), int(port), security)
    except AUTHENTICATION_ERRORS as exc:
        raise type(exc)(
            f"kafka.bootstrap.servers: {address} refused the login: {exc.message}"
        ) from None
