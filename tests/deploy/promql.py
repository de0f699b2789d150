"""Finds the vector selectors (metric names and their label matchers) in a PromQL expression.

promtool 2.42 checks syntax but cannot print a parse tree, so a small tokenizer does this: strings,
`{...}` matchers and `[...]` ranges are read whole; an identifier is a metric name unless it is a
keyword (any case), a function or aggregation (followed by `(`, `by` or `without`), or a label inside the `(...)` after
by/without/on/ignoring/group_left/group_right. Grafana's `$variables` are replaced by
`grafana_to_promql` first. `tests/deploy/test_promql_names.py` pins its behaviour.
"""

from __future__ import annotations

import re

KEYWORDS = frozenset(
    {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or", "unless", "offset",
     "atan2", "inf", "nan", "start", "end"}
)  # fmt: skip
_GROUPING = frozenset({"by", "without", "on", "ignoring", "group_left", "group_right"})
_TOKEN = re.compile(
    r"""(?P<string>"(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*'|`[^`]*`)
      |(?P<matchers>\{(?:"(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*'|[^}"'])*\})
      |(?P<range>\[[^\]]*\])
      |(?P<number>(?:0x[0-9a-fA-F]+|[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)(?:ms|s|m|h|d|w|y)?)
      |(?P<ident>[A-Za-z_:][A-Za-z0-9_:]*)
      |(?P<space>\s+)
      |(?P<other>.)""",
    re.VERBOSE,
)

GRAFANA_INTERVALS = ("$__rate_interval", "$__interval", "$__range")


def grafana_to_promql(expr: str) -> str:
    """Replace Grafana's interval and template variables so that the expression is plain PromQL."""
    for name in GRAFANA_INTERVALS:
        expr = expr.replace(name, "5m")
    return re.sub(r"\$\{?\w+\}?", "x", expr)


def selectors(expr: str) -> list[str]:
    """Return each vector selector of `expr` as written (`name{matchers}`, `name` or `{matchers}`)."""
    tokens = [(m.lastgroup, m.group()) for m in _TOKEN.finditer(expr) if m.lastgroup != "space"]
    out: list[str] = []
    i = 0
    while i < len(tokens):
        kind, text = tokens[i]
        nxt = tokens[i + 1] if i + 1 < len(tokens) else (None, "")
        if kind == "ident" and text.lower() in _GROUPING and nxt[1] == "(":
            depth, i = 0, i + 1
            while i < len(tokens):  # skip the label list
                depth += {"(": 1, ")": -1}.get(tokens[i][1], 0)
                if depth == 0:
                    break
                i += 1
        elif (
            kind == "ident"
            and text.lower() not in KEYWORDS
            and nxt[1] != "("
            and nxt[1].lower() not in ("by", "without")
        ):
            if nxt[0] == "matchers":
                out.append(text + nxt[1])
                i += 1
            else:
                out.append(text)
        elif kind == "matchers":
            out.append(text)
        i += 1
    return out


def metric_names(expr: str) -> set[str]:
    """Return the metric names `expr` selects (from `name{...}` and from `{__name__="..."}`)."""
    names: set[str] = set()
    for sel in selectors(expr):
        head = sel.split("{", 1)[0]
        if head:
            names.add(head)
        else:
            names.update(re.findall(r"__name__\s*=\s*\"([^\"]+)\"", sel))
    return names
