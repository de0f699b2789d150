"""The rule library: pure numpy checks over per-step statistics.

Owns the rule contract (`base`: Rule, Params, Finding), the per-step view rules read
(`step_view.StepView`), the built-in rules (one module each, SageMaker Debugger's names) and the
registry that finds them and maps names to classes (`registry`), with the helpers several rules share
(`shared`, `shared_loss`, `chance`). Rules import nothing of ours except `trainguard.api.enums`; the registry also
imports the rules-file model (`trainguard.api.rules_config`) and `trainguard.errors.ConfigError`.
No storage, no logging, no clock, no Kubernetes (an import-linter contract checks the layers).
"""
