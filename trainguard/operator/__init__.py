"""The operator: DebugJob -> Indexed Job + evaluator sidecar + narrow RBAC; stop and notify actions.

Owns `build` (pure manifest builders), `status` (pure status aggregation and phase logic),
`handlers` (thin kopf handlers), `actions` (suspend the Job, Events, webhooks), `webhooks`
(delivery with retries), `client` (REST calls through the official client), `metrics`
(kube-state-metrics style), `end_marker` (END.json for ranks that died without one) and `config`.
May import `api`, `store` and `errors`; never torch, `capture`, `rules` or `sidecar`, so it never
runs user rule code (import-linter contract). Handlers are idempotent and level-based.
"""
