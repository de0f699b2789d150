"""Sharded and wrapped models under the hook: FSDP2, FSDP1 (`use_orig_params=True`), tensor parallelism and DDP
on 2 CPU ranks (gloo), and torch.compile.

Each FSDP2, FSDP1 or tensor-parallel rank reads only its own shard, with no collective call (counted for FSDP1
and tensor parallelism against a twin trained without the hook); the reader merges the shards,
so `open_run(...).series(name, col)` is the full tensor's statistics: compared here with numpy on
`full_tensor()` of every parameter and gradient at every step, on the C kernel's path and on the
torch path. A NaN in one rank's shard shows in the merged series and fires the rules. The evaluator, too, judges
the full tensor (`sidecar/shard_merge.py`): its views, a norm rule and the metrics see the merged
statistics, and a part whose other parts never came is not judged as the whole.
"""

from __future__ import annotations

import html
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.multiprocessing as mp
from prometheus_client import CollectorRegistry
from torch import nn

import trainguard
import trainguard.torch as tg
from tests.capture import sharded_loop
from tests.capture.test_torch_statistics import assert_columns_match
from trainguard.api.enums import RuleState
from trainguard.api.rules_config import RuleSpec
from trainguard.capture.torch import c_kernel
from trainguard.commands import inspect
from trainguard.local.evaluation import EvaluationThread
from trainguard.report import render as render_report
from trainguard.sidecar import checkpoint as ckpt
from trainguard.sidecar import metrics, shard_merge
from trainguard.sidecar.evaluator import DATA_GAP, Evaluator, evaluate_stored
from trainguard.sidecar.verdicts import Verdict
from trainguard.store import errors as store_errors
from trainguard.store import run_format, stats

pytestmark = pytest.mark.skipif(not torch.distributed.is_available(), reason="torch without distributed")

UPDATE = run_format.COLUMN["update_l2"]
NAMES = ("0.weight", "0.bias", "2.weight", "2.bias")


