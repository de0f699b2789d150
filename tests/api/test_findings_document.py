"""The evaluator's findings document (`api.findings`): bounded messages, a version readers check."""

from __future__ import annotations

import json

import pydantic
import pytest

from trainguard.api import findings


def test_a_long_message_is_cut_to_the_bound_with_an_ellipsis() -> None:
    long = "x" * (findings.MAX_MESSAGE_CHARS + 100)
    cut = findings.cut(long)
    assert len(cut) == findings.MAX_MESSAGE_CHARS and cut.endswith("…")
    assert findings.RuleFinding(rule="r", message=cut).message == cut
    assert findings.cut("short") == "short"
    with pytest.raises(pydantic.ValidationError):
        findings.RuleFinding(rule="r", message=long)


@pytest.mark.parametrize("char", ["m", "\U0001f525"], ids=["ascii", "escaped-as-a-surrogate-pair"])
def test_a_document_holds_at_most_max_rules_findings_and_fits_the_readers_bound(char: str) -> None:
    entry = findings.RuleFinding(rule="r" * 60, step=1 << 40, rank=1 << 20, severity="critical",
                                 message=char * findings.MAX_MESSAGE_CHARS, category="loss", time=1.7e9)  # fmt: skip
    full = findings.FindingsDocument(
        last_step=1 << 40, ranks=list(range(64)), findings=[entry] * findings.MAX_RULES
    )
    # As the evaluator sends it (`sidecar/findings.document_bytes`: json.dumps, non-ASCII escaped).
    assert len(json.dumps(full.model_dump(mode="json"), separators=(",", ":")).encode()) < findings.MAX_BYTES
    with pytest.raises(pydantic.ValidationError):
        findings.FindingsDocument(findings=[entry] * (findings.MAX_RULES + 1))
