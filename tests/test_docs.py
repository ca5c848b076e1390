"""Execute every python code block of docs/*.md (and the README's library examples)."""
import re
from pathlib import Path

import pytest

DOCS = sorted((Path(__file__).resolve().parent.parent / "docs").glob("*.md"))
BLOCK = re.compile(r"```python\n(.*?)```", re.S)


def _blocks():
    for doc in DOCS:
        for i, code in enumerate(BLOCK.findall(doc.read_text())):
            yield pytest.param(code, id=f"{doc.name}#{i}")


@pytest.mark.parametrize("code", list(_blocks()))
def test_doc_block_runs(code):
    exec(compile(code, "<doc>", "exec"), {})


def test_docs_have_code():
    assert len(list(_blocks())) >= 4
