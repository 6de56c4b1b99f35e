"""The broker's own log: its format, and logger levels set as Kafka's log4j logger levels.

A broker logs to stderr (a local cluster's broker-<id>.log), one line per record:

    2026-11-29 13:30:00,123 broker-1 INFO odradek.broker.sasl: closing ...

Which records are written is the broker setting `logger_levels` (broker/config.py), Kafka's
log4j `logger.<name>.level` lines (and KIP-412's BROKER_LOGGER names) in one value:
comma-separated `logger=LEVEL`, where "root" is every logger not named (INFO unless given) and
a logger's level covers the loggers under it (`odradek.broker` covers `odradek.broker.sasl`):

    logger_levels = "root=WARN,odradek.broker.sasl=DEBUG"

Levels are Kafka's: TRACE (below DEBUG), DEBUG, INFO, WARN, ERROR, FATAL and OFF (nothing).
The authorizer's logger (`odradek.authorizer`) is not named here: its level is the setting
`authorizer_log_level`, beside its own file (broker/security/authorizer_log.py).

`parse_logger_levels` is pure (a mistake is one UsageError line); `configure_logging` applies
the result once, at start.
"""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import Mapping

from protocol.errors import UsageError

ROOT = "root"  # Kafka's (log4j's) name for the root logger
TRACE = 5  # below DEBUG, as broker/security/authorizer_log.py's
LEVELS = {
    "TRACE": TRACE,
    "DEBUG": logging.DEBUG,
    "INFO": logging.INFO,
    "WARN": logging.WARNING,
    "ERROR": logging.ERROR,
    "FATAL": logging.CRITICAL,
    "OFF": logging.CRITICAL + 1,
}
AUTHORIZER_LOGGER = "odradek.authorizer"
_NAME = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")
SETTING = "logger_levels"


def parse_logger_levels(text: str) -> dict[str, int]:
    """{logger name: level} from "name=LEVEL,..." ("" : {}); UsageError, one line, for an
    entry that is not name=LEVEL, an unknown level, a logger named twice or the authorizer's."""
    levels: dict[str, int] = {}
    for entry in (e.strip() for e in text.split(",")):
        if not entry:
            continue
        name, equals, level = (part.strip() for part in entry.partition("="))
        if not equals or not _NAME.fullmatch(name):
            raise UsageError(f"{SETTING}: {entry!r} is not logger=LEVEL "
                             '(e.g. "root=INFO,odradek.broker.sasl=DEBUG")')  # fmt: skip
        if level not in LEVELS:
            raise UsageError(f"{SETTING}: {name} has level {level!r}, not one of "
                             f"{', '.join(LEVELS)}")  # fmt: skip
        if name in levels:
            raise UsageError(f"{SETTING}: logger {name} is named twice")
        if name == AUTHORIZER_LOGGER:
            raise UsageError(f"{SETTING}: the level of {name} is the setting "
                             "authorizer_log_level")  # fmt: skip
        levels[name] = LEVELS[level]
    return levels


def configure_logging(broker_id: int, levels: Mapping[str, int]) -> None:
    """stderr in the broker's format, at `levels` (parse_logger_levels's; root: INFO)."""
    logging.addLevelName(TRACE, "TRACE")
    logging.basicConfig(
        stream=sys.stderr,
        format=f"%(asctime)s broker-{broker_id} %(levelname)s %(name)s: %(message)s",
    )
    logging.getLogger().setLevel(levels.get(ROOT, logging.INFO))
    for name, level in levels.items():
        if name != ROOT:
            logging.getLogger(name).setLevel(level)
