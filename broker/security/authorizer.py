"""Kafka's ACL authorization: an indexed ACL cache, the pure decision, and the broker's Authorizer.

The decision (`decide`) is a pure function of an `AclCache`, the super users, the
allow-everyone setting and (principal, host, operation, resource type, resource name); it
follows Kafka's AclAuthorizer / StandardAuthorizer:

1. A super user (`super.users`, "User:admin;User:broker") is allowed everything.
2. The ACLs that apply to the resource are those of its LITERAL name, of the LITERAL
   wildcard "*" of its type, and of every PREFIXED pattern that is a prefix of the name.
3. An entry applies to the request when its principal is the session's or User:*, its host
   is the peer's or "*", and its operation is the one asked, or ALL; an ALLOW entry for Read,
   Write, Delete or Alter also allows Describe, and AlterConfigs allows DescribeConfigs.
   (Implication is for ALLOW only: DENY Read does not deny Describe.)
4. Any applying DENY entry denies (deny wins); else any applying ALLOW entry allows.
5. When no ACL at all (any principal, any operation) applies to the resource, the answer is
   `allow.everyone.if.no.acl.found` (default false); otherwise it is denied.

The index (`AclCache`) keeps each resource pattern's entry set in a dict keyed by
(type, name) for LITERAL patterns (the wildcard "*" is one more key) and, for PREFIXED
patterns, a dict per type keyed by prefix plus the set of prefix lengths present. Finding a
resource's ACLs is two literal probes plus one probe per distinct prefix length no longer than
the name: work bounded by the name's length, not by the number of ACLs.

`Authorizer` is what the broker holds (`ctx.authorizer`; None means no authorizer configured
and everything is allowed, as Kafka without `authorizer.class.name`). Each decision is written
to the authorizer log (broker/security/authorizer_log.py). The cache is filled and kept
current by coordinator/cluster/acls.py through `AclCache.replace`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Protocol

from broker.security import authorizer_log
from protocol.acl import (
    WILDCARD_HOST,
    WILDCARD_PRINCIPAL,
    WILDCARD_RESOURCE,
    AclBinding,
    AclBindingFilter,
    AclEntry,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from protocol.errors import InvalidRequestError
from protocol.principal import KafkaPrincipal

# Kafka's names of its authorizers; any of them in `authorizer_class_name` turns ours on.
AUTHORIZER_CLASS_NAMES = frozenset(
    {
        "kafka.security.authorizer.AclAuthorizer",
        "kafka.security.auth.SimpleAclAuthorizer",
        "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "odradek",
    }
)

IMPLIES_DESCRIBE = frozenset(
    {
        AclOperation.DESCRIBE,
        AclOperation.READ,
        AclOperation.WRITE,
        AclOperation.DELETE,
        AclOperation.ALTER,
    }
)
IMPLIES_DESCRIBE_CONFIGS = frozenset({AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS})

Entries = frozenset[AclEntry]
EMPTY: Entries = frozenset()


class AclCache:
    """Every resource pattern's ACL entries, indexed for `decide` (see the module docstring)."""

    def __init__(self, bindings: Iterable[AclBinding] = ()) -> None:
        self._literal: dict[tuple[ResourceType, str], Entries] = {}
        self._prefixed: dict[ResourceType, dict[str, Entries]] = {}
        self._prefix_lengths: dict[ResourceType, Counter[int]] = {}
        self._lengths_sorted: dict[ResourceType, tuple[int, ...]] = {}
        self._count = 0
        grouped: dict[ResourcePattern, set[AclEntry]] = {}
        for b in bindings:
            grouped.setdefault(b.pattern, set()).add(b.entry)
        for pattern, entries in grouped.items():
            self.replace(pattern, frozenset(entries))

    def __len__(self) -> int:
        """How many ACL entries the cache holds."""
        return self._count

    def entries(self, pattern: ResourcePattern) -> Entries:
        if pattern.pattern_type == PatternType.LITERAL:
            return self._literal.get((pattern.resource_type, pattern.name), EMPTY)
        if pattern.pattern_type == PatternType.PREFIXED:
            return self._prefixed.get(pattern.resource_type, {}).get(pattern.name, EMPTY)
        return EMPTY

    def replace(self, pattern: ResourcePattern, entries: Iterable[AclEntry]) -> None:
        """Make `entries` the whole ACL set of `pattern` (empty: it has none)."""
        new = frozenset(entries)
        self._count += len(new) - len(self.entries(pattern))
        kind = pattern.resource_type
        if pattern.pattern_type == PatternType.LITERAL:
            if new:
                self._literal[(kind, pattern.name)] = new
            else:
                self._literal.pop((kind, pattern.name), None)
            return
        if pattern.pattern_type != PatternType.PREFIXED:
            raise InvalidRequestError(f"an ACL pattern is LITERAL or PREFIXED, not {pattern}")
        by_prefix = self._prefixed.setdefault(kind, {})
        lengths = self._prefix_lengths.setdefault(kind, Counter())
        had = pattern.name in by_prefix
        if new:
            by_prefix[pattern.name] = new
            if not had:
                lengths[len(pattern.name)] += 1
        elif had:
            del by_prefix[pattern.name]
            lengths[len(pattern.name)] -= 1
            if not lengths[len(pattern.name)]:
                del lengths[len(pattern.name)]
        self._lengths_sorted[kind] = tuple(sorted(lengths))

    def replace_all(self, sets: Mapping[ResourcePattern, Iterable[AclEntry]]) -> None:
        """Make `sets` the cache's whole content (a full reload from ZooKeeper)."""
        self._literal.clear()
        self._prefixed.clear()
        self._prefix_lengths.clear()
        self._lengths_sorted.clear()
        self._count = 0
        for pattern, entries in sets.items():
            self.replace(pattern, entries)

    def matching(self, kind: ResourceType, name: str) -> Iterator[tuple[ResourcePattern, Entries]]:
        """The patterns (with their entries) that apply to resource `name` of type `kind`:
        its literal name, the literal wildcard, every prefix of it. No scan over all ACLs."""
        for literal in (name, WILDCARD_RESOURCE) if name != WILDCARD_RESOURCE else (name,):
            found = self._literal.get((kind, literal))
            if found:
                yield ResourcePattern(kind, literal, PatternType.LITERAL), found
        by_prefix = self._prefixed.get(kind)
        if not by_prefix:
            return
        for length in self._lengths_sorted[kind]:
            if length > len(name):
                break
            found = by_prefix.get(name[:length])
            if found:
                yield ResourcePattern(kind, name[:length], PatternType.PREFIXED), found

    def bindings(self, selector: AclBindingFilter | None = None) -> list[AclBinding]:
        """Every binding (for DescribeAcls / DeleteAcls), or those `selector` matches."""
        out: list[AclBinding] = []
        for pattern, entries in self._patterns(selector):
            if selector is not None and not selector.matches_pattern(pattern):
                continue
            out.extend(
                AclBinding.of(pattern, e)
                for e in entries
                if selector is None or selector.matches_entry(e)
            )
        return out

    def _patterns(
        self, selector: AclBindingFilter | None
    ) -> Iterator[tuple[ResourcePattern, Entries]]:
        exact = selector.exact_pattern() if selector is not None else None
        if exact is not None:  # straight to its node
            yield exact, self.entries(exact)
            return
        for (kind, name), entries in self._literal.items():
            yield ResourcePattern(kind, name, PatternType.LITERAL), entries
        for kind, by_prefix in self._prefixed.items():
            for name, entries in by_prefix.items():
                yield ResourcePattern(kind, name, PatternType.PREFIXED), entries

    def patterns_of(self, kind: ResourceType) -> Iterator[tuple[ResourcePattern, Entries]]:
        """Every pattern of one resource type (authorize_any's by-type check)."""
        for (k, name), entries in self._literal.items():
            if k == kind:
                yield ResourcePattern(kind, name, PatternType.LITERAL), entries
        for name, entries in self._prefixed.get(kind, {}).items():
            yield ResourcePattern(kind, name, PatternType.PREFIXED), entries