def _spawn(fn: object, *args: object) -> None:
    mp.start_processes(fn, args=args, nprocs=2, join=True, start_method="spawn")  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def distributed_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One 2-rank start-up trains three FSDP2 runs (with the C kernel, with torch ops, and with a NaN), a DDP one,
    an FSDP1 one and a tensor-parallel one."""
    root = tmp_path_factory.mktemp("fsdp2")
    runs = []
    for name, native_stats, nan_step in (
        ("kernel", True, -1),
        ("torch", False, -1),
        ("nan", c_kernel.AVAILABLE, sharded_loop.STEPS - 1),
    ):
        (root / name / "truth").mkdir(parents=True)
        runs.append((str(root / name / "run"), str(root / name / "truth"), native_stats, nan_step))
    others = []
    for kind in ("fsdp1", "tp"):
        (root / kind / "truth").mkdir(parents=True)
        others.append((kind, str(root / kind / "run"), str(root / kind / "truth")))
    _spawn(sharded_loop.train, 2, str(root / "rdv"), runs, str(root / "ddp"), others)
    return root


@pytest.mark.parametrize("native_stats", [True, False], ids=["kernel", "torch"])
def test_fsdp2_merged_statistics_are_the_full_tensors(distributed_runs: Path, native_stats: bool) -> None:
    if native_stats and not c_kernel.AVAILABLE:
        pytest.skip("the C kernel is not built")
    out = distributed_runs / ("kernel" if native_stats else "torch") / "run"
    truth = out.parent / "truth"
    run = trainguard.open_run(str(out))
    assert run.ranks == [0, 1]
    full = [np.load(truth / f"step-{s}.npz") for s in range(sharded_loop.STEPS)]
    for name in (*NAMES, *(f"grad/{n}" for n in NAMES)):
        shard = next(t.shard for t in run.tensors(rank=1) if t.name == name)
        assert shard is not None and shard.of == 2 and shard.index == 1, name
        got = np.stack([run.series(name, col).values for col in run_format.STAT_COLUMNS], 1)
        assert run.series(name, "count").steps.tolist() == list(range(sharded_loop.STEPS)), name
        for s in range(sharded_loop.STEPS):
            want = stats.tier0(full[s][name])
            assert_columns_match(got[s, :UPDATE], want[:UPDATE], f"{name} at step {s}")
        # each rank's own rows stay readable: its part only
        own = run.series(name, "count", rank=1, merge=False).values
        assert own.tolist() == [float(np.prod(shard.local_shape))] * sharded_loop.STEPS
    # update and distance of a weight: the root of the shards' summed squares
    w = [full[s]["0.weight"].astype(np.float64) for s in range(sharded_loop.STEPS)]
    np.testing.assert_allclose(
        run.series("0.weight", "distance_l2").values[1:],
        [np.linalg.norm(w[s] - w[0]) for s in (1, 2)],
        rtol=1e-4,
    )


@pytest.mark.parametrize("kind", ["fsdp1", "tp"])
def test_fsdp1_and_tensor_parallel_shards_merge_to_the_full_tensors_without_a_collective(
    distributed_runs: Path, kind: str
) -> None:
    """FSDP1's flat pieces (a parameter split unevenly, or held whole by one rank and empty on the other) and
    tensor parallelism's column- and row-wise shards (and its replicated bias, written whole by both ranks)."""
    run = trainguard.open_run(str(distributed_runs / kind / "run"))
    truth = distributed_runs / kind / "truth"
    counts = np.load(truth / "collectives.npy")
    assert (counts[:, 1] > 0).all(), "the counter sees the model's own collectives"
    assert counts[:, 0].tolist() == counts[:, 1].tolist(), f"the hook made collective calls: {counts}"
    full = [np.load(truth / f"step-{s}.npz") for s in range(sharded_loop.STEPS)]
    for name in (*NAMES, *(f"grad/{n}" for n in NAMES)):
        # a rank that holds none of a parameter under FSDP1 gets no gradient for it: no entry there
        entries = [t for r in (0, 1) for t in run.tensors(rank=r) if t.name == name]
        assert entries and all(e.shape == list(full[0][name].shape) for e in entries), (
            name
        )  # the full tensor's
        replicated = kind == "tp" and name.endswith("2.bias")
        shards = [e.shard for e in entries]
        assert all(s is not None and s.of == (1 if replicated else 2) for s in shards), (name, shards)
        got = np.stack([run.series(name, col).values for col in run_format.STAT_COLUMNS], 1)
        assert run.series(name, "count").steps.tolist() == list(range(sharded_loop.STEPS)), name
        for s in range(sharded_loop.STEPS):
            assert_columns_match(got[s, :UPDATE], stats.tier0(full[s][name])[:UPDATE], f"{name} at step {s}")
        if not replicated:  # each rank wrote its part only
            own = [run.series(name, "count", rank=r, merge=False).values for r in (0, 1)]
            assert sum(float(o[0]) if o.size else 0.0 for o in own) == full[0][name].size, name
    if kind == "fsdp1":  # FSDP1 splits the flat parameter at 98 elements: 0.weight in two, the rest on rank 1
        pieces = {
            n: [t.shard.local_shape for r in (0, 1) for t in run.tensors(rank=r) if t.name == n]
            for n in NAMES
        }
        assert pieces == {
            "0.weight": [[98], [30]],
            "0.bias": [[0], [16]],
            "2.weight": [[0], [48]],
            "2.bias": [[0], [3]],
        }
    w = [full[s]["0.weight"].astype(np.float64) for s in range(sharded_loop.STEPS)]
    np.testing.assert_allclose(
        run.series("0.weight", "distance_l2").values[1:],
        [np.linalg.norm(w[s] - w[0]) for s in (1, 2)],
        rtol=1e-4,
    )


