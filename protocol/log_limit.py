"""A log line a retrying peer would repeat, written at most once per interval per key.

`LogLimit(interval_ms, now_ms).allow(key)` is True the first time a key is seen and then once
`interval_ms` has passed since it last was; time is injected (a monotonic clock in
milliseconds). At most `max_keys` keys are remembered, the least recently allowed forgotten
first, so a stream of new peers cannot grow it without bound. The Kafka door's line for an
unserved API and the group coordinator's line for a member of the wrong kind both use it.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable


class LogLimit:
    def __init__(self, interval_ms: int, now_ms: Callable[[], int], max_keys: int = 1024) -> None:
        self.interval_ms = interval_ms
        self._now_ms = now_ms
        self._max_keys = max_keys
        self._last: OrderedDict[Hashable, int] = OrderedDict()

    def allow(self, key: Hashable) -> bool:
        now = self._now_ms()
        last = self._last.get(key)
        if last is not None and now - last < self.interval_ms:
            return False
        self._last[key] = now
        self._last.move_to_end(key)
        while len(self._last) > self._max_keys:
            self._last.popitem(last=False)
        return True
