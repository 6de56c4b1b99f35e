"""The native door's codecs of the SCRAM credential APIs (KIP-554; see
broker/codecs/native/__init__.py): protocol/api/scram.py's messages are Kafka's v0 fields, so
these only change containers."""

from __future__ import annotations

from broker.codecs import Codec
from broker.operations import alter_user_scram_credentials as alter
from broker.operations import describe_user_scram_credentials as describe
from protocol.api import scram
from protocol.codec import Request

# ----- AlterUserScramCredentials --------------------------------------------------------------


def _alter_in(request: Request) -> alter.AlterUserScramCredentials:
    req: scram.AlterUserScramCredentialsRequest = request.body
    return alter.AlterUserScramCredentials(tuple(req.deletions), tuple(req.upsertions))


def _alter_out(
    request: Request, result: alter.AlterUserScramCredentialsResult
) -> scram.AlterUserScramCredentialsResponse:
    return scram.AlterUserScramCredentialsResponse([
        scram.AlterUserScramCredentialsResult(r.user, r.error_code, r.error_message)
        for r in result.results
    ])  # fmt: skip


ALTER_USER_SCRAM_CREDENTIALS = Codec(_alter_in, _alter_out)

# ----- DescribeUserScramCredentials -----------------------------------------------------------


def _describe_in(request: Request) -> describe.DescribeUserScramCredentials:
    req: scram.DescribeUserScramCredentialsRequest = request.body
    return describe.DescribeUserScramCredentials(None if req.users is None else tuple(req.users))


def _describe_out(
    request: Request, result: describe.DescribeUserScramCredentialsResult
) -> scram.DescribeUserScramCredentialsResponse:
    return scram.DescribeUserScramCredentialsResponse(
        result.error_code, result.error_message, list(result.results)
    )


DESCRIBE_USER_SCRAM_CREDENTIALS = Codec(_describe_in, _describe_out)