def test_sharded_histograms_sum_and_unit_vectors_merge_flat_pieces_say_per_shard(
    distributed_runs: Path,
) -> None:
    """Histograms (the same fixed log2 bins in every part) merge by adding, exactly, for any sharding; per-unit
    vectors merge where each part holds a block: whole rows (tensor parallelism's column-wise weight, `S(0)`) laid
    side by side, a block of every row's columns (its row-wise weight, `S(1)`) counted over the full width; FSDP1's
    flat pieces hold neither, so the reader refuses to merge them, saying why, and `trainguard inspect` lists them."""
    run = trainguard.open_run(str(distributed_runs / "tp" / "run"))
    full = [np.load(distributed_runs / "tp" / "truth" / f"step-{s}.npz") for s in range(sharded_loop.STEPS)]
    for name in (*NAMES, *(f"grad/{n}" for n in NAMES)):
        steps, hists = run.hists(name)
        assert steps.tolist() == [0, 2], name
        for i, s in enumerate((0, 2)):
            np.testing.assert_array_equal(hists[i], stats.log2_hist(full[s][name]), err_msg=f"{name} at {s}")
        if not name.endswith("2.bias"):  # replicated: each rank writes the whole, nothing to add
            own = run.hists(name, rank=1, merge=False).values
            assert own.sum() < hists.sum(), name  # a part's counts alone are not the whole's
    # column-wise 0.weight [16, 8]: rows 0-7 on rank 0, 8-15 on rank 1; row-wise 2.weight [3, 16]: each rank
    # holds 8 columns of every row. Step 2's shares against step 1's weights, as on the whole tensors
    for name, rows, part in (("0.weight", 16, (2, 8)), ("2.weight", 3, (2, 3))):
        assert run.per_shard(name) == {}
        steps, moved = run.units(name, "moved")
        assert steps.tolist() == [0, 2] and moved.shape == (2, rows), name
        assert np.isnan(moved[0]).all()  # the first save has no previous copy
        want = (full[2][name] != full[1][name]).mean(axis=1)
        np.testing.assert_allclose(moved[1], want, rtol=1e-6, err_msg=name)
        assert run.units(name, "moved", rank=1, merge=False).values.shape == part, name
    summary = inspect.summarize(run)
    assert [r.per_shard_units for r in summary.ranks] == [{}] * 2
    assert "per-unit vectors not merged" not in inspect.render_text(summary)
    fsdp1 = trainguard.open_run(str(distributed_runs / "fsdp1" / "run"))
    why = fsdp1.per_shard("0.weight")["units"]
    assert "FlatShard" in why
    with pytest.raises(store_errors.NotMerged, match=r"0\.weight.*merge=False"):
        fsdp1.units("0.weight", "moved")
    assert f"0.weight: per-unit vectors not merged ({why})" in inspect.render_text(inspect.summarize(fsdp1))


def test_an_fsdp1_flat_parameter_is_skipped_with_what_to_do(distributed_runs: Path) -> None:
    run = trainguard.open_run(str(distributed_runs / "fsdp1" / "run-flat"))
    (flat,) = [t for t in run.tensors(rank=0) if t.collection == "weights"]
    assert flat.name == "_flat_param" and flat.skipped is not None and "use_orig_params=True" in flat.skipped
    assert run.ended(rank=0).status == "ok"  # type: ignore[union-attr]


def test_a_nan_in_one_ranks_shard_shows_in_the_merged_series_and_fires_the_rules(
    distributed_runs: Path,
) -> None:
    out = distributed_runs / "nan" / "run"
    run = trainguard.open_run(str(out))
    # the NaN is put in at the last step (from there on it spreads through every gradient)
    assert run.series("grad/0.weight", "nan").values.tolist() == [0.0, 0.0, 1.0]
    assert run.series("grad/0.weight", "nan", rank=0, merge=False).values.tolist() == [0.0, 0.0, 0.0]
    assert np.isnan(run.series("0.weight", "max").values[2])  # SGD carried it into the weight
    findings = evaluate_stored(str(out))
    # judged on the merged tensor, reported on its owner (rank 0, the lowest rank holding a part)
    assert any(f.step == 2 and f.rank == 0 and f.tensor and "0.weight" in f.tensor for f in findings), (
        findings
    )


