"""Kafka's ACL APIs on the native door: DescribeAcls (29), CreateAcls (30), DeleteAcls (31).

The same meaning as Kafka's: bindings carry Kafka's enum codes (protocol/acl.py) as ints and
principals as "User:alice" text; a filter's None name / principal / host matches any. Each
creation and each filter gets its own error (INVALID_REQUEST for a bad one,
CLUSTER_AUTHORIZATION_FAILED without Cluster Alter, SECURITY_DISABLED on a broker without an
authorizer). `binding_of` / `filter_of` turn the wire form into protocol/acl.py's, mapping an
unknown code to UNKNOWN as Kafka does (the check that follows refuses it).
"""

from __future__ import annotations

from dataclasses import dataclass

from protocol.acl import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from protocol.api.spec import ApiSpec
from protocol.principal import KafkaPrincipal


@dataclass(frozen=True, slots=True)
class AclBindingData:
    resource_type: int
    name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission: int


@dataclass(frozen=True, slots=True)
class AclFilterData:
    resource_type: int = int(ResourceType.ANY)
    name: str | None = None
    pattern_type: int = int(PatternType.ANY)
    principal: str | None = None
    host: str | None = None
    operation: int = int(AclOperation.ANY)
    permission: int = int(AclPermissionType.ANY)


@dataclass(frozen=True, slots=True)
class DescribeAclsRequest:
    filter: AclFilterData


@dataclass(frozen=True, slots=True)
class DescribeAclsResponse:
    error_code: int
    error_message: str | None
    bindings: list[AclBindingData]


@dataclass(frozen=True, slots=True)
class CreateAclsRequest:
    creations: list[AclBindingData]


@dataclass(frozen=True, slots=True)
class AclResult:
    error_code: int
    error_message: str | None = None


@dataclass(frozen=True, slots=True)
class CreateAclsResponse:
    results: list[AclResult]  # one per creation, in order


@dataclass(frozen=True, slots=True)
class DeleteAclsRequest:
    filters: list[AclFilterData]


@dataclass(frozen=True, slots=True)
class DeleteAclsFilterResult:
    error_code: int
    error_message: str | None
    deleted: list[AclBindingData]


@dataclass(frozen=True, slots=True)
class DeleteAclsResponse:
    results: list[DeleteAclsFilterResult]  # one per filter, in order


def _enum(kind: type, code: int):  # type: ignore[no-untyped-def]
    try:
        return kind(code)
    except ValueError:
        return kind(0)  # UNKNOWN


def binding_of(data: AclBindingData) -> AclBinding:
    """Raises InvalidRequestError for a principal without a type."""
    return AclBinding(
        _enum(ResourceType, data.resource_type),
        data.name,
        _enum(PatternType, data.pattern_type),
        KafkaPrincipal.parse(data.principal),
        data.host,
        _enum(AclOperation, data.operation),
        _enum(AclPermissionType, data.permission),
    )


def filter_of(data: AclFilterData) -> AclBindingFilter:
    """A filter's principal is matched as text, as Kafka's AccessControlEntryFilter does: one
    that is not "<type>:<name>" (kafka-python's test asks for "*") matches no ACL and is not an
    error (INVALID_REQUEST is for an ACL being created)."""
    return AclBindingFilter(
        _enum(ResourceType, data.resource_type),
        data.name,
        _enum(PatternType, data.pattern_type),
        _principal_filter(data.principal),
        data.host,
        _enum(AclOperation, data.operation),
        _enum(AclPermissionType, data.permission),
    )


def _principal_filter(text: str | None) -> KafkaPrincipal | None:
    if text is None:
        return None
    kind, sep, name = text.partition(":")
    return KafkaPrincipal(kind, name) if sep else KafkaPrincipal("", text)  # no ACL has it


def data_of(b: AclBinding) -> AclBindingData:
    return AclBindingData(
        int(b.resource_type),
        b.name,
        int(b.pattern_type),
        str(b.principal),
        b.host,
        int(b.operation),
        int(b.permission),
    )


def filter_data_of(f: AclBindingFilter) -> AclFilterData:
    principal = None if f.principal is None else str(f.principal)
    return AclFilterData(
        int(f.resource_type),
        f.name,
        int(f.pattern_type),
        principal,
        f.host,
        int(f.operation),
        int(f.permission),
    )


DESCRIBE_ACLS = ApiSpec(29, "DescribeAcls", DescribeAclsRequest, DescribeAclsResponse)
CREATE_ACLS = ApiSpec(30, "CreateAcls", CreateAclsRequest, CreateAclsResponse)
DELETE_ACLS = ApiSpec(31, "DeleteAcls", DeleteAclsRequest, DeleteAclsResponse)
