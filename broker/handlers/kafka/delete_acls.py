"""DeleteAcls (31), v1-v3 as Kafka 4.0: the native DeleteAcls (broker/handlers/
delete_acls.py) answered in Kafka's shape: per filter, the bindings it deleted."""

from __future__ import annotations

from typing import Any

from kio.static.primitive import i8

from broker.context import BrokerContext
from broker.deferred import then
from broker.handlers import delete_acls as native
from broker.handlers.kafka._adapt import as_native
from broker.session import Session
from protocol.api.acls import DELETE_ACLS, AclFilterData, DeleteAclsRequest, DeleteAclsResponse
from protocol.kafka.codec import KafkaRequest, make, nested, response_class


def handle(ctx: BrokerContext, request: KafkaRequest, session: Session) -> Any:
    filters = [
        AclFilterData(
            int(f.resource_type_filter),
            f.resource_name_filter,
            int(f.pattern_type_filter),
            f.principal_filter,
            f.host_filter,
            int(f.operation),
            int(f.permission_type),
        )
        for f in request.body.filters
    ]
    native_req = DeleteAclsRequest(filters)
    result = native.handle(ctx, as_native(DELETE_ACLS, native_req, request), session)
    return then(result, lambda r: _answer(request.header.api_version, r))


def _answer(version: int, resp: DeleteAclsResponse) -> Any:
    cls = response_class(DELETE_ACLS.key, version)
    result_cls, match_cls = (
        nested(cls, "DeleteAclsFilterResult"),
        nested(cls, "DeleteAclsMatchingAcl"),
    )
    results = tuple(
        make(
            result_cls,
            error_code=r.error_code,
            error_message=r.error_message,
            matching_acls=tuple(
                make(
                    match_cls,
                    error_code=0,
                    error_message=None,
                    resource_type=i8(b.resource_type),
                    resource_name=b.name,
                    pattern_type=i8(b.pattern_type),
                    principal=b.principal,
                    host=b.host,
                    operation=i8(b.operation),
                    permission_type=i8(b.permission),
                )
                for b in r.deleted
            ),
        )
        for r in resp.results
    )
    return make(cls, throttle_time=0, filter_results=results)
