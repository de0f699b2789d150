"""The rule library: pure numpy checks over per-step statistics.

Owns the rule contract (`base`: Rule, Params, Finding), the per-step view rules read
(`view.StepView`), the built-in rules (one module each, SageMaker Debugger's names) and the
registry that maps names to classes (`registry`). Imports nothing of ours except
`trainguard.api.enums`: no storage, no logging, no clock, no Kubernetes.
"""
