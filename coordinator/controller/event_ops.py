"""What the controller's event handlers (broker_changes.py, topic_changes.py,
partition_changes.py) use of the Controller (core.py), which imports them.

`EventOps` is admin.py's and log_dirs.py's view of the controller (context.py `ControllerOps`,
log_dirs.py `LogDirControllerOps`) plus its ZooKeeper reader (loader.py) and its watches
(events.py), and the one setting the elections need.
"""

from __future__ import annotations

from typing import Protocol

from coordinator.controller.context import RebalanceSettings
from coordinator.controller.events import Watches
from coordinator.controller.loader import ZkLoader
from coordinator.controller.log_dirs import LogDirControllerOps


class ElectionSettings(RebalanceSettings, Protocol):
    @property
    def replicated(self) -> bool: ...  # new partitions start with ISR = live replicas


class EventOps(LogDirControllerOps, Protocol):
    @property
    def config(self) -> ElectionSettings: ...

    @property
    def loader(self) -> ZkLoader: ...

    @property
    def watches(self) -> Watches: ...
