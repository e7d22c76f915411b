"""Control characters a model (or a log) writes are shown, never passed on raw: every C0 and C1 control, DEL, the
line separators and the bidi controls, on one line or keeping the line breaks; JSON stays the same JSON."""

import json
import re

import pytest

from wizard.core.visible import json_visible, visible

HOSTILE = "\x1b[2J\x1b]0;pwned\x07"
RAW = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def test_an_escape_sequence_is_shown_not_obeyed():
    assert visible(f"ok {HOSTILE} done") == "ok \\x1b[2J\\x1b]0;pwned\\x07 done"


@pytest.mark.parametrize("code", [*range(0x20), *range(0x7F, 0xA0), 0x2028, 0x2029, 0x202E, 0x2066, 0x2069])
def test_no_control_character_survives(code):
    for newline in ("⏎ ", None):
        out = visible(f"a{chr(code)}b", newline=newline)
        if newline is None and code == 0x0A:
            assert out == "a\nb"
        else:
            assert not RAW.search(out) and len(out) > 2, (code, out)  # shown as something, not dropped


def test_line_breaks_become_the_marker_or_stay_and_tabs_stay_when_asked():
    assert visible("one\ntwo\r\nthree\rfour\tfive") == "one⏎ two⏎ three\\rfour\\tfive"
    assert visible("one\ntwo\r\nthree\tfour", newline=None, tabs=True) == "one\ntwo\nthree\tfour"
    assert visible("C1 \x9b31m and DEL \x7f, NUL \x00") == "C1 \\x9b31m and DEL \\x7f, NUL \\x00"
    assert visible("right-to-left \u202eevil") == "right-to-left \\u202eevil"


def test_ordinary_text_is_returned_as_it_is():
    text = "娜塔莉亚 sold 48/2 = 24 clips. Ω ≥ 0 � #### 72"
    assert visible(text) is text


def test_json_keeps_its_meaning_and_loses_the_raw_controls():
    doc = {"prompt": "a\x9bb\u2028c\x7f", "esc": HOSTILE, "cjk": "答案是 72"}
    text = json_visible(json.dumps(doc, ensure_ascii=False))
    assert json.loads(text) == doc and not RAW.search(text) and "答案是 72" in text
