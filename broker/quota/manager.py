"""Client quota managers, as Kafka's ClientQuotaManager / ClientRequestQuotaManager decide.

`Quotas` holds one `ClientQuotaManager` per quota type: `produce` (producer_byte_rate, bytes of
produce requests), `fetch` (consumer_byte_rate, bytes of consumer fetch responses) and `request`
(request_percentage: handler time as a percentage of one thread, per second). Each keeps:
- `overrides`: the entities (protocol/quota.py) with its key set, fed by the ZooKeeper follower
  (coordinator/cluster/quotas.py) through `Quotas.configure`;
- one sensor per metric-tag pair (user, client-id) (Kafka's DefaultQuotaCallback.quotaMetricTags:
  the tags of the entity level that applies, so all clients of a user with a user quota share
  one sensor and so one rate); a sensor is a `Rate` plus throttle-time totals for the metrics.
  At most `max_sensors` are kept, least recently used dropped first (Kafka drops them after an
  hour idle; a count is a bound that also caps the metrics' label cardinality).

`record(user, client_id, value, now_ms)` adds `value` to the sensor and returns the throttle time
(0 when within quota, and without recording at all when no quota of this type is set anywhere:
Kafka's `quotasEnabled`). Nothing here does I/O or reads a clock: callers pass `now_ms`.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field

from broker.quota.rate import (
    QUOTA_WINDOW_NUM,
    QUOTA_WINDOW_SIZE_MS,
    Avg,
    Rate,
    bounded_throttle_ms,
)
from broker.session import Session
from protocol import quota as q
from protocol.quota import DEFAULT, QuotaEntity

MAX_SENSORS = 1000  # (user, client-id) pairs tracked per quota type
NANOS_TO_PERCENTAGE_PER_SECOND = 100.0 / 1e9  # Kafka's ClientRequestQuotaManager

CLIENT_ID_QUOTAS = 1  # Kafka's QuotaTypes bits
USER_QUOTAS = 2
USER_CLIENT_ID_QUOTAS = 4

Tags = tuple[str, str]  # (user or "", client id or "")


@dataclass(slots=True)
class Sensor:
    rate: Rate  # what the quota bounds (Kafka's byte-rate, request-time)
    throttle_time: Avg  # the throttle times given, in ms (Kafka's throttle-time)
    throttle_ms_total: int = 0  # the same as counters, for Prometheus' rate()
    throttle_count: int = 0
    value_total: float = 0.0  # everything recorded (bytes, or request %), a counter for metrics


@dataclass(slots=True)
class ClientQuotaManager:
    key: str  # the quota key: producer_byte_rate, consumer_byte_rate, request_percentage
    samples: int = QUOTA_WINDOW_NUM
    window_ms: int = QUOTA_WINDOW_SIZE_MS
    max_throttle_ms: int | None = None  # request quotas cap at one window; byte rates do not
    max_sensors: int = MAX_SENSORS
    overrides: dict[QuotaEntity, float] = field(default_factory=dict)
    sensors: OrderedDict[Tags, Sensor] = field(default_factory=OrderedDict)
    _types: int = 0

    def update(self, entity: QuotaEntity, value: float | None) -> None:
        if value is None:
            self.overrides.pop(entity, None)
        else:
            self.overrides[entity] = value
        types = 0
        for e in self.overrides:
            if e.user is None:
                types |= CLIENT_ID_QUOTAS
            elif e.client_id is None:
                types |= USER_QUOTAS
            else:
                types |= USER_CLIENT_ID_QUOTAS
        self._types = types

    @property
    def enabled(self) -> bool:
        return self._types != 0

    def metric_tags(self, user: str, client_id: str) -> Tags:
        """The sensor's tags for a connection (Kafka's DefaultQuotaCallback.quotaMetricTags)."""
        types = self._types
        if types in (0, CLIENT_ID_QUOTAS):
            return "", client_id
        if types == USER_QUOTAS:
            return user, ""
        if types == USER_CLIENT_ID_QUOTAS:
            return user, client_id
        o = self.overrides
        for entity, tags in (
            (QuotaEntity(user, client_id), (user, client_id)),
            (QuotaEntity(user, DEFAULT), (user, client_id)),
            (QuotaEntity(user, None), (user, "")),
            (QuotaEntity(DEFAULT, client_id), (user, client_id)),
            (QuotaEntity(DEFAULT, DEFAULT), (user, client_id)),
            (QuotaEntity(DEFAULT, None), (user, "")),
        ):
            if entity in o:
                return tags
        return "", client_id

    def quota_limit(self, tags: Tags) -> float | None:
        """The bound for a sensor's tags (DefaultQuotaCallback.quotaLimit); None: unlimited."""
        user, client_id = tags
        o = self.overrides
        if user and client_id:
            order = [QuotaEntity(user, client_id), QuotaEntity(user, DEFAULT),
                     QuotaEntity(DEFAULT, client_id), QuotaEntity(DEFAULT, DEFAULT)]  # fmt: skip
        elif user:
            order = [QuotaEntity(user, None), QuotaEntity(DEFAULT, None)]
        elif client_id:
            order = [QuotaEntity(None, client_id), QuotaEntity(None, DEFAULT)]
        else:
            return None
        for entity in order:
            if entity in o:
                return o[entity]
        return None

    def quota(self, user: str, client_id: str) -> float | None:
        """The quota that applies to a connection of `user` and `client_id`."""
        return self.quota_limit(self.metric_tags(user, client_id))

    def sensor(self, tags: Tags) -> Sensor:
        sensor = self.sensors.get(tags)
        if sensor is None:
            sensor = self.sensors[tags] = Sensor(
                Rate(self.samples, self.window_ms), Avg(self.samples, self.window_ms)
            )
            while len(self.sensors) > self.max_sensors:
                self.sensors.popitem(last=False)
        else:
            self.sensors.move_to_end(tags)
        return sensor

    def record(self, user: str, client_id: str, value: float, now_ms: int) -> int:
        """Record `value`; the throttle time in ms its sensor's quota now asks for (0: none)."""
        if not self._types:
            return 0
        tags = self.metric_tags(user, client_id)
        sensor = self.sensor(tags)
        sensor.rate.record(value, now_ms)
        sensor.value_total += value
        bound = self.quota_limit(tags)
        if bound is None:
            return 0
        observed = sensor.rate.measure(now_ms)
        if observed <= bound:
            return 0
        window = sensor.rate.window_size_ms(now_ms)
        cap = self.max_throttle_ms if self.max_throttle_ms is not None else 2**31 - 1
        return max(0, bounded_throttle_ms(observed, bound, window, cap))

    def unrecord(self, user: str, client_id: str, value: float, now_ms: int) -> None:
        """Take back a recorded value (a fetch answered empty because it was throttled)."""
        if self._types:
            tags = self.metric_tags(user, client_id)
            sensor = self.sensor(tags)
            sensor.rate.record(-value, now_ms)
            sensor.value_total -= value

    def max_value_in_window(self, user: str, client_id: str) -> float | None:
        """What may be recorded at once without certain throttling (getMaxValueInQuotaWindow)."""
        bound = self.quota(user, client_id) if self._types else None
        return None if bound is None else bound * (self.samples - 1) * self.window_ms / 1000

    def throttled(self, user: str, client_id: str, ms: int, now_ms: int) -> None:
        """Count a throttle given (the throttle-time metric)."""
        if ms > 0 and self._types:
            sensor = self.sensor(self.metric_tags(user, client_id))
            sensor.throttle_time.record(ms, now_ms)
            sensor.throttle_ms_total += ms
            sensor.throttle_count += 1


