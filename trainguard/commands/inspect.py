"""`trainguard inspect URI`: what a stored run holds, for people and (with --json) for scripts.

Opens the run with `open_run` (TrainGuard, smdebug or TensorBoard format, on file:// or s3://)
and prints, per rank: saved steps (count, first, last), the last step seen, collections with
their tensor counts, tensors, the tensors held in part (shards), those whose update and distance are
sampled estimates, and those not read with the reason,
scalars by mode, whether the rank ended, and the problems met
while reading (damaged segments are reported and skipped). Exit status: 0 when the run reads
cleanly, 1 when it reads with problems, 2 when it cannot be read at all (one line on stderr).
"""

from __future__ import annotations

import argparse
import logging
import sys

from pydantic import BaseModel, Field

HELP = "show what a stored run holds: ranks, steps, collections, tensors, scalars, format, problems"

TEXT_TENSOR_LIMIT = 40
"""Tensors listed by name in the text output; `--json` always lists all of them."""


class StepsSummary(BaseModel):
    count: int = Field(description="Saved steps with tensor statistics.")
    first: int | None = Field(default=None, description="First saved step, if any.")
    last: int | None = Field(default=None, description="Last saved step, if any.")


class EndSummary(BaseModel):
    status: str = Field(description="ok, error or crashed (see run_format.EndInfo).")
    last_step: int | None = None
    written_by: str
    errors: list[str] = Field(default_factory=list)
    lost_steps: int = Field(default=0, description="Steps whose data never reached the store (END.json).")
    skipped_steps: int = Field(
        default=0, description="Saved steps the hook skipped (a busy statistics worker)."
    )
    dropped_scalars: int = Field(default=0, description="Scalar values the hook dropped (END.json).")
    store_outage_seconds: float = Field(default=0.0, description="Time the store failed uploads, summed.")
    exception: str | None = Field(default=None, description="The uncaught exception that ended the script.")
    exit_code: int | None = Field(default=None, description="The command's exit status (local mode).")
    signal: str | None = Field(default=None, description="The signal that ended the command, if one did.")
    outcome: str = Field(
        default="", description="How the rank ended, in words: `error: exited with status 1; ...`."
    )


class RankSummary(BaseModel):
    rank: int
    steps: StepsSummary
    last_step: int | None = Field(description="Last step with anything recorded, scalars included.")
    collections: dict[str, int] = Field(description="Tensor count per collection (scalars not counted).")
    tensors: list[str] = Field(description="Tensor names, sorted.")
    skipped: dict[str, str] = Field(
        default_factory=dict,
        description="Tensors the hook did not read (a kind it cannot read: sparse, quantized, complex, meta, ...), "
        "each with the reason.",
    )
    sharded: int = Field(
        default=0,
        description="Tensors this rank holds a part of (FSDP2, tensor parallelism); readers merge them.",
    )
    per_shard_units: dict[str, str] = Field(
        default_factory=dict,
        description="Sharded parameters and activations whose per-unit vectors stay per rank (a part holds pieces "
        "of every row: split along a dim other than 0, or a flat piece; an activation's units are its channels), "
        "each with why; their histograms and statistic columns merge.",
    )
    sampled_history: list[str] = Field(
        default_factory=list,
        description="Parameters whose update_l2 and distance_l2 are estimates from a fixed sample (catalogue "
        "`history: sampled`: their full copies would have exceeded the hook's history_max_fraction), sorted.",
    )
    scalars: dict[str, list[str]] = Field(description="Scalar names by mode (train, eval, ...).")
    ended: EndSummary | None = Field(description="The rank's end marker; None while it is still writing.")
    attempts: list[str] = Field(
        default_factory=list,
        description="Writer attempts in write order (start times in ms); more than one: the rank was restarted "
        "on this URI, and `steps` counts every attempt's.",
    )
    problems: list[str] = Field(default_factory=list, description="Damaged objects met and skipped.")


