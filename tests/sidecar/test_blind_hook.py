"""A hook that goes blind (an optimizer it does not know steps the captured parameters) is a `data_gap` while
the run goes on, in the sidecar's status report too, and its END.json counts the steps nobody checked.

A real PyTorch loop writes the run with the real hook; the evaluator follows it in process.
"""

from __future__ import annotations

import torch
from prometheus_client import CollectorRegistry
from torch import nn

import trainguard.torch as tg
from tests.sidecar.runs import registered
from trainguard.sidecar.evaluator import DATA_GAP, Evaluator
from trainguard.sidecar.report_status import build_report


def _train(opt: torch.optim.Optimizer, model: nn.Module, steps: int) -> None:
    for _ in range(steps):
        x = torch.randn(8, 4)
        opt.zero_grad()
        nn.functional.mse_loss(model(x), x).backward()
        opt.step()


def test_a_blind_spell_is_a_data_gap_during_the_run_and_in_the_status_report(file_uri: str) -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4))
    hook = tg.Hook(file_uri, save_interval=1, stats_worker=False)
    hook.register_module(model)
    first = torch.optim.SGD(model.parameters(), lr=0.01)
    hook.register_optimizer(first)
    _train(first, model, 3)
    _train(torch.optim.SGD(model.parameters(), lr=0.01), model, 4)  # never registered
    hook.flush()
    assert hook.wait_idle()  # the uploader has stored what flush handed it: the evaluator reads it all
    ev = Evaluator(file_uri, checkpoint=False)
    ev.poll_until_idle()
    gap = ev.rule_status[DATA_GAP]
    assert gap.step == 3 and "blind since step 3" in gap.message and "2 steps so far" in gap.message, gap
    report = build_report(ev, now=0.0, rank=0)
    assert {r["name"]: r["state"] for r in report["rules"]}[DATA_GAP] == "IssuesFound"
    registry = CollectorRegistry()
    registered(ev, registry)
    assert registry.get_sample_value("trainguard_capture_unchecked_steps") == 2
    assert ev.unchecked_steps_total == 2 and not ev.ended  # the run goes on: the marker's count so far
    hook.close()
    ev.poll_until_idle()
    assert ev.ended and ev.unchecked_steps_total == 4 and ev.last_step == 2  # END.json's count
    assert len([f for f in ev.findings if f.rule == DATA_GAP]) == 1  # one spell, one finding


def test_a_hook_whose_steps_all_count_has_no_data_gap(file_uri: str) -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4))
    with tg.Hook(file_uri, save_interval=1, stats_worker=False) as hook:
        hook.register_module(model)
        for _ in range(2):  # a fresh optimizer per stage, each registered
            opt = torch.optim.SGD(model.parameters(), lr=0.01)
            hook.register_optimizer(opt)
            _train(opt, model, 3)
    ev = Evaluator(file_uri, checkpoint=False)
    ev.poll_until_idle()
    assert ev.ended and ev.last_step == 5 and ev.unchecked_steps_total == 0
    assert DATA_GAP not in ev.rule_status