def test_ddp_registers_trains_and_is_named_as_the_bare_model(distributed_runs: Path) -> None:
    out = distributed_runs / "ddp"
    run = trainguard.open_run(str(out))
    for rank in (0, 1):
        names = {t.name for t in run.tensors("weights", rank=rank)}
        assert names == {"0.weight", "2.weight"}, names
        assert run.series("grad/0.weight", "count", rank=rank).steps.tolist() == [0, 1, 2]
        assert run.ended(rank=rank).status == "ok"  # type: ignore[union-attr]
    # DDP keeps the replicas equal: both ranks wrote the same weights
    np.testing.assert_array_equal(
        run.series("0.weight", "l2", rank=0).values, run.series("0.weight", "l2", rank=1).values
    )


# dynamo, resuming its trace after the graph break at an activation hook, reads the `.grad` of the
# activation it is handed (a non-leaf tensor), which warns; the warning is dynamo's, not a failure
@pytest.mark.filterwarnings("ignore:The .grad attribute of a Tensor that is not a leaf:UserWarning")
def test_a_compiled_module_registers_and_trains(tmp_path) -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    compiled = torch.compile(model, backend="eager")  # dynamo's wrapping and guards, without a C++ build
    hook = tg.Hook(str(tmp_path), save_interval=1)
    hook.register_module(compiled)
    opt = torch.optim.SGD(compiled.parameters(), lr=0.1)
    hook.register_optimizer(opt)
    g = torch.Generator().manual_seed(1)
    for _ in range(3):
        x, y = torch.randn(4, 8, generator=g), torch.randint(0, 3, (4,), generator=g)
        opt.zero_grad()
        nn.functional.cross_entropy(compiled(x), y).backward()
        opt.step()
    hook.close()
    assert hook.errors == []
    run = trainguard.open_run(str(tmp_path))
    assert {t.name for t in run.tensors("weights")} == {"0.weight", "2.weight"}
    got = run.series("0.weight", "l2")
    assert got.steps.tolist() == [0, 1, 2]
    assert got.values[-1] == pytest.approx(float(model[0].weight.detach().norm()), rel=1e-5)
    assert {t.name for t in run.tensors("activations")} == {
        "act/1"
    }  # its hook ran inside the compiled module


# --- the evaluator over the ranks' parts --------------------------------------------------------


def _truth(run: Path, step: int) -> dict[str, np.ndarray]:
    with np.load(run.parent / "truth" / f"step-{step}.npz") as z:
        return {k: z[k] for k in z.files}


def test_the_evaluators_views_and_metrics_hold_the_full_tensors(
    distributed_runs: Path, tmp_path: Path
) -> None:
    out = (
        tmp_path / "torch" / "run"
    )  # a copy: the checkpoint written here must not reach the other tests' runs
    shutil.copytree(distributed_runs / "torch", out.parent)
    ledger = RuleSpec(type="python:tests.sidecar.rules_for_tests:RowLedger", name="row_ledger")
    ev = Evaluator(str(out), rules=[ledger], checkpoint=False)
    ev.poll_until_idle()
    assert ev.ended
    ev.save_checkpoint()  # the rules' states: what they were shown on each rank
    state = ckpt.load(ev.store, ckpt.key_for(None))
    assert state is not None
    shown = {r: state.ranks[str(r)].rules["row_ledger"]["own"]["rows"] for r in (0, 1)}
    names = (*NAMES, *(f"grad/{n}" for n in NAMES))
    for s in range(sharded_loop.STEPS):
        full = _truth(out, s)
        for name in names:
            got = np.asarray(shown[0][str(s)][name])
            assert_columns_match(got[:UPDATE], stats.tier0(full[name])[:UPDATE], f"{name} at step {s}")
            assert name not in shown[1][str(s)], (
                f"rank 1's part of {name} is in the merged row, not judged alone"
            )
    full = _truth(out, sharded_loop.STEPS - 1)
    registry = CollectorRegistry()
    registry.register(metrics.EvaluatorCollector(ev))
    got = registry.get_sample_value("trainguard_training_tensor_l2_norm", {"collection": "weights"})
    want = np.sqrt(sum(np.sum(full[n].astype(np.float64) ** 2) for n in ("0.weight", "2.weight")))
    assert got == pytest.approx(want, rel=1e-5)


