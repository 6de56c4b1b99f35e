"""Kafka's ACL model: the enums with Kafka's wire codes, bindings, filters and their JSON.

An ACL binding says "principal P from host H is ALLOWed (or DENYed) operation O on the
resources a pattern names": a `ResourcePattern` (resource type, name, LITERAL or PREFIXED)
plus an `AclEntry` (principal, host, operation, permission). `AclBinding` is the two flat,
as CreateAcls carries it. `AclBindingFilter` selects bindings as DescribeAcls and DeleteAcls
do, with Kafka's matching rules (`ResourcePatternFilter.matches`, `AccessControlEntryFilter`):
None / ANY match everything; pattern type MATCH matches every pattern that would apply to the
named resource (the literal name, the literal wildcard "*", and every PREFIXED pattern that is
a prefix of the name).

Names are Kafka's: wire codes are the enums' values; text is Kafka's Pascal case ("Topic",
"DescribeConfigs", "Allow"), read back case-insensitively with or without underscores, as
Kafka's SecurityUtils reads them.

ZooKeeper (Kafka's ZooKeeper-era AclAuthorizer, kept by coordinator/cluster/acls.py): one
node per resource pattern holds its whole entry set:

    {"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow",
                          "operation":"Read","host":"*"}]}

and a change is announced by a notification whose value is `literal_change` ("TOPIC:orders",
Kafka's `resourceType.toString + ":" + name`) or `extended_change` (JSON with version,
resourceType, name, patternType in Kafka's enum names).

Pure: no I/O, shared by the broker, the coordinator, the client and the CLI.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import IntEnum
from typing import Any, TypeVar

from protocol.errors import InvalidRequestError
from protocol.principal import USER_TYPE, KafkaPrincipal

CLUSTER_NAME = "kafka-cluster"  # the one name of the CLUSTER resource
WILDCARD_RESOURCE = "*"  # a LITERAL pattern named "*" matches every resource of its type
WILDCARD_HOST = "*"
WILDCARD_PRINCIPAL = KafkaPrincipal(USER_TYPE, "*")
ZK_ACL_VERSION = 1


class ResourceType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class AclPermissionType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


E = TypeVar("E", ResourceType, PatternType, AclOperation, AclPermissionType)

# Which operations make sense on which resource (Kafka's AclEntry.supportedOperations; ALL
# is accepted on every type). kafka-acls.sh refuses others; so does `odradek acls`.
SUPPORTED_OPERATIONS: dict[ResourceType, frozenset[AclOperation]] = {
    ResourceType.TOPIC: frozenset(
        {
            AclOperation.READ,
            AclOperation.WRITE,
            AclOperation.CREATE,
            AclOperation.DESCRIBE,
            AclOperation.DELETE,
            AclOperation.ALTER,
            AclOperation.DESCRIBE_CONFIGS,
            AclOperation.ALTER_CONFIGS,
        }
    ),
    ResourceType.GROUP: frozenset(
        {
            AclOperation.READ,
            AclOperation.DESCRIBE,
            AclOperation.DELETE,
            AclOperation.DESCRIBE_CONFIGS,
            AclOperation.ALTER_CONFIGS,
        }
    ),
    ResourceType.CLUSTER: frozenset(
        {
            AclOperation.CREATE,
            AclOperation.CLUSTER_ACTION,
            AclOperation.DESCRIBE_CONFIGS,
            AclOperation.ALTER_CONFIGS,
            AclOperation.IDEMPOTENT_WRITE,
            AclOperation.ALTER,
            AclOperation.DESCRIBE,
        }
    ),
    ResourceType.TRANSACTIONAL_ID: frozenset({AclOperation.DESCRIBE, AclOperation.WRITE}),
    ResourceType.DELEGATION_TOKEN: frozenset({AclOperation.DESCRIBE}),
    ResourceType.USER: frozenset({AclOperation.CREATE_TOKENS, AclOperation.DESCRIBE_TOKENS}),
}


def pascal_name(value: IntEnum) -> str:
    """Kafka's text for an enum value: TRANSACTIONAL_ID -> "TransactionalId"."""
    return "".join(part.capitalize() for part in value.name.split("_"))


def parse_enum(kind: type[E], text: str) -> E:
    """Kafka's name of a value, any case, with or without underscores ("DescribeConfigs",
    "DESCRIBE_CONFIGS", "describe-configs"); InvalidRequestError for anything else."""
    key = text.replace("_", "").replace("-", "").upper()
    for value in kind:
        if value.name.replace("_", "") == key:
            return value
    raise InvalidRequestError(f"unknown {kind.__name__} {text!r}")