@dataclass(frozen=True, slots=True)
class Decision:
    allowed: bool
    default_rule: str = ""  # SuperUser, DefaultAllow or DefaultDeny when no ACL decided
    matched: tuple[ResourcePattern, AclEntry] | None = None  # the ACL that decided
    examined: int = 0  # ACL entries looked at: bounded by the resource's own ACLs

    @property
    def rule(self) -> str:
        """Kafka's name of the rule, for the authorizer log (built only when logged)."""
        if self.matched is None:
            return self.default_rule
        return f"MatchingAcl(acl={AclBinding.of(*self.matched)})"

    def __str__(self) -> str:
        return self.rule


def applies(entry: AclEntry, principal: KafkaPrincipal, host: str, op: AclOperation) -> bool:
    """Does `entry` speak about this principal, host and operation (rule 3)?"""
    if entry.principal != principal and entry.principal != WILDCARD_PRINCIPAL:
        return False
    if entry.host != WILDCARD_HOST and entry.host != host:
        return False
    if entry.operation == AclOperation.ALL or entry.operation == op:
        return True
    if entry.permission != AclPermissionType.ALLOW:
        return False
    if op == AclOperation.DESCRIBE:
        return entry.operation in IMPLIES_DESCRIBE
    return op == AclOperation.DESCRIBE_CONFIGS and entry.operation in IMPLIES_DESCRIBE_CONFIGS


