"""The evaluator: follows a run, runs rules, and turns findings into verdicts, metrics and reports.

Owns `evaluator` (Evaluator, the facade: reading, the stop file), `judging` (calling the rules, through
`shard_merge` for sharded tensors), `data_gaps` (steps the rules did not see), `rank_ends` (END, ending
ranks and the evaluation), `checkpointer` (saving and restoring the evaluator's state), `verdicts`
(the pure verdict state machine: Verdict, RuleStatus), `_tracks` (which ranks are followed, and a
track per rank), `view_builder` (segments -> StepViews), `running_auc` (the AUC dashboards show), `checkpoint` (position and rule state in the
store), `metrics` (a collector read at scrape time), `server` (/metrics, /healthz, JSON documents), `findings` (the /findings document), `custom` (user
rule classes, smdebug-style rules), `config` (rules and sidecar files -> rule instances) and
`report_status` (DebugJob status patches). May import `store`, `rules`, `api` and the stop-file
writer of `trainguard.stop_flag`; never torch, capture or the operator. User rule code is
imported here and nowhere else.
"""
