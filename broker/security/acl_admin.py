"""The ACL service the DescribeAcls, CreateAcls and DeleteAcls operations call
(broker/operations/{describe,create,delete}_acls.py), as Kafka's AclApis over the ZooKeeper
AclAuthorizer does it:
- `refusal` is the operations' one check: no authorizer configured is SECURITY_DISABLED, no
  Describe (DescribeAcls) or Alter (CreateAcls, DeleteAcls) on the Cluster
  CLUSTER_AUTHORIZATION_FAILED, for the whole request (their rows of broker/security/rules.py);
- a creation or filter that is not valid gets INVALID_REQUEST saying why, the others go on;
- `describe` reads this broker's cache (which follows ZooKeeper); `create` and `delete` write
  each resource pattern's whole set to ZooKeeper conditionally (coordinator/cluster/acls.py),
  which announces the change to every broker.
A deleted binding is reported under every filter that matches it, as Kafka does.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from broker.context import BrokerContext
from broker.security import rules
from broker.security.authorizer import Authorizer, SessionLike
from broker.session import Session
from protocol.acl import (
    CLUSTER_NAME,
    AclBinding,
    AclBindingFilter,
    AclEntry,
    AclOperation,
    ResourcePattern,
)
from protocol.errors import (
    OdradekError,
    SecurityDisabledError,
    UnknownServerError,
)

log = logging.getLogger("odradek.broker.acls")

DeleteResult = tuple[OdradekError | None, list[AclBinding]]
Change = Callable[[frozenset[AclEntry]], frozenset[AclEntry]]


def refusal(
    ctx: BrokerContext, session: Session, op: AclOperation, api: str
) -> OdradekError | None:
    """Why the whole request is refused (None: it may go on)."""
    if ctx.authorizer is None:
        return SecurityDisabledError(
            "no authorizer is configured on this broker (its authorizer_class_name is empty)"
        )
    if not rules.allows(ctx, session, op, rules.CLUSTER, api=api):
        return rules.refusal(session, op, rules.CLUSTER, CLUSTER_NAME)
    return None


def describe(auth: Authorizer, selector: AclBindingFilter) -> list[AclBinding]:
    """The bindings `selector` matches; raises INVALID_REQUEST."""
    selector.check()
    return sorted(auth.cache.bindings(selector), key=_order)


def _order(b: AclBinding) -> tuple[int, str, int, str, str, int, int]:
    return (
        b.resource_type,
        b.name,
        b.pattern_type,
        str(b.principal),
        b.host,
        b.operation,
        b.permission,
    )


async def create(
    auth: Authorizer, session: SessionLike, creations: Sequence[AclBinding | OdradekError]
) -> list[OdradekError | None]:
    """Store each binding (an OdradekError in `creations` is one that did not even parse);
    one error or None per creation, in order."""
    results: list[OdradekError | None] = [None] * len(creations)
    by_pattern: dict[ResourcePattern, list[int]] = {}
    for i, b in enumerate(creations):
        try:
            if isinstance(b, OdradekError):
                raise b
            b.check_creatable()
        except OdradekError as exc:
            results[i] = exc
            continue
        by_pattern.setdefault(b.pattern, []).append(i)
    for pattern, indexes in by_pattern.items():
        new = frozenset(b.entry for i in indexes if isinstance(b := creations[i], AclBinding))
        error = await _update(auth, pattern, new.union)
        for i in indexes:
            results[i] = error
        if error is None:
            log.info(
                "%s added ACLs to %s: %s",
                session.principal,
                pattern,
                ", ".join(str(e) for e in new),
            )
    return results


async def delete(
    auth: Authorizer, session: SessionLike, filters: Sequence[AclBindingFilter | OdradekError]
) -> list[DeleteResult]:
    """Delete every binding each filter matches; per filter, an error or the bindings
    deleted."""
    results: list[DeleteResult] = [(None, []) for _ in filters]
    valid: list[tuple[int, AclBindingFilter]] = []
    for i, f in enumerate(filters):
        try:
            if isinstance(f, OdradekError):
                raise f
            f.check()
            valid.append((i, f))
        except OdradekError as exc:
            results[i] = (exc, [])
    patterns: dict[ResourcePattern, None] = {}
    for _, f in valid:
        exact = f.exact_pattern()
        if exact is not None:
            patterns[exact] = None  # even if this broker's cache has not seen it yet
        patterns.update((b.pattern, None) for b in auth.cache.bindings(f))
    for pattern in patterns:
        await _delete_from(auth, session, pattern, valid, results)
    return results


async def _delete_from(
    auth: Authorizer,
    session: SessionLike,
    pattern: ResourcePattern,
    valid: list[tuple[int, AclBindingFilter]],
    results: list[DeleteResult],
) -> None:
    def doomed(entry: AclEntry) -> bool:
        return any(f.matches(AclBinding.of(pattern, entry)) for _, f in valid)

    removed: set[AclEntry] = set()

    def change(current: frozenset[AclEntry]) -> frozenset[AclEntry]:
        removed.clear()
        removed.update(e for e in current if doomed(e))
        return current - removed

    error = await _update(auth, pattern, change)
    for i, f in valid:
        if results[i][0] is not None:
            continue
        if error is not None:
            results[i] = (error, [])
            continue
        results[i][1].extend(b for e in removed if f.matches(b := AclBinding.of(pattern, e)))
    if removed and error is None:
        log.info(
            "%s removed ACLs from %s: %s",
            session.principal,
            pattern,
            ", ".join(str(e) for e in removed),
        )


async def _update(
    auth: Authorizer, pattern: ResourcePattern, change: Change
) -> OdradekError | None:
    if auth.store is None:
        return UnknownServerError("this broker's authorizer has no ACL store attached")
    try:
        await auth.store.update(pattern, change)
    except OdradekError as exc:
        return exc
    except Exception as exc:  # ZooKeeper trouble: the client may retry
        log.warning("updating the ACLs of %s failed: %s", pattern, exc)
        return UnknownServerError(f"updating the ACLs of {pattern} failed: {exc}")
    return None