def _part_and_full_l2(out: Path, name: str) -> tuple[float, float]:
    """The largest l2 of any rank's part of `name` over the run, and the full tensor's l2 where that is larger."""
    run = trainguard.open_run(str(out))
    parts = max(float(run.series(name, "l2", rank=r, merge=False).values.max()) for r in (0, 1))
    return parts, float(run.series(name, "l2").values.max())


def test_a_norm_rule_judges_the_merged_norm(distributed_runs: Path) -> None:
    out = distributed_runs / "torch" / "run"
    name = "grad/0.weight"
    part, full = _part_and_full_l2(out, name)
    assert part < full  # a threshold between the two fires on the whole tensor only
    threshold = (part + full) / 2
    spec = RuleSpec(
        type="exploding_gradient",
        params={"threshold": threshold, "trigger_k": 1, "trigger_n": 1},
        tensors=[name],
    )
    ev = Evaluator(str(out), rules=[spec], checkpoint=False)
    ev.poll_until_idle()
    fired = [f for f in ev.findings if f.rule == "exploding_gradient" and f.tensor == name]
    assert fired, ev.findings
    assert {f.rank for f in fired} == {0}
    assert max(f.value for f in fired if f.value is not None) == pytest.approx(full, rel=1e-6)


@pytest.mark.parametrize("ended", [True, False], ids=["ended", "lagging"])
def test_a_missing_ranks_part_is_never_judged_as_the_whole(
    distributed_runs: Path, tmp_path: Path, ended: bool
) -> None:
    """Rank 1 wrote its catalogue and no step (and ended, or is still running): rank 0's parts are not judged
    as the whole tensors, and the evaluator says so."""
    out = tmp_path / "run"
    shutil.copytree(distributed_runs / "torch" / "run", out)
    for seg in (out / "rank-00001").glob("seg-*"):
        seg.unlink()
    if not ended:
        (out / "rank-00001" / "END.json").unlink()
    # a threshold any part's gradient norm is above: it would fire on a part judged as the whole
    spec = RuleSpec(type="exploding_gradient", params={"threshold": 1e-12, "trigger_k": 1, "trigger_n": 1})
    ev = Evaluator(str(out), rules=[spec], checkpoint=False)
    ev.poll_until_idle()
    if not ended:
        assert not ev.ended  # rank 0 waits for rank 1's parts; nothing judged on part of a tensor meanwhile
        assert ev.findings == []
        ev.finish()
    assert [f for f in ev.findings if f.rule != DATA_GAP] == []
    gap = ev.rule_status[DATA_GAP]
    assert gap.state == RuleState.ISSUES_FOUND and gap.rank == 0 and gap.step == 0
    assert "grad/0.weight" in gap.message or "sharded tensors" in gap.message
    assert ("rank 1 ended" if ended else "rank 1 lags") in gap.message
    assert ev.rule_status["exploding_gradient"].state == RuleState.NO_ISSUES_FOUND


def test_local_mode_reports_a_sharded_nan_once_with_the_full_name(distributed_runs: Path) -> None:
    """The evaluator thread of `trainguard run`, following every rank of the FSDP2 run with the NaN."""
    out = distributed_runs / "nan" / "run"
    verdicts: list[Verdict] = []
    thread = EvaluationThread(
        Evaluator(str(out), checkpoint=False),
        on_verdict=verdicts.append,
        on_error=lambda e: pytest.fail(e),
        poll_interval_seconds=0.05,
    )
    thread.start()
    thread.stop()
    thread.finish()
    assert thread.errors == []
    ev = thread.evaluator
    fired = [v for v in verdicts if v.rule == "exploding_tensor"]
    assert len(fired) == 1 and fired[0].finding is not None, verdicts
    assert (fired[0].step, fired[0].rank, fired[0].finding.tensor) == (2, 0, "grad/0.weight")
    nan_findings = [f for f in ev.findings if f.rule == "exploding_tensor"]
    keys = [(f.tensor, f.step) for f in nan_findings]
    assert len(keys) == len(set(keys)), "a sharded tensor's NaN is found once, not once per part"
    assert all(f.rank == 0 for f in nan_findings)
    assert all(f.tensor in {*NAMES, *(f"grad/{n}" for n in NAMES)} for f in nan_findings)