def decide(
    cache: AclCache,
    super_users: frozenset[KafkaPrincipal],
    allow_if_no_acl: bool,
    principal: KafkaPrincipal,
    host: str,
    op: AclOperation,
    kind: ResourceType,
    name: str,
) -> Decision:
    """Kafka's decision for one action (see the module docstring for the rules)."""
    if op in (AclOperation.ANY, AclOperation.UNKNOWN) or kind in (
        ResourceType.ANY,
        ResourceType.UNKNOWN,
    ):
        raise InvalidRequestError(f"cannot authorize {op.name} on a {kind.name} resource")
    if principal in super_users:
        return Decision(True, "SuperUser")
    examined = 0
    allowed_by: tuple[ResourcePattern, AclEntry] | None = None
    for pattern, entries in cache.matching(kind, name):
        for entry in entries:
            examined += 1
            if not applies(entry, principal, host, op):
                continue
            if entry.permission == AclPermissionType.DENY:
                return Decision(False, matched=(pattern, entry), examined=examined)
            allowed_by = allowed_by or (pattern, entry)
    if allowed_by is not None:
        return Decision(True, matched=allowed_by, examined=examined)
    if examined == 0:
        return Decision(allow_if_no_acl, "DefaultAllow" if allow_if_no_acl else "DefaultDeny")
    return Decision(False, "DefaultDeny", examined=examined)


def decide_any(
    cache: AclCache,
    super_users: frozenset[KafkaPrincipal],
    allow_if_no_acl: bool,
    principal: KafkaPrincipal,
    host: str,
    op: AclOperation,
    kind: ResourceType,
) -> bool:
    """Kafka's `authorizeByResourceType`: may the principal do `op` on at least one resource
    of `kind`? (InitProducerId without a transactional id: IdempotentWrite on the cluster or
    Write on any topic.) Allowed when the hard-coded name "hardcode" is allowed (super users,
    allow-everyone with no ACLs), or some ALLOW pattern for the principal, host and op is not
    covered by a DENY of the same literal name or a DENY prefix of it; a DENY on the literal
    wildcard denies. This scans the type's patterns, as Kafka does; it is asked once per
    InitProducerId, not per record."""
    if decide(cache, super_users, allow_if_no_acl, principal, host, op, kind, "hardcode").allowed:
        return True
    deny_literal: set[str] = set()
    deny_prefix: set[str] = set()
    allow: list[ResourcePattern] = []
    for pattern, entries in cache.patterns_of(kind):
        for e in entries:
            if e.host not in (host, WILDCARD_HOST) or e.principal not in (
                principal,
                WILDCARD_PRINCIPAL,
            ):
                continue
            if e.operation not in (op, AclOperation.ALL):
                continue
            literal = pattern.pattern_type == PatternType.LITERAL
            if e.permission == AclPermissionType.DENY:
                if literal and pattern.name == WILDCARD_RESOURCE:
                    return False
                (deny_literal if literal else deny_prefix).add(pattern.name)
            elif e.permission == AclPermissionType.ALLOW:
                allow.append(pattern)
    for pattern in allow:
        if pattern.pattern_type == PatternType.LITERAL and pattern.name == WILDCARD_RESOURCE:
            return True
    for pattern in allow:
        if pattern.pattern_type == PatternType.LITERAL and pattern.name in deny_literal:
            continue
        if not any(pattern.name[:n] in deny_prefix for n in range(1, len(pattern.name) + 1)):
            return True
    return False