class RunSummary(BaseModel):
    uri: str
    format: str = Field(description="trainguard, smdebug or tensorboard.")
    format_version: str | None = None
    run_id: str | None = None
    framework: str | None = None
    world_size: int | None = None
    ranks: list[RankSummary]

    @property
    def problems(self) -> list[str]:
        return [p for r in self.ranks for p in r.problems]


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "uri", metavar="URI", help="run root: file:///path, a plain path, or s3://bucket/prefix"
    )
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")


def summarize(run: object) -> RunSummary:
    """Read every rank of an opened run (`reader.Run`) and return what it holds."""
    from trainguard.store import errors, reader

    assert isinstance(run, reader.Run)
    ranks: list[RankSummary] = []
    for rank in run.ranks:
        before = len(run.problems)
        steps = run.steps(rank=rank)
        catalogue = run.tensors(rank=rank)
        collections: dict[str, int] = {}
        scalars: dict[str, list[str]] = {}
        for t in catalogue:
            if t.is_scalar:
                scalars.setdefault(str(t.mode), []).append(t.name)
            else:
                collections[t.collection] = collections.get(t.collection, 0) + 1
        problems = list(run.problems[before:])
        try:
            end = run.ended(rank=rank)
        except errors.FormatError as err:
            end = None
            problems.append(str(err))
        ranks.append(
            RankSummary(
                rank=rank,
                steps=StepsSummary(
                    count=int(steps.size),
                    first=int(steps[0]) if steps.size else None,
                    last=int(steps[-1]) if steps.size else None,
                ),
                last_step=run.last_step(rank=rank),
                collections=dict(sorted(collections.items())),
                tensors=sorted(t.name for t in catalogue if not t.is_scalar),
                skipped=dict(sorted(run.skipped(rank=rank).items())),
                sharded=sum(1 for t in catalogue if t.shard is not None and t.shard.of > 1),
                per_shard_units=run.units_per_shard(rank=rank),
                sampled_history=sorted(t.name for t in catalogue if t.history == "sampled"),
                scalars={
                    mode: sorted(scalars[mode]) for mode in sorted(scalars, key=lambda m: (m != "train", m))
                },
                ended=None
                if end is None
                else EndSummary(
                    status=end.status,
                    last_step=end.last_step,
                    written_by=end.written_by,
                    errors=end.errors,
                    lost_steps=end.lost_steps,
                    skipped_steps=end.skipped_steps,
                    dropped_scalars=end.dropped_scalars,
                    store_outage_seconds=end.store_outage_seconds,
                    exception=end.exception,
                    exit_code=end.exit_code,
                    signal=end.signal,
                    outcome=end.outcome(),
                ),
                attempts=[a for a in run.attempts(rank) if a],
                problems=problems,
            )
        )
    info = run.info
    return RunSummary(
        uri=run.uri,
        format=run.format,
        # Foreign readers fill RunInfo with our defaults; only our own format has a version of ours.
        format_version=info.format_version if info and run.format == "trainguard" else None,
        run_id=info.run_id if info else None,
        framework=info.framework if info else None,
        world_size=info.world_size if info else None,
        ranks=ranks,
    )


