"""The Kafka door's codecs of the ACL APIs, v1-v3 (see broker/codecs/kafka/__init__.py).

Kafka's enum fields (int8 on the wire) become the ints the operations take; DescribeAcls
answers its bindings grouped by resource pattern (type, name, pattern type), in the order the
operation gave them; DeleteAcls answers each deleted binding with error 0. v1 and v2/v3
(flexible) differ only in encoding.
"""

from __future__ import annotations

from typing import Any

from kio.static.primitive import i8

from broker.codecs import Codec
from broker.operations import create_acls, delete_acls, describe_acls
from protocol.api.acls import AclBindingData, AclFilterData
from protocol.kafka import versions as v
from protocol.kafka.codec import KafkaRequest, make, nested, response_class


def _filter(f: Any) -> AclFilterData:
    return AclFilterData(
        int(f.resource_type_filter), f.resource_name_filter, int(f.pattern_type_filter),
        f.principal_filter, f.host_filter, int(f.operation), int(f.permission_type),
    )  # fmt: skip


# ----- DescribeAcls (29) ----------------------------------------------------------------------


def _describe_in(request: KafkaRequest) -> describe_acls.DescribeAcls:
    return describe_acls.DescribeAcls(_filter(request.body))


def _describe_out(request: KafkaRequest, result: describe_acls.DescribeAclsResult) -> Any:
    cls = response_class(v.DESCRIBE_ACLS, request.header.api_version)
    resource_cls, acl_cls = nested(cls, "DescribeAclsResource"), nested(cls, "AclDescription")
    grouped: dict[tuple[int, str, int], list[AclBindingData]] = {}
    for b in result.bindings:
        grouped.setdefault((b.resource_type, b.name, b.pattern_type), []).append(b)
    resources = tuple(
        make(resource_cls, resource_type=i8(kind), resource_name=name, pattern_type=i8(pattern),
             acls=tuple(make(acl_cls, principal=b.principal, host=b.host,
                             operation=i8(b.operation), permission_type=i8(b.permission))
                        for b in bindings))
        for (kind, name, pattern), bindings in grouped.items()
    )  # fmt: skip
    return make(cls, throttle_time=0, error_code=result.error_code,
                error_message=result.error_message, resources=resources)  # fmt: skip


DESCRIBE_ACLS = Codec(_describe_in, _describe_out)

# ----- CreateAcls (30) ------------------------------------------------------------------------


def _create_in(request: KafkaRequest) -> create_acls.CreateAcls:
    return create_acls.CreateAcls(tuple(
        AclBindingData(int(c.resource_type), c.resource_name, int(c.resource_pattern_type),
                       c.principal, c.host, int(c.operation), int(c.permission_type))
        for c in request.body.creations
    ))  # fmt: skip


def _create_out(request: KafkaRequest, result: create_acls.CreateAclsResult) -> Any:
    cls = response_class(v.CREATE_ACLS, request.header.api_version)
    result_cls = nested(cls, "AclCreationResult")
    return make(cls, throttle_time=0, results=tuple(
        make(result_cls, error_code=r.error_code, error_message=r.error_message)
        for r in result.results
    ))  # fmt: skip


CREATE_ACLS = Codec(_create_in, _create_out)

# ----- DeleteAcls (31) ------------------------------------------------------------------------


def _delete_in(request: KafkaRequest) -> delete_acls.DeleteAcls:
    return delete_acls.DeleteAcls(tuple(_filter(f) for f in request.body.filters))


def _delete_out(request: KafkaRequest, result: delete_acls.DeleteAclsResult) -> Any:
    cls = response_class(v.DELETE_ACLS, request.header.api_version)
    result_cls = nested(cls, "DeleteAclsFilterResult")
    match_cls = nested(cls, "DeleteAclsMatchingAcl")
    return make(cls, throttle_time=0, filter_results=tuple(
        make(result_cls, error_code=r.error_code, error_message=r.error_message,
             matching_acls=tuple(
                 make(match_cls, error_code=0, error_message=None,
                      resource_type=i8(b.resource_type), resource_name=b.name,
                      pattern_type=i8(b.pattern_type), principal=b.principal, host=b.host,
                      operation=i8(b.operation), permission_type=i8(b.permission))
                 for b in r.deleted))
        for r in result.results
    ))  # fmt: skip


DELETE_ACLS = Codec(_delete_in, _delete_out)
