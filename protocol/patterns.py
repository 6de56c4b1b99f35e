"""Kafka's server-side regular expressions: RE2 syntax and linear-time matching.

Kafka matches a KIP-848 consumer's `SubscribedTopicRegex` and ListTransactions' v2
`TransactionalIdPattern` (KIP-1152) with RE2/J, a port of RE2. RE2 (google-re2 here) has the
same syntax: no backreferences or look-around, which are refused at compile time, and matching
in time linear in the input. That last point matters more here than in Kafka: a pattern is
matched on the broker's one event loop, where a backtracking engine given `(a+)+b` against a
long name would hold every partition of the broker, not one request thread.

`compile_pattern` caches compiled patterns (a group's members usually share one) and raises
`PatternError` with RE2's own message for a pattern RE2 refuses. Matching is a full match of
the whole name, as Kafka's `matcher(name).matches()`.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Protocol

import re2

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # RE2 would write each refused pattern to stderr: the caller answers


class Pattern(Protocol):
    def fullmatch(self, text: str) -> object | None: ...


class PatternError(ValueError):
    """A pattern RE2 does not accept (the message is RE2's reason)."""


@lru_cache(maxsize=1024)
def compile_pattern(pattern: str) -> Pattern:
    try:
        compiled: Pattern = re2.compile(pattern, _OPTIONS)
        return compiled
    except re2.error as exc:
        reason = exc.args[0] if exc.args else exc
        raise PatternError(reason.decode() if isinstance(reason, bytes) else str(reason)) from None


def full_match(pattern: str, name: str) -> bool:
    """Whether `pattern` matches the whole of `name` (compile_pattern's errors propagate)."""
    return compile_pattern(pattern).fullmatch(name) is not None