def render_text(summary: RunSummary) -> str:
    """Return the summary as aligned lines for a terminal."""

    def row(label: str, value: object, indent: str = "") -> str:
        return f"{indent}{label:<13}{value}"

    details = ", ".join(
        f"{name} {value}"
        for name, value in (
            ("format", summary.format_version),
            ("framework", summary.framework),
            ("run id", summary.run_id),
            ("world size", summary.world_size),
        )
        if value is not None
    )
    lines = [
        row("run", summary.uri),
        row("format", f"{summary.format} ({details})" if details else summary.format),
        row("ranks", ", ".join(str(r.rank) for r in summary.ranks) or "none"),
    ]
    for r in summary.ranks:
        s = r.steps
        lines.append(f"rank {r.rank}")
        steps = f"{s.count} saved (first {s.first}, last {s.last})" if s.count else "none saved yet"
        lines.append(row("steps", steps, "  "))
        lines.append(row("last step", "none" if r.last_step is None else r.last_step, "  "))
        if r.ended is None:
            ended = "no (still writing, or stopped without an end marker)"
        else:
            ended = f"yes: {r.ended.outcome} at step {r.ended.last_step}, written by {r.ended.written_by}"
            if r.ended.errors:
                ended += f"; capture error: {r.ended.errors[0]}"
        lines.append(row("ended", ended, "  "))
        if r.ended is not None and (
            r.ended.lost_steps
            or r.ended.skipped_steps
            or r.ended.dropped_scalars
            or r.ended.store_outage_seconds
        ):
            lines.append(row("data", _data_line(r.ended), "  "))
        if len(r.attempts) > 1:
            restarts = f"{len(r.attempts)} (restarted on this URI; steps above count every attempt's)"
            lines.append(row("attempts", restarts, "  "))
        coll = ", ".join(f"{name} {count}" for name, count in r.collections.items())
        lines.append(row("collections", coll or "none", "  "))
        shown = r.tensors[:TEXT_TENSOR_LIMIT]
        more = len(r.tensors) - len(shown)
        tensors = ", ".join(shown) + (f" ... and {more} more (--json lists all)" if more else "")
        lines.append(row("tensors", tensors or "none", "  "))
        if r.sharded:
            lines.append(
                row("sharded", f"{r.sharded} tensors held in part (series merge every rank's part)", "  ")
            )
        for name, why in list(r.per_shard_units.items())[:TEXT_TENSOR_LIMIT]:
            lines.append(row("per shard", f"{name}: per-unit vectors not merged ({why})", "  "))
        if len(r.per_shard_units) > TEXT_TENSOR_LIMIT:
            more = len(r.per_shard_units) - TEXT_TENSOR_LIMIT
            lines.append(row("per shard", f"... and {more} more (--json lists all)", "  "))
        if r.sampled_history:
            shown = r.sampled_history[:TEXT_TENSOR_LIMIT]
            more = len(r.sampled_history) - len(shown)
            names = ", ".join(shown) + (f" ... and {more} more (--json lists all)" if more else "")
            lines.append(row("estimated", f"update_l2 and distance_l2 from a fixed sample: {names}", "  "))
        for name, why in list(r.skipped.items())[:TEXT_TENSOR_LIMIT]:
            lines.append(row("not read", f"{name}: {why}", "  "))
        if len(r.skipped) > TEXT_TENSOR_LIMIT:
            lines.append(
                row("not read", f"... and {len(r.skipped) - TEXT_TENSOR_LIMIT} more (--json lists all)", "  ")
            )
        scalars = "; ".join(f"{mode}: {', '.join(names)}" for mode, names in r.scalars.items())
        lines.append(row("scalars", scalars or "none", "  "))
    problems = summary.problems
    lines.append(row("problems", f"{len(problems)}" if problems else "none"))
    lines += [f"  {p}" for p in problems]
    return "\n".join(lines)


def _data_line(end: EndSummary) -> str:
    """What the rank's hook could not store, from its END.json: steps lost, steps skipped, store outages."""
    parts = []
    if end.lost_steps:
        parts.append(f"{end.lost_steps} steps lost (never reached the store)")
    if end.skipped_steps:
        parts.append(f"{end.skipped_steps} saved steps skipped (statistics worker busy)")
    if end.dropped_scalars:
        parts.append(f"{end.dropped_scalars} scalar values dropped (the device was far behind)")
    if end.store_outage_seconds:
        parts.append(
            f"the store failed for {end.store_outage_seconds:.1f}s"
            + ("" if end.lost_steps else ", nothing was lost")
        )
    return "; ".join(parts)


def main(args: argparse.Namespace) -> int:
    from trainguard.store import runs

    if not getattr(args, "verbose", False):
        # Readers log each damaged segment as a warning; here the report lists them instead.
        # botocore announces where it found credentials at INFO: noise on a one-screen report.
        for name in ("trainguard.store", "botocore"):
            logging.getLogger(name).setLevel(logging.ERROR)
    summary = summarize(runs.open_run(args.uri))
    print(summary.model_dump_json(indent=2) if args.json else render_text(summary))
    problems = summary.problems
    if problems:
        print(
            f"trainguard: error: {len(problems)} problem(s) reading {summary.uri}, skipped; first: {problems[0]}",
            file=sys.stderr,
        )
        return 1
    return 0
