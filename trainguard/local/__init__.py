"""Local mode: `trainguard run -- CMD` supervises a training command on one machine.

Owns `supervise` (the `Supervisor` that starts CMD, follows what it writes with the evaluator,
shows progress and stops CMD on a `stop` verdict; the `Outcome` and the verdict table). Uses the
evaluator of `trainguard.sidecar`; never imports torch
or the operator. Rendering the HTML report is left to `trainguard.report`.
"""