def test_a_restarted_evaluator_reports_the_steps_it_held(distributed_runs: Path, tmp_path: Path) -> None:
    """Rank 0's steps wait for rank 1's parts when the evaluator stops; its successor cannot judge them (the
    held views lived in memory) and says so, instead of passing over them in silence."""
    out = tmp_path / "run"
    shutil.copytree(distributed_runs / "torch" / "run", out)
    for path in (out / "rank-00001").iterdir():
        if path.name.startswith("seg-") or path.name == "END.json":
            path.unlink()
    first = Evaluator(str(out))
    first.poll_until_idle()
    assert first.findings == [] and not first.ended
    second = Evaluator(str(out))
    second.poll()
    gap = second.rule_status[DATA_GAP]
    assert gap.state == RuleState.ISSUES_FOUND and gap.rank == 0 and gap.step == 0
    assert f"steps 0-{sharded_loop.STEPS - 1} of rank 0 were held" in gap.message


def test_a_pod_that_holds_part_of_a_tensor_judges_the_exact_columns_of_its_part(
    distributed_runs: Path,
) -> None:
    """A sidecar following rank 1 only (the other parts live in another pod): the NaN in rank 1's part is
    found there, under the tensor's name; the part's norm is neither judged nor shown as the whole's."""
    out = distributed_runs / "nan" / "run"
    ev = Evaluator(str(out), ranks=[1], checkpoint=False)
    ev.poll_until_idle()
    fired = [f for f in ev.findings if f.rule == "exploding_tensor"]
    assert fired and (fired[0].step, fired[0].rank, fired[0].tensor) == (2, 1, "grad/0.weight"), ev.findings
    assert any("judged per part" in w for w in ev.warnings)
    (view,) = ev.last_views()
    i = view.index("grad/0.weight")
    assert i is not None and view.stats[i, run_format.COLUMN["nan"]] == 1.0
    assert np.isnan(view.stats[i, run_format.COLUMN["l2"]])
    registry = CollectorRegistry()
    registry.register(metrics.EvaluatorCollector(ev))
    assert registry.get_sample_value("trainguard_training_tensor_l2_norm", {"collection": "weights"}) is None
    assert (
        registry.get_sample_value("trainguard_training_nonfinite_values", {"collection": "gradients"}) == 1.0
    )


# --- Tier-1 data in the evaluator: histograms and per-unit vectors -------------------------------


def _tier1_seen(
    out: Path, *, ledger: str = "Tier1Ledger", **kwargs: object
) -> tuple[Evaluator, dict[int, dict[str, dict[str, object]]]]:
    """What a ledger rule was shown on each followed rank, by step: Tier1Ledger's hists, units and per_shard, or
    RowLedger's statistics rows."""
    spec = RuleSpec(type=f"python:tests.sidecar.rules_for_tests:{ledger}", name="ledger")
    ev = Evaluator(str(out), rules=[spec], checkpoint=False, **kwargs)  # type: ignore[arg-type]
    ev.poll_until_idle()
    ev.finish()
    ev.save_checkpoint()
    state = ckpt.load(ev.store, ckpt.key_for(ev.followed))
    assert state is not None
    own = {int(r): s.rules["ledger"]["own"] for r, s in state.ranks.items()}
    return ev, {r: o.get("seen", o.get("rows")) for r, o in own.items()}


