"""The doors' codecs: per API and door, how a wire request becomes the operation's request
model (broker/operations/) and its result model becomes the wire response. Nothing else.

    decode(request) -> the operation's request     (a native `Request`, protocol/codec.py, or a
                                                     `KafkaRequest`, protocol/kafka/codec.py)
    encode(request, result) -> the wire response   (a native response dataclass, or a kio
                                                     entity; `request` gives the version)

A codec may drop what its door cannot say (a native LeaveGroup names one member) and fill in
what its door does not send (the native door has no client host), but it decides nothing: no
authorization, no service call, no refusal. Codecs import the operations' models; operations
never import codecs. broker/apis.py's table names each API's codec per door.

native/ holds the native door's codecs (msgpack dataclasses of protocol/api/), kafka/ the
Kafka door's (kio entities through protocol/kafka/codec.py's `make`), each in one module per
family of APIs (groups.py, transactions.py, ...), so an API's two codecs sit in same-named
modules.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Codec:
    decode: Callable[[Any], Any]
    encode: Callable[[Any, Any], Any]
