"""Every page of the docs (README.md, docs/, and the other READMEs) links only to what exists.

A relative link must name a file or folder of the repository, and a `#fragment` a heading of the
page it names (GitHub's anchors: lower case, punctuation but `-` and `_` dropped, spaces as `-`).
Links to the web are not fetched. Links are read as CommonMark reads them,
with markdown-it-py (pinned in tests/docs/requirements.txt), so text in code spans and blocks is
not taken for a link. scripts/docs_test.sh runs this.
"""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys
import functools
import urllib.parse

import pytest
from markdown_it import MarkdownIt

SOURCE_DIR = pathlib.Path(
    os.environ.get("ACCELSCHED_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[2]))


def repository_files() -> set[pathlib.Path]:
    """Every file git tracks or would track (untracked but not ignored), and every folder
    above one: what a clone has. build/ and node_modules/ are not in it."""
    out = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=SOURCE_DIR, check=True, capture_output=True, text=True).stdout
    root = SOURCE_DIR.resolve()
    files = {root / line for line in out.splitlines() if (root / line).exists()}
    return files | {parent for f in files for parent in f.parents if root in parent.parents}


def pages() -> list[pathlib.Path]:
    """The repository's Markdown files."""
    return sorted(f for f in repository_files() if f.suffix == ".md" and f.is_file())


_MD = MarkdownIt("commonmark").enable("table")


def _inline_tokens(text: str):
    for block in _MD.parse(text):
        for token in block.children or []:
            yield token


def links(text: str) -> list[str]:
    """The targets of the page's links and images, in order."""
    targets = []
    for token in _inline_tokens(text):
        if token.type == "link_open":
            targets.append(token.attrs["href"])
        elif token.type == "image":
            targets.append(token.attrs["src"])
    return targets


def anchor(heading: str) -> str:
    """GitHub's anchor of a heading's text."""
    text = heading.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(text: str) -> set[str]:
    """Every heading's anchor (a repeated heading gets -1, -2, ... as on GitHub), and every
    `<a name="...">` of the page's HTML (protoc-gen-doc's reference writes those)."""
    seen: dict[str, int] = {}
    out = set(re.findall(r'<a name="([^"]+)"', text))
    tokens = _MD.parse(text)
    for i, token in enumerate(tokens):
        if token.type != "heading_open":
            continue
        inline = tokens[i + 1]
        plain = "".join(child.content for child in inline.children
                        if child.type in ("text", "code_inline"))
        base = anchor(plain)
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


@functools.lru_cache(maxsize=None)
def _files() -> frozenset[pathlib.Path]:
    return frozenset(repository_files())


@functools.lru_cache(maxsize=None)
def _anchors_of(file: pathlib.Path) -> frozenset[str]:
    return frozenset(anchors(file.read_text()))


def broken_links(page: pathlib.Path) -> list[str]:
    """What is wrong with each link of `page`, one line each."""
    text = page.read_text()
    where = page.relative_to(SOURCE_DIR.resolve())
    problems = []
    for target in links(text):
        parsed = urllib.parse.urlsplit(target)
        if parsed.scheme in ("http", "https", "mailto"):
            continue  # outside the repository: not fetched (CI reaches no web)
        if parsed.scheme:
            problems.append(f"{where}: {target}: an unknown scheme")
            continue
        path = urllib.parse.unquote(parsed.path)
        if path.startswith("/"):
            problems.append(f"{where}: {target}: an absolute path (write it relative to the page)")
            continue
        file = (page.parent / path).resolve() if path else page.resolve()
        root = SOURCE_DIR.resolve()
        if root not in file.parents and file != root:
            problems.append(f"{where}: {target}: outside the repository")
            continue
        if file != root and file not in _files():
            problems.append(f"{where}: {target}: no such file in the repository")
            continue
        if parsed.fragment:
            if file.suffix != ".md":
                problems.append(f"{where}: {target}: a fragment of a file that is not Markdown")
            elif parsed.fragment not in _anchors_of(file):
                problems.append(f"{where}: {target}: {file.name} has no heading "
                                f"#{parsed.fragment}")
    return problems


def test_the_docs_have_pages():
    names = {p.relative_to(SOURCE_DIR.resolve()).as_posix() for p in pages()}
    for expected in ("README.md", "docs/README.md", "docs/reference/api.md"):
        assert expected in names


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(SOURCE_DIR.resolve())))
def test_links_resolve(page):
    problems = broken_links(page)
    assert not problems, "\n".join(problems)


