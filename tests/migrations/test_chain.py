"""The revisions form one chain, and each one's docstring names its true parent.

Revision ids are never renumbered (databases record them), so a file's number is not its place
in the chain; what a reader trusts is the docstring's `Revises:` line, checked here against
`down_revision`, and the order listed in `migrations/__init__.py`.
"""

from __future__ import annotations

import re
from pathlib import Path

from alembic.script import Script, ScriptDirectory

import migrations

_ID = r"\d{4}_[a-z_]+"


def _scripts() -> ScriptDirectory:
    return ScriptDirectory(str(Path(migrations.__file__).parent))


def _chain() -> list[Script]:
    """The revisions from base to head, after checking there is exactly one line of them."""
    scripts = _scripts()
    assert scripts.get_bases() == ["0001_foundation"], f"bases: {scripts.get_bases()}"
    assert len(scripts.get_heads()) == 1, f"several heads: {scripts.get_heads()}"
    chain = list(reversed(list(scripts.walk_revisions("base", "heads"))))
    for script in chain:
        assert not script.is_merge_point, f"{script.revision} merges {script.down_revision}"
        assert not script.is_branch_point, f"{script.revision} branches into {script.nextrev}"
        assert not script.branch_labels and not script.dependencies, script.revision
    assert [s.down_revision for s in chain] == [None] + [s.revision for s in chain[:-1]]
    return chain


def _docstring_field(script: Script, field: str) -> str:
    doc = script.module.__doc__ or ""
    found = re.findall(rf"^{field}:[ \t]*(\S*)[ \t]*$", doc, flags=re.M)
    assert len(found) == 1, f"{script.path}: {len(found)} `{field}:` lines in the docstring"
    return str(found[0])


def test_every_revision_file_is_on_the_one_chain() -> None:
    files = {p.stem for p in (Path(migrations.__file__).parent / "versions").glob("v*.py")}
    assert {f"v{s.revision}" for s in _chain()} == files


def test_each_docstring_names_the_revision_and_its_true_parent() -> None:
    wrong = []
    for script in _chain():
        doc = script.module.__doc__ or ""
        if _docstring_field(script, "Revision ID") != script.revision:
            wrong.append(f"{script.revision}: `Revision ID:` says otherwise")
        said = _docstring_field(script, "Revises")
        if said != (script.down_revision or ""):
            wrong.append(
                f"{script.revision}: docstring says {said or 'base'!r}, runs after "
                f"{script.down_revision!r}"
            )
        # prose such as "it runs after 0007_daemon" must agree too
        wrong.extend(
            f"{script.revision}: prose says it runs after {named}"
            for named in re.findall(rf"runs (?:right )?after ({_ID})", doc)
            if named != script.down_revision
        )
    assert wrong == [], "\n".join(wrong)


def test_the_order_documented_in_the_package_is_the_chain() -> None:
    doc = migrations.__doc__ or ""
    block = "".join(line for line in doc.splitlines() if line.startswith("    "))
    listed = re.findall(_ID, block)
    chain = [s.revision for s in _chain()]
    assert len(listed) >= 8 and chain[: len(listed)] == listed, (listed, chain)
    # "from 0008 on, each revision follows the one numbered just below it"
    later = [int(rev[:4]) for rev in chain[chain.index("0008_thresholds") :]]
    assert later == list(range(8, 8 + len(later)))