def _concrete(value: IntEnum) -> bool:
    return value.name not in ("UNKNOWN", "ANY", "MATCH")


@dataclass(frozen=True, slots=True)
class ResourcePattern:
    resource_type: ResourceType
    name: str
    pattern_type: PatternType

    def __str__(self) -> str:  # Kafka's authorizer log form: Topic:LITERAL:orders
        return f"{pascal_name(self.resource_type)}:{self.pattern_type.name}:{self.name}"


@dataclass(frozen=True, slots=True)
class AclEntry:
    """One access control entry of a resource pattern's set (Kafka's AccessControlEntry)."""

    principal: KafkaPrincipal
    host: str
    operation: AclOperation
    permission: AclPermissionType

    def __str__(self) -> str:
        return (
            f"(principal={self.principal}, host={self.host}, "
            f"operation={self.operation.name}, permissionType={self.permission.name})"
        )


@dataclass(frozen=True, slots=True)
class AclBinding:
    resource_type: ResourceType
    name: str
    pattern_type: PatternType
    principal: KafkaPrincipal
    host: str
    operation: AclOperation
    permission: AclPermissionType

    @classmethod
    def of(cls, pattern: ResourcePattern, entry: AclEntry) -> AclBinding:
        return cls(
            pattern.resource_type,
            pattern.name,
            pattern.pattern_type,
            entry.principal,
            entry.host,
            entry.operation,
            entry.permission,
        )

    @property
    def pattern(self) -> ResourcePattern:
        return ResourcePattern(self.resource_type, self.name, self.pattern_type)

    @property
    def entry(self) -> AclEntry:
        return AclEntry(self.principal, self.host, self.operation, self.permission)

    def __str__(self) -> str:  # as Kafka's StandardAcl prints in the authorizer log
        return (
            f"StandardAcl(resourceType={self.resource_type.name}, resourceName={self.name}, "
            f"patternType={self.pattern_type.name}, principal={self.principal}, "
            f"host={self.host}, operation={self.operation.name}, "
            f"permissionType={self.permission.name})"
        )

    def check_creatable(self) -> None:
        """InvalidRequestError (with why) unless CreateAcls may store this binding, with the
        checks Kafka's broker makes: concrete type, pattern, operation and permission, a
        non-empty name, and `kafka-cluster` as the only CLUSTER name."""
        if not _concrete(self.resource_type):
            raise InvalidRequestError(f"invalid resource type {self.resource_type.name}")
        if self.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
            raise InvalidRequestError(
                f"invalid pattern type {self.pattern_type.name}: "
                "an ACL's pattern is LITERAL or PREFIXED"
            )
        if not _concrete(self.operation):
            raise InvalidRequestError(f"invalid operation {self.operation.name}")
        if self.permission not in (AclPermissionType.ALLOW, AclPermissionType.DENY):
            raise InvalidRequestError(f"invalid permission type {self.permission.name}")
        if not self.name:
            raise InvalidRequestError("invalid empty resource name")
        if self.resource_type == ResourceType.CLUSTER and self.name != CLUSTER_NAME:
            raise InvalidRequestError(
                f"the only valid name for the CLUSTER resource is {CLUSTER_NAME}"
            )
        if not self.host:
            raise InvalidRequestError("invalid empty host (use * for every host)")


