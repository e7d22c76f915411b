"""The README renders as written: code blocks closed, every relative link and image pointing at a file here."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_every_code_block_is_closed():
    """An unclosed ``` swallows the rest of the page (the doctor section once disappeared into one: a closing fence
    with text after it on the same line does not close, in CommonMark)."""
    inside, opened = False, 0
    for line_no, line in enumerate(README.splitlines(), start=1):
        stripped = line.strip()
        if not stripped.startswith("```"):
            continue
        if not inside:
            inside, opened = True, line_no
        else:
            assert stripped.strip("`") == "", f"line {line_no}: a closing ``` with text after it does not close"
            inside = False
    assert not inside, f"the code block opened at line {opened} is never closed"


def test_every_relative_link_and_image_exists():
    text = re.sub(r"```.*?```", "", README, flags=re.S)  # links inside code blocks are not links
    targets = re.findall(r"\]\(([^)\s]+)\)", text)
    missing = [t for t in targets if not t.startswith(("http://", "https://", "#", "mailto:"))
               and not (ROOT / t.split("#")[0]).exists()]
    assert missing == [], f"README links to files that are not here: {missing}"
