"""README.md is the front door: short, and every link leads into the documentation site."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
MAX_LINES = 250
# [text](target) and ![alt](target), without a title part
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def _links() -> list[str]:
    return LINK.findall(README.read_text(encoding="utf-8"))


def test_readme_is_short() -> None:
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_LINES, f"README.md has {lines} lines; keep it at most {MAX_LINES}"


def test_readme_links_only_into_existing_docs_pages() -> None:
    links = _links()
    assert links, "README.md should link into the docs"
    for target in links:
        path = target.split("#", 1)[0]
        assert path.startswith("docs/"), f"README.md links outside docs/: {target}"
        assert (ROOT / path).is_file(), f"README.md links to a missing page: {target}"


def test_readme_names_the_test_command_that_ci_runs() -> None:
    text = README.read_text(encoding="utf-8")
    assert "./dev test" in text
    assert "exec ./dev test" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_nothing_points_outside_the_repository() -> None:
    pages = [README, *sorted((ROOT / "docs").rglob("*.md"))]
    outside = [str(p.relative_to(ROOT)) for p in pages if "../shared" in p.read_text("utf-8")]
    assert outside == [], f"pages that refer to ../shared: {outside}"
