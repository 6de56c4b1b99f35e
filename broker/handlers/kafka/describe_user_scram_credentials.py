"""DescribeUserScramCredentials (50), v0: the native DescribeUserScramCredentials (KIP-554),
answered in Kafka's shape."""

from __future__ import annotations

from typing import Any

from broker.context import BrokerContext
from broker.deferred import then
from broker.handlers import describe_user_scram_credentials as native
from broker.handlers.kafka._adapt import as_native
from broker.session import Session
from protocol.api.scram import (
    DESCRIBE_USER_SCRAM_CREDENTIALS,
    DescribeUserScramCredentialsRequest,
    DescribeUserScramCredentialsResponse,
)
from protocol.kafka.codec import KafkaRequest, make, nested, response_class


def handle(ctx: BrokerContext, request: KafkaRequest, session: Session) -> Any:
    users = request.body.users
    native_req = DescribeUserScramCredentialsRequest(
        None if users is None else [u.name for u in users]
    )
    spec = DESCRIBE_USER_SCRAM_CREDENTIALS
    result = native.handle(ctx, as_native(spec, native_req, request), session)
    return then(result, lambda r: _answer(request.header.api_version, r))


def _answer(version: int, resp: DescribeUserScramCredentialsResponse) -> Any:
    cls = response_class(DESCRIBE_USER_SCRAM_CREDENTIALS.key, version)
    result_cls = nested(cls, "DescribeUserScramCredentialsResult")
    info_cls = nested(cls, "CredentialInfo")
    results = tuple(
        make(
            result_cls,
            user=r.user,
            error_code=r.error_code,
            error_message=r.error_message,
            credential_infos=tuple(
                make(info_cls, mechanism=i.mechanism, iterations=i.iterations)
                for i in r.credential_infos
            ),
        )
        for r in resp.results
    )
    return make(
        cls,
        throttle_time=0,
        error_code=resp.error_code,
        error_message=resp.error_message,
        results=results,
    )
