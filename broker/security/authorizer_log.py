"""The authorizer log: one line per authorization decision, as Kafka's kafka-authorizer.log.

Logger `odradek.authorizer` (Kafka's `kafka.authorizer.logger`). A denial of something the
request named is logged at INFO, an allow at DEBUG; a decision the caller marks as not worth
logging (a Metadata or ListGroups filter leaving out what the principal may not see, Kafka's
logIfDenied=false) goes at TRACE-like level 5, which no default configuration shows. So the
default log shows denials, and setting the logger to DEBUG ("authorizer_log_level": "DEBUG")
shows allows too. Each line reads as Kafka's:

    Principal = User:alice is Denied operation = WRITE from host = 127.0.0.1 on resource =
    Topic:LITERAL:orders for request = Produce with resourceRefCount = 1 based on rule
    MatchingAcl(acl=StandardAcl(...))

`attach_file(path, level)` sends the lines to their own file (the broker's
`authorizer_log_file`) and not to the broker's log, as Kafka's log4j config does
(additivity=false). Lines are built only when their level is enabled.
"""

from __future__ import annotations

import logging
from typing import Protocol

from protocol.acl import AclOperation, PatternType, ResourcePattern, ResourceType
from protocol.principal import KafkaPrincipal

log = logging.getLogger("odradek.authorizer")
TRACE = 5  # below DEBUG: decisions nobody asked to see


class _Session(Protocol):
    @property
    def principal(self) -> KafkaPrincipal: ...

    @property
    def peer_host(self) -> str: ...


Resource = tuple[ResourceType, str, PatternType]  # made a ResourcePattern only when logged


def line(
    session: _Session,
    op: AclOperation,
    resource: Resource,
    allowed: bool,
    rule: object,
    request: str,
    ref_count: int,
) -> str:
    pattern = ResourcePattern(*resource)
    return (
        f"Principal = {session.principal} is {'Allowed' if allowed else 'Denied'} "
        f"operation = {op.name} from host = {session.peer_host} on resource = {pattern} "
        f"for request = {request or 'unknown'} with resourceRefCount = {ref_count} "
        f"based on rule {rule}"
    )


def record(
    session: _Session,
    op: AclOperation,
    resource: Resource,
    allowed: bool,
    rule: object,
    *,
    request: str = "",
    log_if_denied: bool = True,
    log_if_allowed: bool = True,
    ref_count: int = 1,
) -> None:
    """Log one decision at the level Kafka would (see the module docstring); `rule` is
    anything whose str() names the rule, made text only when the line is written."""
    if allowed:
        level = logging.DEBUG if log_if_allowed else TRACE
    else:
        level = logging.INFO if log_if_denied else TRACE
    if log.isEnabledFor(level):
        log.log(level, "%s", line(session, op, resource, allowed, rule, request, ref_count))


def attach_file(path: str, level: str = "INFO") -> logging.Handler:
    """Write the authorizer log to `path` only (not the broker's log) at `level`."""
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter("[%(asctime)s] %(levelname)s %(message)s"))
    log.addHandler(handler)
    log.setLevel(level)
    log.propagate = False
    return handler
