"""Override values written by the wizard read back as the same values in Hydra's own parser."""

import math

from hypothesis import given
from hypothesis import strategies as st

from wizard.core.verl.overrides import OverrideSyntaxError, parse_override, render_value, same_value

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**12), max_value=10**12),
    st.floats(allow_nan=False, allow_infinity=False, width=64),
    st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), max_size=20),
)
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4), max_leaves=8)


@given(values)
def test_render_then_hydra_parse_gives_back_the_value(value):
    parsed = parse_override("some.key=" + render_value(value)).value()
    assert same_value(parsed, value), (value, render_value(value), parsed)


def test_strings_that_look_like_other_types_are_quoted():
    for text in ["1e-6", "True", "null", "64", "[1]", "a,b", "a b", "it's"]:
        rendered = render_value(text)
        assert parse_override("k=" + rendered).value() == text
        assert isinstance(parse_override("k=" + rendered).value(), str)


def test_nan_round_trips():
    assert math.isnan(parse_override("k=" + render_value(float("nan"))).value())


def test_a_broken_override_gets_hydras_reason_on_one_line():
    try:
        parse_override("data.train_batch_size=[1")
    except OverrideSyntaxError as exc:
        assert "\n" not in str(exc) and "[1" in str(exc)
    else:
        raise AssertionError("expected a syntax error")
