"""The run format, version 2 (2.5): key names, the JSON documents and the segment codec, in one namespace.

This module is the contract between the hook (writer), the evaluator (follower) and offline
analysis. Everything is readable with numpy alone; segments are `.npz` archives loaded with
`allow_pickle=False`, so nothing from storage is ever unpickled. Moving bytes is left to the
backends (`backends/`); buffering and uploading to `writer.py`; listing and parsing a whole
run to `reader.py` and `follow.py`.

Layout under a run root:

    run.json                                    RunInfo, written by rank 0 when it starts
    rank-00000/meta-<attempt>-000000.json       Catalogue version 0 (append-only; new tensors -> new version)
    rank-00000/seg-<attempt>-<seq>-<first>-<last>.npz
                                                one immutable segment per flush
    rank-00000/END.json                         EndInfo, when the rank exits (written by the hook or the operator)
    evaluator/rank-00000/state.json             the evaluator's checkpoint (position and rule state)
    evaluator/ranks-00004_00005/state.json      the same for an evaluator that follows several ranks (a pod's)

`<attempt>` identifies one writer of the rank: its start time in milliseconds (13 digits), raised
past any attempt already in the store. A rank written again on the same URI (a Job retry, a run
resumed from a checkpoint) is a new attempt: its keys never overwrite the earlier attempt's, and
sort after them. `<seq>` (9 digits) counts one attempt's segments in the order they were uploaded,
so keys sort in write order and a follower that lists after the last key it read (`StartAfter`)
misses none, whatever steps a segment holds (`<first>`, `<last>`: 12 digits, for people).
Format 1 named segments `seg-<first>-<last>-<seq>.npz` and catalogues `meta-<version>.json`, with
no attempt; readers still read those runs (as one attempt named "").

The parts live in modules of their own and are re-exported here: `run_vocabulary` (the version and the
statistic columns, histogram bins and unit kinds), `run_keys` (key names, built and parsed),
`run_documents` (run.json, catalogues, END.json) and `segment_codec` (`Segment`, encode and decode).
"""

from __future__ import annotations

from trainguard.store.run_documents import Catalogue, EndInfo, RunInfo, ShardInfo, TensorInfo
from trainguard.store.run_keys import (
    ATTEMPT_DIGITS,
    BLIND_RECORD,
    CATALOGUE_NAME_PREFIX,
    END_KEY,
    EVALUATOR_PREFIX,
    EVALUATOR_STATE_NAME,
    NO_STEP_RECORD,
    RANK_NAME_PREFIX,
    RUN_INFO_KEY,
    SEGMENT_NAME_PREFIX,
    SegmentName,
    after_attempt,
    attempt_id,
    attempt_time,
    end_key,
    evaluator_state_key,
    meta_key,
    parse_meta_name,
    parse_rank_prefix,
    parse_segment_name,
    rank_prefix,
    segment_key,
)
from trainguard.store.run_vocabulary import (
    COLUMN,
    FORMAT_VERSION,
    GROUP_HYPERPARAMETERS,
    GROUP_PREFIX,
    HIST_BINS,
    HIST_MIN_EXPONENT,
    INITIAL_COLLECTION,
    INITIAL_PREFIX,
    READABLE_MAJORS,
    STAT_COLUMNS,
    UNIT_KINDS,
    check_version,
    group_scalar,
    initial_name,
)
from trainguard.store.segment_codec import (
    MAX_SEGMENT_BYTES,
    SEGMENT_COMPRESSLEVEL,
    Segment,
    decode_segment,
    encode_segment,
)

__all__ = [
    "ATTEMPT_DIGITS",
    "BLIND_RECORD",
    "CATALOGUE_NAME_PREFIX",
    "COLUMN",
    "END_KEY",
    "EVALUATOR_PREFIX",
    "EVALUATOR_STATE_NAME",
    "FORMAT_VERSION",
    "GROUP_HYPERPARAMETERS",
    "GROUP_PREFIX",
    "HIST_BINS",
    "HIST_MIN_EXPONENT",
    "INITIAL_COLLECTION",
    "INITIAL_PREFIX",
    "MAX_SEGMENT_BYTES",
    "NO_STEP_RECORD",
    "RANK_NAME_PREFIX",
    "READABLE_MAJORS",
    "RUN_INFO_KEY",
    "SEGMENT_COMPRESSLEVEL",
    "SEGMENT_NAME_PREFIX",
    "STAT_COLUMNS",
    "UNIT_KINDS",
    "Catalogue",
    "EndInfo",
    "RunInfo",
    "Segment",
    "SegmentName",
    "ShardInfo",
    "TensorInfo",
    "after_attempt",
    "attempt_id",
    "attempt_time",
    "check_version",
    "decode_segment",
    "encode_segment",
    "end_key",
    "evaluator_state_key",
    "group_scalar",
    "initial_name",
    "meta_key",
    "parse_meta_name",
    "parse_rank_prefix",
    "parse_segment_name",
    "rank_prefix",
    "segment_key",
]
