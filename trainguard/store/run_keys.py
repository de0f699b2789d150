"""The run format's key names: where run.json, catalogues, segments, END.json and evaluator checkpoints live.

Part of the run format (`run_format` re-exports it; its docstring shows the layout). Builds keys and parses
names back, for both format 2 (with a writer attempt) and format 1 names.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

RUN_INFO_KEY = "run.json"
END_KEY = "END.json"
BLIND_RECORD = "blind"
"""The record stream (segment member `extra.blind`, int64[n, 2]: blind since step, unchecked steps so far) of a
hook that sees optimizer steps of captured parameters without counting them (format 2.1, optional)."""
NO_STEP_RECORD = "no_step"
"""The record stream (segment member `extra.no_step`, int64[n, 2]: since step, training iterations so far) of a
hook whose registered optimizers stopped stepping while training went on (train scalars kept coming from a
training module and no optimizer stepped: a loss scaler or an inf check skipping every step). Written beside
the `blind` marker of the same spell, which it tells apart from one of an unregistered optimizer (optional)."""
EVALUATOR_PREFIX = "evaluator"
RANK_NAME_PREFIX = "rank-"
"""What every rank's folder name starts with: listing it lists the ranks (`rank_prefix`)."""
SEGMENT_NAME_PREFIX = "seg-"
"""What every segment's name starts with, inside its rank's folder (`segment_key`)."""
CATALOGUE_NAME_PREFIX = "meta-"
"""What every catalogue's name starts with, inside its rank's folder (`meta_key`)."""
EVALUATOR_STATE_NAME = "state.json"
"""The evaluator checkpoint's name inside its folder (`evaluator_state_key`)."""

ATTEMPT_DIGITS = 13
# widths are minimums: never drop a long run
_SEG_RE = re.compile(r"^seg-(\d{13})-(\d{9,})-(\d{12,})-(\d{12,})\.npz$")
_SEG_V1_RE = re.compile(r"^seg-(\d{12,})-(\d{12,})-(\d{6,})\.npz$")
_META_RE = re.compile(r"^meta-(?:(\d{13})-)?(\d{6,})\.json$")
_RANK_RE = re.compile(r"^rank-(\d{5})/$")


def rank_prefix(rank: int) -> str:
    """Return the key prefix of one rank, e.g. `rank-00003/`."""
    return f"{RANK_NAME_PREFIX}{rank:05d}/"


def parse_rank_prefix(prefix: str) -> int | None:
    """Return the rank of a `rank-NNNNN/` prefix, or None for any other name."""
    m = _RANK_RE.match(prefix)
    return int(m.group(1)) if m else None


class SegmentName(NamedTuple):
    """What a segment's key says: the writer attempt, its upload sequence number and the step range."""

    attempt: str
    """The writer attempt (13 digits), or "" for a format-1 key."""
    seq: int
    first_step: int
    last_step: int


def attempt_id(start_time: float) -> str:
    """Return the attempt id of a writer started at `start_time` (Unix seconds): milliseconds, 13 digits."""
    return f"{round(start_time * 1000):0{ATTEMPT_DIGITS}d}"


def attempt_time(attempt: str) -> float:
    """Return the start time (Unix seconds) of an attempt id; `attempt_id` of it gives the id back."""
    return int(attempt) / 1000


def segment_key(rank: int, attempt: str, seq: int, first_step: int, last_step: int) -> str:
    """Return the key of a segment. Keys sort by attempt, then upload order (`seq`)."""
    return (
        f"{rank_prefix(rank)}{SEGMENT_NAME_PREFIX}{attempt}-{seq:09d}-{first_step:012d}-{last_step:012d}.npz"
    )


def after_attempt(rank: int, attempt: str, *, name_prefix: str = SEGMENT_NAME_PREFIX) -> str:
    """Return a key that sorts after every segment (`name_prefix=CATALOGUE_NAME_PREFIX`: catalogue) of
    `attempt` and before those of any later attempt."""
    return f"{rank_prefix(rank)}{name_prefix}{attempt}-~"


def parse_segment_name(name: str) -> SegmentName | None:
    """Return what a segment key (or file name) says, or None if it is not one (format 1 keys too)."""
    base = name.rsplit("/", 1)[-1]
    m = _SEG_RE.match(base)
    if m:
        return SegmentName(m.group(1), int(m.group(2)), int(m.group(3)), int(m.group(4)))
    m = _SEG_V1_RE.match(base)
    return SegmentName("", int(m.group(3)), int(m.group(1)), int(m.group(2))) if m else None


def meta_key(rank: int, version: int, *, attempt: str) -> str:
    """Return the key of catalogue `version` of one writer attempt of a rank ("": a format-1 catalogue)."""
    return f"{rank_prefix(rank)}{CATALOGUE_NAME_PREFIX}{attempt + '-' if attempt else ''}{version:06d}.json"


def parse_meta_name(name: str) -> tuple[str, int] | None:
    """Return (attempt, version) of a catalogue key, or None if it is not one."""
    m = _META_RE.match(name.rsplit("/", 1)[-1])
    return (m.group(1) or "", int(m.group(2))) if m else None


def end_key(rank: int) -> str:
    return f"{rank_prefix(rank)}{END_KEY}"


def evaluator_state_key(ranks: int | Sequence[int] | None) -> str:
    """Where the evaluator of one rank, of a set of ranks (a pod's), or of all ranks (`None`) keeps its checkpoint.

    One rank: `evaluator/rank-00003/state.json`; several: `evaluator/ranks-00004_00005/state.json`.
    """
    if ranks is None:
        who = "all"
    else:
        chosen = [ranks] if isinstance(ranks, int) else sorted(set(ranks))
        who = (
            f"{RANK_NAME_PREFIX}{chosen[0]:05d}"
            if len(chosen) == 1
            else "ranks-" + "_".join(f"{r:05d}" for r in chosen)
        )
    return f"{EVALUATOR_PREFIX}/{who}/{EVALUATOR_STATE_NAME}"