class AclWriter(Protocol):
    """Where CreateAcls / DeleteAcls write (coordinator/cluster/acls.py's ZkAclStore): replace
    a pattern's entry set by `change(current)`; returns (before, after)."""

    async def update(
        self, pattern: ResourcePattern, change: Callable[[Entries], Entries]
    ) -> tuple[Entries, Entries]: ...


class SessionLike(Protocol):
    """What the authorizer reads of a connection's session (broker/session.py's Session)."""

    @property
    def principal(self) -> KafkaPrincipal: ...

    @property
    def peer_host(self) -> str: ...


def parse_super_users(text: str) -> frozenset[KafkaPrincipal]:
    """Kafka's `super.users`: "User:admin;User:broker" (empty: none)."""
    return frozenset(KafkaPrincipal.parse(p.strip()) for p in text.split(";") if p.strip())


class Authorizer:
    """The broker's authorizer: the decision over the live cache, logged as Kafka logs it."""

    def __init__(
        self,
        cache: AclCache | None = None,
        super_users: frozenset[KafkaPrincipal] = frozenset(),
        allow_everyone_if_no_acl_found: bool = False,
    ) -> None:
        self.cache = cache if cache is not None else AclCache()
        self.super_users = super_users
        self.allow_everyone_if_no_acl_found = allow_everyone_if_no_acl_found
        self.store: AclWriter | None = None  # the daemon attaches ZooKeeper's

    def _decide(
        self, session: SessionLike, op: AclOperation, kind: ResourceType, name: str
    ) -> Decision:
        return decide(
            self.cache,
            self.super_users,
            self.allow_everyone_if_no_acl_found,
            session.principal,
            session.peer_host,
            op,
            kind,
            name,
        )

    def authorize(
        self,
        session: SessionLike,
        op: AclOperation,
        kind: ResourceType,
        name: str,
        *,
        request: str = "",
        log_if_denied: bool = True,
        log_if_allowed: bool = True,
        ref_count: int = 1,
    ) -> bool:
        """May the session's principal do `op` on resource `name` of type `kind`? Logged:
        denials at INFO (when `log_if_denied`), allows at DEBUG (when `log_if_allowed`)."""
        decision = self._decide(session, op, kind, name)
        authorizer_log.record(
            session,
            op,
            (kind, name, PatternType.LITERAL),
            decision.allowed,
            decision,
            request=request,
            log_if_denied=log_if_denied,
            log_if_allowed=log_if_allowed,
            ref_count=ref_count,
        )
        return decision.allowed

    def authorize_many(
        self,
        session: SessionLike,
        op: AclOperation,
        kind: ResourceType,
        names: Iterable[str],
        *,
        request: str = "",
        log_if_denied: bool = False,
    ) -> set[str]:
        """The names the session may do `op` on (Metadata / ListGroups filtering). Denials
        are logged only when `log_if_denied` (Kafka logs those of explicitly named
        resources, not of the ones a filter leaves out)."""
        return {
            n
            for n in names
            if self.authorize(session, op, kind, n, request=request, log_if_denied=log_if_denied)
        }

    def authorize_any(
        self, session: SessionLike, op: AclOperation, kind: ResourceType, *, request: str = ""
    ) -> bool:
        """Kafka's authorizeByResourceType: may the session do `op` on some resource of
        `kind`? (see `decide_any`)"""
        allowed = decide_any(
            self.cache,
            self.super_users,
            self.allow_everyone_if_no_acl_found,
            session.principal,
            session.peer_host,
            op,
            kind,
        )
        authorizer_log.record(
            session,
            op,
            (kind, "", PatternType.ANY),
            allowed,
            "ByResourceType",
            request=request,
        )
        return allowed