def test_the_evaluator_shows_the_rules_merged_histograms_and_unit_vectors(
    distributed_runs: Path, tmp_path: Path
) -> None:
    """Tensor parallelism: every sharded tensor's histogram is the full tensor's (summed parts) on its owner and on
    no other rank; both weights' `moved` vectors are the full weights' rows (the column-wise one's parts laid side
    by side, the row-wise one's counted over the full width), as the reader gives them; nothing is per shard."""
    out = tmp_path / "tp" / "run"  # a copy (the checkpoint written here), with the truth beside it
    shutil.copytree(distributed_runs / "tp", out.parent)
    run = trainguard.open_run(str(out))
    ev, seen = _tier1_seen(out)
    assert sorted(seen[0]) == ["0", "2"]
    for step in (0, 2):
        full = _truth(out, step)
        owner, other = seen[0][str(step)], seen[1].get(str(step), {"hists": {}, "units": {}})
        for name in (*NAMES, *(f"grad/{n}" for n in NAMES)):
            np.testing.assert_array_equal(owner["hists"][name], stats.log2_hist(full[name]), err_msg=name)  # type: ignore[index]
            if not name.endswith(
                "2.bias"
            ):  # replicated: whole on each rank, judged there as any whole tensor
                assert name not in other["hists"], f"rank 1's part of {name} is judged alone"  # type: ignore[operator]
    units = seen[0]["2"]["units"]
    for name, rows in (("0.weight", 16), ("2.weight", 3)):
        np.testing.assert_array_equal(units[f"moved:{name}"], run.units(name, "moved").values[1])  # type: ignore[index]
        assert len(units[f"moved:{name}"]) == rows  # type: ignore[index,arg-type]
        assert f"moved:{name}" not in seen[1]["2"]["units"]  # type: ignore[operator]
    assert seen[0]["2"]["per_shard"] == {}
    assert not [w for w in ev.warnings if "judged per shard" in w]
    assert "per-unit vectors not merged" not in render_report(run, findings=ev.findings)


def test_the_evaluator_names_flat_pieces_unit_vectors_per_shard(
    distributed_runs: Path, tmp_path: Path
) -> None:
    """FSDP1's flat pieces hold no block of rows or columns: the owner's view keeps its own piece's `moved` vector
    and names the tensor per shard with why, in the view, in the evaluator's warning and in the report."""
    out = tmp_path / "fsdp1" / "run"
    shutil.copytree(distributed_runs / "fsdp1", out.parent)
    run = trainguard.open_run(str(out))
    ev, seen = _tier1_seen(out)
    why = run.per_shard("0.weight")["units"]
    assert "FlatShard" in why
    assert seen[0]["2"]["per_shard"]["0.weight"] == f"rank 0's part only: {why}"  # type: ignore[index]
    np.testing.assert_array_equal(
        seen[0]["2"]["units"]["moved:0.weight"],  # type: ignore[index]
        run.units("0.weight", "moved", rank=0, merge=False).values[1],
    )
    warned = [w for w in ev.warnings if "judged per shard" in w]
    assert len(warned) == 1 and f"0.weight: rank 0's part only: {why}" in warned[0], ev.warnings
    page = render_report(run, findings=ev.findings)
    assert "per-unit vectors not merged" in page and f"<code>0.weight</code>: {html.escape(why)}" in page


def test_the_per_unit_rule_says_on_the_sharded_run_what_it_says_on_the_unsharded_one(
    distributed_runs: Path,
) -> None:
    """unchanged_tensor's per-unit check on the tensor-parallel run and on the same model trained whole (the same
    batches, the same rows kept from moving): the same finding, word for word, on the merged column-wise weight
    and on the merged row-wise one."""
    specs = [
        RuleSpec(
            type="unchanged_tensor",
            name=f"unchanged_{i}",
            params={"num_steps": 1},
            tensors=[rf"^{i}\.weight$"],
        )
        for i in (0, 2)
    ]
    messages = {}
    for kind in ("run", "run-whole"):
        ev = Evaluator(str(distributed_runs / "tp" / kind), rules=specs, checkpoint=False)
        ev.poll_until_idle()
        messages[kind] = {f.rule: f.message for f in ev.findings if " units (" in f.message}
    whole, sharded = messages["run-whole"], messages["run"]
    assert set(whole) == {"unchanged_0", "unchanged_2"}, whole  # the frozen rows are found
    assert "2 of 16 units" in whole["unchanged_0"] and "(units 3, 12)" in whole["unchanged_0"]
    assert sharded["unchanged_0"] == whole["unchanged_0"]
    assert sharded["unchanged_2"] == whole["unchanged_2"]


