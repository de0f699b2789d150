"""Local mode: `trainguard run -- CMD` supervises a training command on one machine.

Owns `supervise` (the `Supervisor` that starts CMD, follows what it writes with the evaluator,
shows progress and stops CMD on a `stop` verdict; it re-exports the public names of the others),
`process` (CMD's process group and signals), `evaluation` (the evaluator thread), `ends` (the ranks'
END.json after CMD exited), `outcome` (the `Outcome` and exit status), `progress` and `verdict_table`
(what is printed). Uses the evaluator of `trainguard.sidecar`; never imports torch or the operator.
Rendering the HTML report is left to `trainguard.report`.
"""
