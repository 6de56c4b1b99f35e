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
from typing import NamedTuple, Protocol

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
MEMO_MAX = 10_000  # decisions an Authorizer remembers (per ACL generation)
EMPTY: Entries = frozenset()


Slot = tuple[ResourcePattern, Entries]  # a pattern with its entries, as the index keeps it


class AclCache:
    """Every resource pattern's ACL entries, indexed for `decide` (see the module docstring).

    Per resource type (keyed by its int code: an IntEnum hashes in Python, an int in C): the
    LITERAL names, the PREFIXED prefixes and the sorted prefix lengths present. Each value
    keeps its ResourcePattern, so a lookup builds nothing. `generation` counts changes (the
    Authorizer's memo of recent decisions is good only for one generation)."""

    def __init__(self, bindings: Iterable[AclBinding] = ()) -> None:
        self._literal: dict[int, dict[str, Slot]] = {}
        self._prefixed: dict[int, dict[str, Slot]] = {}
        self._prefix_lengths: dict[int, Counter[int]] = {}
        self._lengths_sorted: dict[int, tuple[int, ...]] = {}
        self._count = 0
        self.generation = 0
        grouped: dict[ResourcePattern, set[AclEntry]] = {}
        for b in bindings:
            grouped.setdefault(b.pattern, set()).add(b.entry)
        for pattern, entries in grouped.items():
            self.replace(pattern, frozenset(entries))

    def __len__(self) -> int:
        """How many ACL entries the cache holds."""
        return self._count

    def _table(self, pattern: ResourcePattern) -> dict[int, dict[str, Slot]]:
        if pattern.pattern_type == PatternType.LITERAL:
            return self._literal
        if pattern.pattern_type == PatternType.PREFIXED:
            return self._prefixed
        raise InvalidRequestError(f"an ACL pattern is LITERAL or PREFIXED, not {pattern}")

    def entries(self, pattern: ResourcePattern) -> Entries:
        if pattern.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
            return EMPTY
        slot = self._table(pattern).get(int(pattern.resource_type), {}).get(pattern.name)
        return EMPTY if slot is None else slot[1]

    def replace(self, pattern: ResourcePattern, entries: Iterable[AclEntry]) -> None:
        """Make `entries` the whole ACL set of `pattern` (empty: it has none)."""
        new = frozenset(entries)
        by_name = self._table(pattern).setdefault(int(pattern.resource_type), {})
        old = by_name.get(pattern.name)
        self._count += len(new) - (0 if old is None else len(old[1]))
        self.generation += 1
        if new:
            by_name[pattern.name] = (pattern, new)
        else:
            by_name.pop(pattern.name, None)
        if pattern.pattern_type == PatternType.PREFIXED and (old is None) != (not new):
            kind = int(pattern.resource_type)
            lengths = self._prefix_lengths.setdefault(kind, Counter())
            lengths[len(pattern.name)] += 1 if new else -1
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
        self.generation += 1

    def matching(self, kind: ResourceType, name: str) -> list[Slot]:
        """The patterns (with their entries) that apply to resource `name` of type `kind`:
        its literal name, the literal wildcard, every prefix of it. No scan over all ACLs:
        two literal probes and one per distinct prefix length up to the name's length."""
        code = int(kind)
        found: list[Slot] = []
        literal = self._literal.get(code)
        if literal:
            slot = literal.get(name)
            if slot is not None:
                found.append(slot)
            if name != WILDCARD_RESOURCE and (slot := literal.get(WILDCARD_RESOURCE)) is not None:
                found.append(slot)
        by_prefix = self._prefixed.get(code)
        if by_prefix:
            size = len(name)
            for length in self._lengths_sorted[code]:
                if length > size:
                    break
                if (slot := by_prefix.get(name[:length])) is not None:
                    found.append(slot)
        return found

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

    def _patterns(self, selector: AclBindingFilter | None) -> Iterator[Slot]:
        exact = selector.exact_pattern() if selector is not None else None
        if exact is not None:  # straight to its node
            yield exact, self.entries(exact)
            return
        for table in (self._literal, self._prefixed):
            for by_name in table.values():
                yield from by_name.values()

    def patterns_of(self, kind: ResourceType) -> Iterator[Slot]:
        """Every pattern of one resource type (authorize_any's by-type check)."""
        for table in (self._literal, self._prefixed):
            yield from table.get(int(kind), {}).values()


class Decision(NamedTuple):  # a NamedTuple: made on every request, cheaper than a dataclass
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
        self._memo: dict[tuple[KafkaPrincipal, str, int, int, str], Decision] = {}
        self._memo_generation = -1

    def _decide(
        self, session: SessionLike, op: AclOperation, kind: ResourceType, name: str
    ) -> Decision:
        """`decide`, remembered for the cache's generation: a producer's every request asks
        the same question. At most MEMO_MAX answers are kept; any ACL change forgets them."""
        if self._memo_generation != self.cache.generation:
            self._memo.clear()
            self._memo_generation = self.cache.generation
        key = (session.principal, session.peer_host, int(op), int(kind), name)
        found = self._memo.get(key)
        if found is None:
            found = decide(
                self.cache,
                self.super_users,
                self.allow_everyone_if_no_acl_found,
                session.principal,
                session.peer_host,
                op,
                kind,
                name,
            )
            if len(self._memo) >= MEMO_MAX:
                self._memo.clear()
            self._memo[key] = found
        return found

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