def test_a_pod_that_holds_part_of_a_tensor_names_its_tier1_data_per_shard(
    distributed_runs: Path, tmp_path: Path
) -> None:
    """Following rank 1 only: its parts' histograms are its own, named per shard (their other parts in another pod)."""
    shutil.copytree(distributed_runs / "tp" / "run", tmp_path / "run")
    _, seen = _tier1_seen(tmp_path / "run", ranks=[1])
    notes = seen[1]["0"]["per_shard"]
    assert notes["0.weight"] == shard_merge.PER_PART_WHY  # type: ignore[index]
    assert "2.bias" not in notes  # type: ignore[operator]  # replicated: whole here


def test_fsdp1_pieces_histograms_merge_in_the_reader_and_the_evaluator_an_empty_piece_adding_nothing(
    distributed_runs: Path, tmp_path: Path
) -> None:
    """FSDP1's flat pieces: 0.weight split between the ranks, 0.bias held whole by rank 1 beside rank 0's empty
    piece (which writes no row): the full tensors' statistics and histograms in the reader and on the views of
    their owner, the lowest rank holding elements of them, and on no other rank's."""
    out = tmp_path / "fsdp1" / "run"
    shutil.copytree(distributed_runs / "fsdp1", out.parent)
    run = trainguard.open_run(str(out))
    _, seen = _tier1_seen(out)
    _, rows = _tier1_seen(out, ledger="RowLedger")
    for s in range(sharded_loop.STEPS):
        full = _truth(out, s)
        for name in (*NAMES, *(f"grad/{n}" for n in NAMES)):
            shown = [r for r in (0, 1) if name in rows[r][str(s)]]  # type: ignore[operator]
            assert shown == [0 if name.endswith("0.weight") else 1], (name, s, shown)
            got = np.asarray(rows[shown[0]][str(s)][name])  # type: ignore[index]
            assert_columns_match(got[:UPDATE], stats.tier0(full[name])[:UPDATE], f"{name} at step {s}")
    for name in (*NAMES, *(f"grad/{n}" for n in NAMES)):
        steps, hists = run.hists(name)
        assert steps.tolist() == [0, 2], name
        for i, s in enumerate((0, 2)):
            want = stats.log2_hist(_truth(out, s)[name])
            np.testing.assert_array_equal(hists[i], want, err_msg=f"{name} at {s}")
            # on one rank only: the lowest holding elements (rank 1 for the tensors rank 0 holds none of)
            shown = [r for r in (0, 1) if name in seen[r][str(s)]["hists"]]  # type: ignore[operator]
            assert shown == [0 if name.endswith("0.weight") else 1], (name, shown)
            np.testing.assert_array_equal(
                seen[shown[0]][str(s)]["hists"][name], want, err_msg=f"{name} at {s}"
            )  # type: ignore[index]


def test_a_stored_run_read_at_once_is_merged_rank_by_rank_in_turns(distributed_runs: Path) -> None:
    """Each rank of the stored FSDP2 run has two segments. Read rank by rank, rank 0's views of both would be held
    waiting for rank 1's parts past a bound of 2 held views, and its first step released without its sharded
    tensors (a data gap); read in turns, every step is merged."""
    ev = Evaluator(str(distributed_runs / "torch" / "run"), checkpoint=False)
    ev._judge.merger.max_held_views = 2  # the bound (256 by default) scaled to this run's few steps
    ev.poll_until_idle()
    assert ev.ended and DATA_GAP not in {f.rule for f in ev.findings}, ev.findings