def test_every_docs_page_is_reached_from_the_readme():
    """A page that no chain of links from README.md reaches is a page nobody finds."""
    reached, todo = set(), [(SOURCE_DIR / "README.md").resolve()]
    while todo:
        page = todo.pop()
        if page in reached or page.suffix != ".md" or not page.is_file():
            continue
        reached.add(page)
        for target in links(page.read_text()):
            parsed = urllib.parse.urlsplit(target)
            if not parsed.scheme and parsed.path:
                todo.append((page.parent / urllib.parse.unquote(parsed.path)).resolve())
    orphans = [p.relative_to(SOURCE_DIR.resolve()).as_posix() for p in pages()
               if p.is_relative_to((SOURCE_DIR / "docs").resolve()) and p not in reached]
    assert not orphans, f"docs pages no chain of links from README.md reaches: {orphans}"


def fence_problems(page: pathlib.Path) -> list[str]:
    """A line that opens a code fence with more than a language word (a sentence that starts
    with three backticks) turns the rest of the page into code."""
    where = page.relative_to(SOURCE_DIR.resolve())
    return [f"{where}:{n}: a code fence with more than a language: {line.strip()}"
            for n, line in enumerate(page.read_text().splitlines(), start=1)
            if line.lstrip().startswith("```") and len(line.strip()[3:].split()) > 1]


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(SOURCE_DIR.resolve())))
def test_code_fences_are_fences(page):
    problems = fence_problems(page)
    assert not problems, "\n".join(problems)


# The checker itself, on pages made up here: each kind of broken link is seen.


def _check(tmp_path, monkeypatch, files: dict[str, str]) -> list[str]:
    repo = tmp_path / "repo"
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    (tmp_path / "outside.md").write_text("# Outside\n")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / ".gitignore").write_text("ignored/\n")
    (repo / "ignored").mkdir()
    (repo / "ignored" / "x.md").write_text("# X\n")
    monkeypatch.setattr(sys.modules[__name__], "SOURCE_DIR", repo)
    _files.cache_clear()
    _anchors_of.cache_clear()
    try:
        return broken_links((repo / "a.md").resolve())
    finally:
        _files.cache_clear()
        _anchors_of.cache_clear()


def test_the_checker_finds_each_kind_of_broken_link(tmp_path, monkeypatch):
    problems = _check(tmp_path, monkeypatch, {
        "a.md": ("# A\n\n[ok](b.md#the-heading) [self](#a) [gone](missing.md) "
                 "[bad anchor](b.md#nothing) [web](https://example.com) [odd](ftp://x) "
                 "[up](../outside.md) [root](/b.md) [built](ignored/x.md) "
                 "[code](c.txt#l1) `[not a link](nowhere.md)`\n\n"
                 "```\n[in a block](nowhere.md)\n```\n"),
        "b.md": "# B\n\n## The heading\n",
        "c.txt": "text\n",
    })
    assert problems == [
        "a.md: missing.md: no such file in the repository",
        "a.md: b.md#nothing: b.md has no heading #nothing",
        "a.md: ftp://x: an unknown scheme",
        "a.md: ../outside.md: outside the repository",
        "a.md: /b.md: an absolute path (write it relative to the page)",
        "a.md: ignored/x.md: no such file in the repository",
        "a.md: c.txt#l1: a fragment of a file that is not Markdown",
    ]


def test_a_sentence_that_starts_with_backticks_is_found(tmp_path, monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "SOURCE_DIR", tmp_path)
    page = tmp_path / "p.md"
    page.write_text("Text\n```sh block of the docs\n\n```sh\nls\n```\n")
    assert fence_problems(page.resolve()) == [
        "p.md:2: a code fence with more than a language: ```sh block of the docs"]


def test_anchors_follow_github():
    assert anchor("Quotas and cohorts") == "quotas-and-cohorts"
    assert anchor("The node agent (`agent/`, `build/accelsched-agent`)") == \
        "the-node-agent-agent-buildaccelsched-agent"
    assert anchors("# X\n\n## X\n") == {"x", "x-1"}
    assert anchors('<a name="accelsched-v1-Node"></a>\n\n### Node\n') == {
        "accelsched-v1-Node", "node"}
