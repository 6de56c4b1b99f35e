"""Hypothesis strategies for odradek messages, built from their type hints.

`message_strategy(cls)` reads a message dataclass's field types and builds one strategy per
type the schema supports (int, bool, float, str, bytes, Records, X | None, list[X],
dict[str, X], nested messages), so every API registered now or later gets round-trip tests
without a hand-written generator.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any

from hypothesis import strategies as st

from protocol.schema import Records

INT64_MIN = -(2**63)
UINT64_MAX = 2**64 - 1  # msgpack carries integers in [-2**63, 2**64 - 1]

_SIMPLE: dict[Any, st.SearchStrategy[Any]] = {
    int: st.integers(INT64_MIN, UINT64_MAX),
    bool: st.booleans(),
    float: st.floats(allow_nan=False),  # NaN != NaN would fail equality, not the codec
    str: st.text(max_size=12),
    bytes: st.binary(max_size=24),
    Records: st.binary(max_size=64),
}


def strategy_for(tp: Any) -> st.SearchStrategy[Any]:
    """A strategy for values of the schema type `tp`."""
    if dataclasses.is_dataclass(tp):
        return message_strategy(tp)  # type: ignore[arg-type]
    if tp in _SIMPLE:
        return _SIMPLE[tp]
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is list:
        return st.lists(strategy_for(args[0]), max_size=3)
    if origin is dict:
        assert args[0] is str, f"message maps have str keys, not {args[0]}"
        return st.dictionaries(st.text(max_size=8), strategy_for(args[1]), max_size=3)
    if origin in (types.UnionType, typing.Union):
        (inner,) = [a for a in args if a is not type(None)]
        return st.none() | strategy_for(inner)
    raise TypeError(f"no strategy for schema type {tp!r}")


def message_strategy(cls: type) -> st.SearchStrategy[Any]:
    hints = typing.get_type_hints(cls)
    fields = [strategy_for(hints[f.name]) for f in dataclasses.fields(cls)]
    return st.builds(cls, *fields)
