#!/usr/bin/env python3
"""Every relative link and image in the project's prose resolves.

Checks README.md, docs/*.md, models/README.md and results/**/README.md: each relative link or
image target must name an existing file or folder, and a `#anchor` must name a heading of the
target Markdown file (GitHub's heading ids). Links to other sites (http:, https:, mailto:) are
not fetched. Code blocks and inline code are skipped. Standard library only.

Usage: links_test.py [SOURCE_DIR]   (default: two folders above this file). Exit 1 on a broken link.
"""
import os
import re
import sys
import unittest
from pathlib import Path

ROOT = Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else Path(__file__).resolve().parents[2]

# [text](target "title") and ![alt](target); the target may be wrapped in <...>.
INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*(<[^>]*>|[^)\s]+)(?:\s+\"[^\"]*\")?\s*\)")
# [label]: target
REFERENCE_DEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)")
# <img src="..."> and <a href="...">
HTML_LINK = re.compile(r"<(?:img|a)\b[^>]*?\b(?:src|href)=\"([^\"]+)\"", re.IGNORECASE)
EXTERNAL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
FENCE = re.compile(r"^\s{0,3}(```|~~~)")
INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1")
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")


def documents(root):
    found = [root / "README.md", root / "models" / "README.md"]
    found += sorted((root / "docs").glob("*.md"))
    found += sorted((root / "results").rglob("README.md"))
    return [path for path in found if path.is_file()]


def prose_lines(text):
    """(line number, line) outside fenced code blocks, with inline code removed."""
    fence = None
    for number, line in enumerate(text.splitlines(), start=1):
        match = FENCE.match(line)
        if match:
            if fence is None:
                fence = match.group(1)
            elif match.group(1) == fence:
                fence = None
            continue
        if fence is None:
            yield number, INLINE_CODE.sub("", line)


def links(text):
    for number, line in prose_lines(text):
        for pattern in (INLINE_LINK, REFERENCE_DEF, HTML_LINK):
            for match in pattern.finditer(line):
                target = match.group(1)
                if target.startswith("<") and target.endswith(">"):
                    target = target[1:-1]
                yield number, target


def slug(heading):
    """GitHub's id for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text only
    text = re.sub(r"<[^>]+>", "", text).replace("`", "").lower()
    text = "".join(ch for ch in text if ch.isalnum() or ch in " -_")
    return text.replace(" ", "-")


def anchors(path):
    seen = {}
    ids = set()
    for _, line in prose_lines(path.read_text(encoding="utf-8")):
        match = HEADING.match(line)
        if not match:
            continue
        base = slug(match.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        ids.add(base if count == 0 else f"{base}-{count}")
    return ids


def broken_links(root):
    problems = []
    for doc in documents(root):
        text = doc.read_text(encoding="utf-8")
        for number, target in links(text):
            if EXTERNAL.match(target):
                continue
            path_part, _, anchor = target.partition("#")
            where = f"{doc.relative_to(root)}:{number}: {target}"
            resolved = (doc.parent / path_part).resolve() if path_part else doc
            if path_part and not resolved.exists():
                problems.append(f"{where}: no such file")
                continue
            try:
                resolved.relative_to(root)
            except ValueError:
                problems.append(f"{where}: points outside the repository")
                continue
            if anchor and resolved.is_file() and resolved.suffix == ".md":
                if anchor.lower() not in anchors(resolved):
                    problems.append(f"{where}: no heading '#{anchor}' in {resolved.relative_to(root)}")
    return problems


class LinkTest(unittest.TestCase):
    def test_slug_matches_github(self):
        self.assertEqual(slug("How it measures"), "how-it-measures")
        self.assertEqual(slug("Main-memory spells"), "main-memory-spells")
        self.assertEqual(slug("`compare`: machines on cost"), "compare-machines-on-cost")
        self.assertEqual(slug("Estimate a model (zoo, ONNX)"), "estimate-a-model-zoo-onnx")

    def test_code_is_not_prose(self):
        text = "see [a](a.md)\n```\n[b](b.md)\n```\nand `[c](c.md)` and ![d](d.png)\n"
        self.assertEqual([target for _, target in links(text)], ["a.md", "d.png"])

    def test_documents_are_found(self):
        names = [str(path.relative_to(ROOT)) for path in documents(ROOT)]
        self.assertIn("README.md", names)
        self.assertTrue(any(name.startswith("docs/") for name in names), names)

    def test_every_link_resolves(self):
        problems = broken_links(ROOT)
        self.assertEqual(problems, [], "broken links:\n" + "\n".join(problems))


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]], verbosity=1)