@dataclass(frozen=True, slots=True)
class AclBindingFilter:
    """What DescribeAcls and DeleteAcls select; None means any name / principal / host."""

    resource_type: ResourceType = ResourceType.ANY
    name: str | None = None
    pattern_type: PatternType = PatternType.ANY
    principal: KafkaPrincipal | None = None
    host: str | None = None
    operation: AclOperation = AclOperation.ANY
    permission: AclPermissionType = AclPermissionType.ANY

    def check(self) -> None:
        """InvalidRequestError when a field is UNKNOWN (Kafka's `findIndefiniteField`)."""
        for value in (self.resource_type, self.pattern_type, self.operation, self.permission):
            if value.name == "UNKNOWN":
                raise InvalidRequestError(f"filter has an unknown {type(value).__name__}")

    def matches_pattern(self, pattern: ResourcePattern) -> bool:
        if self.resource_type not in (ResourceType.ANY, pattern.resource_type):
            return False
        kind = self.pattern_type
        if kind not in (PatternType.ANY, PatternType.MATCH, pattern.pattern_type):
            return False
        if self.name is None:
            return True
        if kind in (PatternType.ANY, pattern.pattern_type):
            return self.name == pattern.name
        if pattern.pattern_type == PatternType.LITERAL:  # MATCH
            return pattern.name in (self.name, WILDCARD_RESOURCE)
        return pattern.pattern_type == PatternType.PREFIXED and self.name.startswith(pattern.name)

    def matches_entry(self, entry: AclEntry) -> bool:
        return (
            (self.principal is None or self.principal == entry.principal)
            and (self.host is None or self.host == entry.host)
            and self.operation in (AclOperation.ANY, entry.operation)
            and self.permission in (AclPermissionType.ANY, entry.permission)
        )

    def matches(self, binding: AclBinding) -> bool:
        return self.matches_pattern(binding.pattern) and self.matches_entry(binding.entry)

    def exact_pattern(self) -> ResourcePattern | None:
        """The one pattern this filter can match, when it names it exactly (Kafka's
        `matchesAtMostOne`), so a store can go straight to its node."""
        if (
            _concrete(self.resource_type)
            and self.name is not None
            and self.pattern_type in (PatternType.LITERAL, PatternType.PREFIXED)
        ):
            return ResourcePattern(self.resource_type, self.name, self.pattern_type)
        return None


ANY_FILTER = AclBindingFilter()


# --- ZooKeeper JSON -------------------------------------------------------------------------


def entries_to_json(entries: frozenset[AclEntry] | set[AclEntry]) -> bytes:
    """A resource pattern's entry set as Kafka's AclAuthorizer writes its znode."""
    acls = [
        {
            "principal": str(e.principal),
            "permissionType": pascal_name(e.permission),
            "operation": pascal_name(e.operation),
            "host": e.host,
        }
        for e in sorted(entries, key=_entry_order)
    ]
    return json.dumps({"version": ZK_ACL_VERSION, "acls": acls}, separators=(",", ":")).encode()


def entries_from_json(data: bytes | None) -> frozenset[AclEntry]:
    """Kafka's ACL znode JSON back to entries (empty data: no entries); ValueError when it is
    not that JSON."""
    if not data:
        return frozenset()
    try:
        doc = json.loads(data)
        if doc.get("version") != ZK_ACL_VERSION:
            raise ValueError(f"ACL node version {doc.get('version')!r} is not {ZK_ACL_VERSION}")
        return frozenset(_entry_from_dict(item) for item in doc["acls"])
    except (KeyError, TypeError, AttributeError, InvalidRequestError) as exc:
        raise ValueError(f"not Kafka's ACL JSON: {exc}") from exc


def _entry_from_dict(item: dict[str, Any]) -> AclEntry:
    return AclEntry(
        KafkaPrincipal.parse(item["principal"]),
        str(item["host"]),
        parse_enum(AclOperation, item["operation"]),
        parse_enum(AclPermissionType, item["permissionType"]),
    )


def _entry_order(e: AclEntry) -> tuple[str, str, int, int]:
    return (str(e.principal), e.host, e.operation, e.permission)


def literal_change(pattern: ResourcePattern) -> bytes:
    """/kafka-acl-changes notification value: "TOPIC:orders" (Kafka's LiteralAclChangeStore)."""
    return f"{pattern.resource_type.name}:{pattern.name}".encode()


def extended_change(pattern: ResourcePattern) -> bytes:
    """/kafka-acl-extended-changes notification value (Kafka's ExtendedAclChangeEvent)."""
    event = {
        "version": 1,
        "resourceType": pattern.resource_type.name,
        "name": pattern.name,
        "patternType": pattern.pattern_type.name,
    }
    return json.dumps(event, separators=(",", ":")).encode()


def decode_change(data: bytes) -> ResourcePattern:
    """Either notification value back to the pattern it names; ValueError when malformed."""
    try:
        text = data.decode()
        if text.startswith("{"):
            event = json.loads(text)
            if event.get("version", 0) > 1:
                raise ValueError(f"ACL change event version {event['version']} is not 1")
            return ResourcePattern(
                parse_enum(ResourceType, event["resourceType"]),
                str(event["name"]),
                parse_enum(PatternType, event["patternType"]),
            )
        kind, sep, name = text.partition(":")
        if not sep:
            raise ValueError(f"expected ResourceType:ResourceName, got {text!r}")
        return ResourcePattern(parse_enum(ResourceType, kind), name, PatternType.LITERAL)
    except (UnicodeDecodeError, KeyError, TypeError, AttributeError, InvalidRequestError) as exc:
        raise ValueError(f"bad ACL change notification: {exc}") from exc
