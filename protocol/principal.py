"""Who is asking: Kafka's principal, "<type>:<name>" (almost always "User:<name>").

A connection's principal comes from how it authenticated (broker/session.py): SASL gives
User:<username>, a client certificate gives User:<mapped subject> (broker/security/tls.py), and
a connection that did neither is User:ANONYMOUS, as in Kafka. ACLs (protocol/acl.py) name
principals in the same text form; `User:*` in an ACL matches every user.
"""

from __future__ import annotations

from typing import NamedTuple

from protocol.errors import InvalidRequestError

USER_TYPE = "User"


class KafkaPrincipal(NamedTuple):
    type: str
    name: str

    def __str__(self) -> str:
        return f"{self.type}:{self.name}"

    @classmethod
    def parse(cls, text: str) -> KafkaPrincipal:
        """ "User:alice" -> KafkaPrincipal("User", "alice"); InvalidRequestError without a type."""
        kind, sep, name = text.partition(":")
        if not sep or not kind or not name:
            raise InvalidRequestError(f"principal {text!r} is not of the form <type>:<name>")
        return cls(kind, name)

    @classmethod
    def user(cls, name: str) -> KafkaPrincipal:
        return cls(USER_TYPE, name)


ANONYMOUS = KafkaPrincipal(USER_TYPE, "ANONYMOUS")
