"""The API: pydantic models of the DebugJob spec and status, and the closed sets they use.

Owns: `enums` (phases, conditions, severities, actions, collections, rule states), the rules
configuration schema shared by the rules file and `spec.rules`, the default rule set (names and
actions, shared by the evaluator and the operator; `_default_set` is generated from the rule
classes by `dev/gen_docs.py`), the DebugJob and DebugPolicy models from
which the CRDs are generated, and `findings` (the evaluator's /findings document, which the operator reads). Imports nothing of ours but `trainguard.errors`; every other
subpackage may import it. Nothing here performs I/O.
"""
