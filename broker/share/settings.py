"""A share group's settings on a partition leader (`GroupShareSettings`): the broker's
group.share.* settings in effect, with the group's valid share.* configs over them
(coordinator/group/share_configs.py; every broker follows the group configs)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from broker.config import BrokerConfig
from broker.share.manager import LATEST, GroupShareSettings
from broker.share.share_partition import ShareLimits
from coordinator.group import share_configs as sc
from protocol.api.fetch import READ_COMMITTED, READ_UNCOMMITTED

SHARE_FIELDS = tuple(f for f in BrokerConfig.__dataclass_fields__ if f.startswith("group_share_"))


def share_settings(
    config: Callable[[], BrokerConfig], overrides: Callable[[str], Mapping[str, str]]
) -> Callable[[str], GroupShareSettings]:
    """`settings(group_id)`, reading the broker's config and the group's configs each time."""

    def settings(group_id: str) -> GroupShareSettings:
        c = config()
        bounds = sc.broker_bounds({f: getattr(c, f) for f in SHARE_FIELDS})
        o = sc.valid(overrides(group_id), bounds)  # within the broker's group.share.min/max.*
        limits = ShareLimits(
            int(o.get(sc.RECORD_LOCK_DURATION, c.group_share_record_lock_duration_ms)),
            int(o.get(sc.DELIVERY_COUNT_LIMIT, c.group_share_delivery_count_limit)),
            c.group_share_partition_max_record_locks,
        )
        committed = o.get(sc.ISOLATION_LEVEL) == "read_committed"
        return GroupShareSettings(
            limits, o.get(sc.AUTO_OFFSET_RESET, LATEST),
            READ_COMMITTED if committed else READ_UNCOMMITTED,
        )  # fmt: skip

    return settings
