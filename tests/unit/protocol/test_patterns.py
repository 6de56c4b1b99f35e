"""protocol/patterns.py: RE2's syntax and full matches, as Kafka's RE2/J."""

import pytest

from protocol.patterns import PatternError, compile_pattern, full_match


def test_a_pattern_matches_the_whole_name() -> None:
    assert full_match("orders-.*", "orders-eu")
    assert not full_match("orders", "orders-eu")
    assert full_match("", "")
    assert full_match("t[0-9]+|x", "x")


@pytest.mark.parametrize(
    ("pattern", "reason"),
    [("(", "missing ): ("), (r"(a)\1", r"invalid escape sequence: \1"),
     ("a(?<=b)", "invalid perl operator: (?<=")],
)  # fmt: skip
def test_what_re2_refuses_is_refused_with_its_reason(pattern: str, reason: str) -> None:
    with pytest.raises(PatternError) as err:
        compile_pattern(pattern)
    assert str(err.value) == reason


def test_a_pattern_that_backtracks_forever_in_python_re_matches_in_linear_time() -> None:
    # Python's `re` takes about 2**60 steps on this; RE2 answers at once (the loop stays free)
    assert not full_match("(a+)+b", "a" * 60 + "c")
    assert full_match("(a+)+b", "a" * 60 + "b")
