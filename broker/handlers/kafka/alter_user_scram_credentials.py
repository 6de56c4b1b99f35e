"""AlterUserScramCredentials (51), v0: the native AlterUserScramCredentials (KIP-554), answered
in Kafka's shape."""

from __future__ import annotations

from typing import Any

from broker.context import BrokerContext
from broker.deferred import then
from broker.handlers import alter_user_scram_credentials as native
from broker.handlers.kafka._adapt import as_native
from broker.session import Session
from protocol.api.scram import (
    ALTER_USER_SCRAM_CREDENTIALS,
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsResponse,
    ScramCredentialDeletion,
    ScramCredentialUpsertion,
)
from protocol.kafka.codec import KafkaRequest, make, nested, response_class


def handle(ctx: BrokerContext, request: KafkaRequest, session: Session) -> Any:
    req = request.body
    native_req = AlterUserScramCredentialsRequest(
        deletions=[ScramCredentialDeletion(d.name, int(d.mechanism)) for d in req.deletions],
        upsertions=[
            ScramCredentialUpsertion(
                u.name, int(u.mechanism), int(u.iterations), bytes(u.salt), bytes(u.salted_password)
            )
            for u in req.upsertions
        ],
    )
    result = native.handle(
        ctx, as_native(ALTER_USER_SCRAM_CREDENTIALS, native_req, request), session
    )
    return then(result, lambda r: _answer(request.header.api_version, r))


def _answer(version: int, resp: AlterUserScramCredentialsResponse) -> Any:
    cls = response_class(ALTER_USER_SCRAM_CREDENTIALS.key, version)
    result_cls = nested(cls, "AlterUserScramCredentialsResult")
    results = tuple(
        make(result_cls, user=r.user, error_code=r.error_code, error_message=r.error_message)
        for r in resp.results
    )
    return make(cls, throttle_time=0, results=results)
