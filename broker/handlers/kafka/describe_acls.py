"""DescribeAcls (29), v1-v3 as Kafka 4.0: the native DescribeAcls (broker/handlers/
describe_acls.py) answered in Kafka's shape, bindings grouped by resource pattern."""

from __future__ import annotations

from typing import Any

from kio.static.primitive import i8

from broker.context import BrokerContext
from broker.deferred import then
from broker.handlers import describe_acls as native
from broker.handlers.kafka._adapt import as_native
from broker.session import Session
from protocol.api.acls import (
    DESCRIBE_ACLS,
    AclBindingData,
    AclFilterData,
    DescribeAclsRequest,
    DescribeAclsResponse,
)
from protocol.kafka.codec import KafkaRequest, make, nested, response_class


def handle(ctx: BrokerContext, request: KafkaRequest, session: Session) -> Any:
    req = request.body
    selector = AclFilterData(
        int(req.resource_type_filter),
        req.resource_name_filter,
        int(req.pattern_type_filter),
        req.principal_filter,
        req.host_filter,
        int(req.operation),
        int(req.permission_type),
    )
    native_req = DescribeAclsRequest(selector)
    result = native.handle(ctx, as_native(DESCRIBE_ACLS, native_req, request), session)
    return then(result, lambda r: _answer(request.header.api_version, r))


def _answer(version: int, resp: DescribeAclsResponse) -> Any:
    cls = response_class(DESCRIBE_ACLS.key, version)
    resource_cls, acl_cls = nested(cls, "DescribeAclsResource"), nested(cls, "AclDescription")
    grouped: dict[tuple[int, str, int], list[AclBindingData]] = {}
    for b in resp.bindings:
        grouped.setdefault((b.resource_type, b.name, b.pattern_type), []).append(b)
    resources = tuple(
        make(
            resource_cls,
            resource_type=i8(kind),
            resource_name=name,
            pattern_type=i8(pattern),
            acls=tuple(
                make(
                    acl_cls,
                    principal=b.principal,
                    host=b.host,
                    operation=i8(b.operation),
                    permission_type=i8(b.permission),
                )
                for b in bindings
            ),
        )
        for (kind, name, pattern), bindings in grouped.items()
    )
    return make(
        cls,
        throttle_time=0,
        error_code=resp.error_code,
        error_message=resp.error_message,
        resources=resources,
    )
