"""The Kafka door's codecs of the SCRAM credential APIs, v0 (KIP-554; see
broker/codecs/kafka/__init__.py). A null user list (describe every user) and an empty one mean
the same, as Kafka."""

from __future__ import annotations

from typing import Any

from broker.codecs import Codec
from broker.operations import alter_user_scram_credentials as alter
from broker.operations import describe_user_scram_credentials as describe
from protocol.api.scram import ScramCredentialDeletion, ScramCredentialUpsertion
from protocol.kafka import versions as v
from protocol.kafka.codec import KafkaRequest, make, nested, response_class

# ----- AlterUserScramCredentials (51) ---------------------------------------------------------


def _alter_in(request: KafkaRequest) -> alter.AlterUserScramCredentials:
    req = request.body
    return alter.AlterUserScramCredentials(
        tuple(ScramCredentialDeletion(d.name, int(d.mechanism)) for d in req.deletions),
        tuple(ScramCredentialUpsertion(u.name, int(u.mechanism), int(u.iterations),
                                       bytes(u.salt), bytes(u.salted_password))
              for u in req.upsertions),
    )  # fmt: skip


def _alter_out(request: KafkaRequest, result: alter.AlterUserScramCredentialsResult) -> Any:
    cls = response_class(v.ALTER_USER_SCRAM_CREDENTIALS, request.header.api_version)
    result_cls = nested(cls, "AlterUserScramCredentialsResult")
    return make(cls, throttle_time=0, results=tuple(
        make(result_cls, user=r.user, error_code=r.error_code, error_message=r.error_message)
        for r in result.results
    ))  # fmt: skip


ALTER_USER_SCRAM_CREDENTIALS = Codec(_alter_in, _alter_out)

# ----- DescribeUserScramCredentials (50) ------------------------------------------------------


def _describe_in(request: KafkaRequest) -> describe.DescribeUserScramCredentials:
    users = request.body.users
    return describe.DescribeUserScramCredentials(
        None if users is None else tuple(u.name for u in users)
    )


def _describe_out(
    request: KafkaRequest, result: describe.DescribeUserScramCredentialsResult
) -> Any:
    cls = response_class(v.DESCRIBE_USER_SCRAM_CREDENTIALS, request.header.api_version)
    result_cls = nested(cls, "DescribeUserScramCredentialsResult")
    info_cls = nested(cls, "CredentialInfo")
    results = tuple(
        make(result_cls, user=r.user, error_code=r.error_code, error_message=r.error_message,
             credential_infos=tuple(make(info_cls, mechanism=i.mechanism,
                                         iterations=i.iterations)
                                    for i in r.credential_infos))
        for r in result.results
    )  # fmt: skip
    return make(cls, throttle_time=0, error_code=result.error_code,
                error_message=result.error_message, results=results)  # fmt: skip


DESCRIBE_USER_SCRAM_CREDENTIALS = Codec(_describe_in, _describe_out)
