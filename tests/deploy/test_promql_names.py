"""The PromQL selector finder used to check dashboards and alerts against the metrics we export."""

from __future__ import annotations

import pytest

from tests.deploy.promql import grafana_to_promql, metric_names, selectors


@pytest.mark.parametrize(
    "expr, expected",
    [
        ("up", ["up"]),
        ('up{job="a"} == 0', ['up{job="a"}']),
        (
            "max by (namespace, debugjob, pod, rule) (trainguard_rule_triggered) == 1",
            ["trainguard_rule_triggered"],
        ),
        ("sum(rate(foo_total[5m])) by (le) / on (job) group_left (instance) bar", ["foo_total", "bar"]),
        (
            'histogram_quantile(0.95, sum by (le) (rate(x_bucket{ns=~"a|b", l="}{"}[5m])))',
            ['x_bucket{ns=~"a|b", l="}{"}'],
        ),
        ('label_replace(up, "dst", "$1", "src", "(.*)") offset 5m', ["up"]),
        ("a unless b == bool 1 and on() c or vector(0)", ["a", "b", "c"]),
        (
            '{__name__="trainguard_training_step", pod="p"} * 1e3 + 0x1f',
            ['{__name__="trainguard_training_step", pod="p"}'],
        ),
        ("time() - last_ts_seconds > 2h", ["last_ts_seconds"]),
        ('absent(up{job="x"} == 1)', ['up{job="x"}']),
        ("count(max by (rule) (r) == 1) or vector(0)", ["r"]),
        ("sum without (pod) (inf_metric) > Inf", ["inf_metric"]),
        ("rate(ns:recorded:rate5m[1m])", ["ns:recorded:rate5m"]),
    ],
)
def test_selectors_are_found_and_functions_keywords_and_labels_are_not(
    expr: str, expected: list[str]
) -> None:
    assert selectors(expr) == expected


def test_metric_names_come_from_names_and_name_matchers() -> None:
    assert metric_names('a{x="1"} / {__name__="b"}') == {"a", "b"}


def test_grafana_variables_become_plain_promql() -> None:
    expr = 'rate(m{namespace=~"$namespace", pod=~"${pod}"}[$__rate_interval]) * $__interval'
    assert grafana_to_promql(expr) == 'rate(m{namespace=~"x", pod=~"x"}[5m]) * 5m'
