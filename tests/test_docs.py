"""The documentation site's sources hold together without building it (`make docs` builds it with
`mkdocs build --strict`, in CI too): every page mkdocs.yml's nav names exists and every page is in
the nav, every reference page renders a module that exists, relative links lead to files that
exist, and no line is longer than 300 characters (a table row that long is unreadable in an
editor or a diff: it belongs in a list)."""

import re
from pathlib import Path

import pytest

from tests.harness import ROOT


DOCS = Path(ROOT) / "docs"
MKDOCS = Path(ROOT) / "mkdocs.yml"
LONGEST = 300


def nav_pages() -> list[str]:
    """The pages of mkdocs.yml's nav (`- Title: page.md` or `- page.md`), relative to docs/."""
    nav = MKDOCS.read_text(encoding="utf-8").split("\nnav:\n", 1)[1]
    return re.findall(r"^\s+- (?:[^\n]*?: )?([\w./-]+\.md)\s*$", nav, flags=re.M)


def markdown_pages() -> list[Path]:
    """Every Markdown page the site is built from (docs/grafana/ is excluded from the site)."""
    return sorted(p for p in DOCS.rglob("*.md") if "grafana" not in p.relative_to(DOCS).parts)


def test_every_nav_page_exists_and_every_page_is_in_the_nav():
    pages = nav_pages()
    assert len(pages) == len(set(pages)), "a page is in the nav twice"
    missing = [page for page in pages if not (DOCS / page).is_file()]
    assert not missing, f"mkdocs.yml's nav names pages that do not exist: {missing}"
    left_out = [p.relative_to(DOCS).as_posix() for p in markdown_pages()]
    left_out = [page for page in left_out if page not in pages]
    assert not left_out, f"pages under docs/ missing from mkdocs.yml's nav: {left_out}"


def module_file(name: str) -> Path | None:
    """The source of module `name` (a package's __init__.py), found without importing it."""
    base = Path(ROOT).joinpath(*name.split("."))
    for candidate in (base / "__init__.py", base.with_suffix(".py")):
        if candidate.is_file():
            return candidate
    return None


def test_every_reference_page_names_an_existing_module():
    pages = sorted((DOCS / "reference").glob("*.md"))
    directives = {}
    for page in pages:
        for name in re.findall(r"^::: ([\w.]+)\s*$", page.read_text(encoding="utf-8"), flags=re.M):
            directives[name] = page.name
    assert directives, "no reference page renders a module"
    absent = {name: page for name, page in directives.items() if module_file(name) is None}
    assert not absent, f"reference pages name modules that do not exist: {absent}"
    # One page per module, named after it, so a module's page is found by its name.
    assert {f"{name}.md" for name in directives} == {p.name for p in pages if p.name != "index.md"}
    # The public modules a script reaches are all there.
    for name in ("csadmin.cstorch", "csadmin.cstorch.optim", "csadmin.cstorch.utils.data", "csadmin.client"):
        assert name in directives, name


def test_relative_links_lead_to_files_that_exist():
    broken = []
    for page in markdown_pages():
        # code (fenced blocks, then inline spans) holds no links: `schedulers[i](s)` is a formula
        text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
        text = re.sub(r"`[^`]*`", "", text)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            path = target.split("#", 1)[0]
            if not path or re.match(r"[a-z]+:", path):
                continue
            if not (page.parent / path).exists():
                broken.append(f"{page.relative_to(DOCS)}: {target}")
    assert not broken, broken


def test_no_line_is_longer_than_300_characters():
    long = [f"{page.relative_to(DOCS)}:{number}: {len(line)} characters"
            for page in markdown_pages()
            for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1)
            if len(line) > LONGEST]
    assert not long, long
