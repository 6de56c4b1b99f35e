"""docs/configs.md shows the topic-config registry as it is: every row, every value."""

from __future__ import annotations

from pathlib import Path

from protocol.topic_config import TOPIC_CONFIGS, markdown_table

DOC = Path(__file__).resolve().parents[3] / "docs" / "configs.md"


def test_the_doc_holds_the_registrys_table() -> None:
    text = DOC.read_text()
    table = markdown_table()
    assert "\n".join(table) in text, "regenerate the table: python -m protocol.topic_config"
    for name in TOPIC_CONFIGS:
        assert f"| `{name}` |" in text, name
