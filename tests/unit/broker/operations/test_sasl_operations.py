"""The SASL APIs' operations (broker/operations/sasl_{handshake,authenticate}.py), each tested
once, whichever door serves it: called directly with a SASL listener's `Session` on a context
holding a real SaslService (broker/security/sasl.py, whose state machine decides; its failure
delay an injected sleep the test records). The exchange over real sockets through both doors,
with the SASL gate and the close after a failure, is tests/unit/broker/test_sasl_doors.py's;
the codecs test_sasl_codecs.py's.
"""

from __future__ import annotations

import inspect
from types import SimpleNamespace
from typing import Any

from broker.operations import sasl_authenticate, sasl_handshake
from broker.security.sasl import SaslConfig, SaslService, plain_users
from broker.session import SASL_PLAINTEXT, Session
from protocol.errors import (
    IllegalSaslStateError,
    SaslAuthenticationFailedError,
    UnsupportedSaslMechanismError,
    UnsupportedVersionError,
)
from protocol.principal import KafkaPrincipal

JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="secret";'
ENABLED = ("PLAIN", "SCRAM-SHA-512")

# For test_table.py: a request model per API (they check no ACL), on a PLAINTEXT session.
SAMPLES: dict[str, Any] = {
    "SaslHandshake": sasl_handshake.SaslHandshake("PLAIN"),
    "SaslAuthenticate": sasl_authenticate.SaslAuthenticate(b"\x00alice\x00secret"),
}


class Delays:
    """The failure delay: each sleep recorded, none waited."""

    def __init__(self) -> None:
        self.slept: list[float] = []

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)


def sasl_context(delays: Delays) -> Any:
    config = SaslConfig(ENABLED, plain_users(JAAS), 0, 250)
    return SimpleNamespace(sasl=SaslService(config, lambda m, u: None, lambda: 0, delays.sleep))


def new_session() -> Session:
    return Session.accepted("SASL", SASL_PLAINTEXT, "127.0.0.1", 5555)


async def answer(result: Any) -> Any:
    return await result if inspect.isawaitable(result) else result


async def test_plain_handshake_then_authenticate_authenticates_the_session() -> None:
    delays, session = Delays(), new_session()
    ctx = sasl_context(delays)
    shake = await answer(sasl_handshake.run(ctx, session, sasl_handshake.SaslHandshake("PLAIN")))
    assert (shake.error_code, shake.mechanisms, shake.close_why) == (0, ENABLED, None)
    token = sasl_authenticate.SaslAuthenticate(b"\x00alice\x00secret")
    done = await answer(sasl_authenticate.run(ctx, session, token))
    assert (done.error_code, done.close_why) == (0, None)
    assert session.authenticated and session.principal == KafkaPrincipal.user("alice")
    assert delays.slept == []


async def test_a_wrong_password_is_answered_after_the_failure_delay_and_closes() -> None:
    delays, session = Delays(), new_session()
    ctx = sasl_context(delays)
    await answer(sasl_handshake.run(ctx, session, sasl_handshake.SaslHandshake("PLAIN")))
    wrong = sasl_authenticate.run(ctx, session, sasl_authenticate.SaslAuthenticate(b"\0alice\0x"))
    assert inspect.isawaitable(wrong)  # the answer waits for the delay
    failed = await wrong
    assert failed.error_code == SaslAuthenticationFailedError.code and failed.close_why
    assert "Invalid username or password" in (failed.error_message or "")
    assert delays.slept == [0.25] and not session.authenticated


async def test_an_unsupported_mechanism_lists_the_enabled_ones_then_closes() -> None:
    delays = Delays()
    asked = sasl_handshake.SaslHandshake("GSSAPI")
    refused = await answer(sasl_handshake.run(sasl_context(delays), new_session(), asked))
    assert (refused.error_code, refused.mechanisms) == (UnsupportedSaslMechanismError.code,
                                                        ENABLED)  # fmt: skip
    assert refused.close_why and delays.slept == [0.25]


async def test_raw_tokens_are_refused_unsupported_version_on_a_sasl_listener_only() -> None:
    delays = Delays()
    ctx = sasl_context(delays)
    v0 = sasl_handshake.SaslHandshake("PLAIN", raw_tokens=True)
    refused = await answer(sasl_handshake.run(ctx, new_session(), v0))
    assert (refused.error_code, refused.mechanisms) == (UnsupportedVersionError.code, ENABLED)
    assert refused.close_why == sasl_handshake.V0_REFUSED and delays.slept == [0.25]
    plaintext = await answer(sasl_handshake.run(ctx, Session(), v0))  # KafkaApis' answer
    assert (plaintext.error_code, plaintext.mechanisms) == (IllegalSaslStateError.code, ())
    assert plaintext.close_why is None


async def test_a_connection_not_on_a_sasl_listener_gets_illegal_sasl_state_and_goes_on() -> None:
    ctx = sasl_context(Delays())
    shake = await answer(sasl_handshake.run(ctx, Session(), sasl_handshake.SaslHandshake("PLAIN")))
    assert (shake.error_code, shake.mechanisms, shake.close_why) == (
        IllegalSaslStateError.code, (), None)  # fmt: skip
    auth = await answer(
        sasl_authenticate.run(ctx, Session(), sasl_authenticate.SaslAuthenticate(b"x"))
    )
    assert (auth.error_code, auth.close_why) == (IllegalSaslStateError.code, None)
