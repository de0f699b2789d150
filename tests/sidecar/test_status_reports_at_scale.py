"""In a DebugJob pod the sidecar's reports stay few and small at any number of ranks (KMock as API server).

Only the first pod reports progress; every pod reports, per rule with a finding, its one rank that
found it first; pods past the first `PROMPT_FINDING_PODS` wait and leave out what the DebugJob shows.
"""

from __future__ import annotations

import asyncio

from tests.kube import DEBUGJOB_RESOURCE, KubeEnv
from tests.sidecar.runs import RunBuilder
from tests.sidecar.test_status_reports import RULES, Clock, _debugjob, _reports
from trainguard.sidecar import report_status
from trainguard.sidecar.evaluator import Evaluator
from trainguard.sidecar.report_status import StatusReporter
from trainguard.store.backends import open_store


def _pod(file_uri: str, ranks: list[int], clock: Clock) -> Evaluator:
    ev = Evaluator(file_uri, rules=RULES, ranks=ranks, checkpoint=False, clock=clock)
    ev.poll()
    return ev


async def test_only_the_first_pod_reports_progress_and_each_pod_its_first_rank_per_finding(
    kube: KubeEnv, file_uri: str
) -> None:
    ref = await _debugjob(kube)
    store = open_store(file_uri)
    runs = {r: RunBuilder(store, rank=r, world_size=8) for r in (0, 1, 6, 7)}
    for rank, builder in runs.items():
        builder.segment(range(6), nan_at={6: [4], 7: [3]}.get(rank, []))
    clock = Clock()
    first = StatusReporter(
        ref, ranks=[0, 1], evaluator=_pod(file_uri, [0, 1], clock), pod_index=0, clock=clock
    )
    fourth = StatusReporter(
        ref, ranks=[6, 7], evaluator=_pod(file_uri, [6, 7], clock), pod_index=3, clock=clock
    )
    assert await asyncio.to_thread(first.report) and await asyncio.to_thread(fourth.report)
    reports = _reports(kube)
    assert set(reports) == {"rank-00000", "rank-00007"}, "rank 1 has nothing to tell, rank 6 found it later"
    assert [r["name"] for r in reports["rank-00000"]["rules"]] == ["nan-guard", "ledger"]
    assert [(r["name"], r["state"], r["step"]) for r in reports["rank-00007"]["rules"]] == [
        ("nan-guard", "IssuesFound", 3)
    ]

    # The heartbeat: the first pod's progress only.
    for builder in runs.values():
        builder.segment(range(6, 9))
    for reporter in (first, fourth):
        reporter.evaluator.poll()
    clock.now += report_status.REPORT_INTERVAL_SECONDS
    assert await asyncio.to_thread(first.report)
    assert not await asyncio.to_thread(fourth.report)
    assert _reports(kube)["rank-00000"]["lastStep"] == 8 and _reports(kube)["rank-00007"]["lastStep"] == 5


async def test_a_later_pod_reports_only_what_the_debugjob_does_not_show_yet(
    kube: KubeEnv, file_uri: str
) -> None:
    known, unknown = await _debugjob(kube, "known"), await _debugjob(kube, "unknown")
    await kube.patch(DEBUGJOB_RESOURCE, "default", "known",
                     {"status": {"rules": [{"name": "nan-guard", "state": "IssuesFound", "step": 2, "rank": 3}]}},
                     subresource="status")  # fmt: skip
    rank = 2 * report_status.PROMPT_FINDING_PODS  # pod index PROMPT_FINDING_PODS, 2 ranks per pod
    RunBuilder(open_store(file_uri), rank=rank, world_size=rank + 2).segment(range(5), nan_at=[3])
    clock = Clock()
    reporters = [
        StatusReporter(ref, ranks=[rank, rank + 1], evaluator=_pod(file_uri, [rank, rank + 1], clock),
                       pod_index=report_status.PROMPT_FINDING_PODS, clock=clock)
        for ref in (known, unknown)
    ]  # fmt: skip
    for reporter in reporters:
        assert not await asyncio.to_thread(reporter.report), "a later pod waits first"
    clock.now += report_status.FINDING_CHECK_DELAY_SECONDS
    assert not await asyncio.to_thread(reporters[0].report), "the DebugJob shows nan-guard already"
    assert await asyncio.to_thread(reporters[1].report)
    assert _reports(kube, "known") == {}
    assert [r["name"] for r in _reports(kube, "unknown")[f"rank-{rank:05d}"]["rules"]] == ["nan-guard"]
    assert not await asyncio.to_thread(reporters[0].report), "checked once, not at every tick"