class Quotas:
    """The broker's three client quota managers (see the module docstring)."""

    def __init__(
        self, samples: int = QUOTA_WINDOW_NUM, window_ms: int = QUOTA_WINDOW_SIZE_MS,
        max_sensors: int = MAX_SENSORS,
    ) -> None:  # fmt: skip
        def manager(key: str, cap: int | None = None) -> ClientQuotaManager:
            return ClientQuotaManager(key, samples, window_ms, cap, max_sensors)

        self.produce = manager(q.PRODUCER_BYTE_RATE)
        self.fetch = manager(q.CONSUMER_BYTE_RATE)
        self.request = manager(q.REQUEST_PERCENTAGE, cap=window_ms)
        self.by_key = {m.key: m for m in (self.produce, self.fetch, self.request)}
        self.entities: dict[QuotaEntity, dict[str, float]] = {}
        self._mutes: dict[int, int] = {}  # id(session) -> throttle ms to mute its connection

    def configure(self, entity: QuotaEntity, values: Mapping[str, float]) -> None:
        """Replace `entity`'s quotas with `values` (quota key -> value; a key left out is
        removed)."""
        kept = {k: v for k, v in values.items() if k in q.QUOTA_KEYS}
        if kept:
            self.entities[entity] = kept
        else:
            self.entities.pop(entity, None)
        for key, manager in self.by_key.items():
            manager.update(entity, kept.get(key))

    def replace_all(self, configs: Mapping[QuotaEntity, Mapping[str, float]]) -> None:
        """Make the overrides exactly `configs` (a full re-read after a lost session)."""
        for entity in list(self.entities):
            if entity not in configs:
                self.configure(entity, {})
        for entity, values in configs.items():
            self.configure(entity, values)

    def record_request_time(self, user: str, client_id: str, nanos: int, now_ms: int) -> int:
        """ClientRequestQuotaManager: handler time as % of a thread; the throttle time."""
        return self.request.record(user, client_id, nanos * NANOS_TO_PERCENTAGE_PER_SECOND, now_ms)

    # ----- per connection: what handlers and the server call ------------------------------------

    def produced(self, session: Session, nbytes: int, now_ms: int) -> int:
        """A produce request's bytes from `session`: its throttle time (the connection will be
        muted for it after the answer, `take_mute`)."""
        return self._throttle(self.produce, session, nbytes, now_ms)

    def fetched(self, session: Session, nbytes: int, now_ms: int) -> int:
        """A consumer fetch answer's bytes to `session` (never a follower's): its throttle."""
        return self._throttle(self.fetch, session, nbytes, now_ms)

    def handled(self, session: Session, nanos: int, now_ms: int) -> int:
        """The time a request of `session` held the event loop: its request-quota throttle."""
        user, client_id = session_identity(session)
        ms = self.record_request_time(user, client_id, nanos, now_ms)
        if ms > 0:
            self.request.throttled(user, client_id, ms, now_ms)
        return ms

    def _throttle(
        self, manager: ClientQuotaManager, session: Session, value: float, now_ms: int
    ) -> int:
        if not manager.enabled:
            return 0
        user, client_id = session_identity(session)
        ms = manager.record(user, client_id, value, now_ms)
        if ms > 0:
            manager.throttled(user, client_id, ms, now_ms)
            key = id(session)
            self._mutes[key] = max(ms, self._mutes.get(key, 0))
        return ms

    def take_mute(self, session: Session) -> int:
        """The throttle a handler asked for on `session`'s connection since the last take (the
        server takes it as the request finishes, so at most one entry per live request)."""
        return self._mutes.pop(id(session), 0) if self._mutes else 0


def session_identity(session: Session) -> tuple[str, str]:
    """(user, client id) a quota is looked up by: the principal's name (User:ANONYMOUS is user
    "ANONYMOUS", as in Kafka) and the client id ("" when none)."""
    return session.principal.name, session.client_id or ""
