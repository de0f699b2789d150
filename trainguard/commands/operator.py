"""Run the DebugJob operator (kopf): in-cluster, or against the cluster of KUBECONFIG.

Watches DebugJobs in the given namespaces (or all with -A), renders their Jobs, follows the
evaluators' reports and stops or notifies. Serves Prometheus metrics on --metrics-port and kopf's
liveness probe on --liveness. Run one replica (kopf has no leader election).
"""

from __future__ import annotations

import argparse
import os
import socket

from trainguard.errors import ConfigError

HELP = "run the DebugJob operator"


def register(parser: argparse.ArgumentParser) -> None:
    scope = parser.add_mutually_exclusive_group()
    scope.add_argument(
        "-n",
        "--namespace",
        action="append",
        default=[],
        help="watch this namespace (repeatable; globs allowed)",
    )
    scope.add_argument(
        "-A", "--all-namespaces", action="store_true", help="watch every namespace (the default)"
    )
    parser.add_argument(
        "--metrics-port", type=int, default=9401, help="port of /metrics; 0 picks a free one (default 9401)"
    )
    parser.add_argument(
        "--metrics-address", default="0.0.0.0", help="address of the metrics server (default 0.0.0.0)"
    )
    parser.add_argument(
        "--liveness",
        default="http://0.0.0.0:8080/healthz",
        help="kopf liveness endpoint URL, or 'none' (default http://0.0.0.0:8080/healthz)",
    )
    parser.add_argument("--image", help="evaluator sidecar image for DebugJobs that name none")
    parser.add_argument("--workers", type=int, default=16, help="threads for handlers (default 16)")
    parser.add_argument(
        "--worker-limit",
        type=int,
        default=128,
        help="kopf per-object workers at once, per watched kind; bounds API connections and memory (default 128)",
    )
    parser.add_argument(
        "--webhook-timeout",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="total deadline of one webhook try: connect, send and response headers (default 10)",
    )
    parser.add_argument(
        "--webhook-refuse-internal",
        action="store_true",
        help="refuse webhook addresses that are not globally routable (loopback, link-local such as the cloud "
        "metadata service, private, shared, reserved)",
    )
    parser.add_argument(
        "--webhook-refuse-cidr",
        action="append",
        default=[],
        metavar="CIDR",
        help="refuse webhook addresses in this network too, e.g. the cluster's pod or service CIDR (repeatable)",
    )
    parser.add_argument(
        "--workload-kind",
        action="append",
        default=[],
        metavar="KEY",
        help="supervise this workload kind besides batch Jobs, by chart key: jobSet, pyTorchJob, trainJob (repeatable)",
    )
    parser.add_argument(
        "--attach",
        action="store_true",
        help="attach mode: serve the pod webhook for DebugPolicies and report their workloads",
    )
    parser.add_argument(
        "--attach-port", type=int, default=9443, help="port of the pod webhook (HTTPS, default 9443)"
    )
    parser.add_argument(
        "--attach-cert-dir",
        default="/etc/trainguard/webhook-tls",
        help="directory with the webhook's tls.crt and tls.key (default /etc/trainguard/webhook-tls)",
    )
    parser.add_argument(
        "--attach-cert-secret",
        metavar="NAMESPACE/NAME",
        help="keep the webhook's self-signed certificate in this Secret: issue it when missing, renew it at two "
        "thirds of its life, write it into --attach-cert-dir and its CA into --attach-webhook-config's caBundle",
    )
    parser.add_argument(
        "--attach-service",
        default="",
        help="the webhook's Service (the certificate's host), with --attach-cert-secret",
    )
    parser.add_argument(
        "--attach-webhook-config",
        default="",
        help="the MutatingWebhookConfiguration whose caBundle gets the CA, with --attach-cert-secret",
    )
    parser.add_argument(
        "--attach-cert-days",
        type=int,
        default=365,
        help="validity of the self-signed webhook certificate in days (default 365)",
    )
    parser.add_argument(
        "--peering",
        action="store_true",
        help="use kopf peering (needs KopfPeering RBAC); default is standalone",
    )


def main(args: argparse.Namespace) -> int:
    import kopf
    import pydantic

    import trainguard.operator.handlers  # noqa: F401  (registers the handlers)
    from trainguard.operator.config import OperatorConfig

    try:
        config = OperatorConfig(
            metrics_port=args.metrics_port,
            metrics_address=args.metrics_address,
            max_workers=args.workers,
            worker_limit=args.worker_limit,
            webhook_attempt_timeout_seconds=args.webhook_timeout,
            webhook_refuse_internal=args.webhook_refuse_internal,
            webhook_refused_cidrs=tuple(args.webhook_refuse_cidr),
            workload_kinds=tuple(args.workload_kind),
            attach=args.attach,
            attach_port=args.attach_port,
            attach_cert_dir=args.attach_cert_dir,
            attach_cert_secret=args.attach_cert_secret,
            attach_service=args.attach_service,
            attach_webhook_config=args.attach_webhook_config,
            attach_cert_days=args.attach_cert_days,
            **({"default_image": args.image} if args.image else {}),
        )
    except pydantic.ValidationError as err:
        first = err.errors()[0]
        where = f"{first['loc'][0]}: " if first["loc"] else ""
        raise ConfigError(f"trainguard operator: {where}{first['msg']}") from err
    if config.attach:
        from trainguard.operator import attach

        attach.register(config)
    liveness = None if args.liveness.lower() == "none" else args.liveness
    # kopf names itself after the login user unless POD_ID is set, and the image's numeric user has no passwd
    # entry: getpwuid() fails and the operator would exit at start. In a pod the host name is the pod's name.
    os.environ.setdefault("POD_ID", f"trainguard-operator@{socket.gethostname()}")
    kopf.run(
        standalone=not args.peering,
        clusterwide=not args.namespace,
        namespaces=args.namespace,
        liveness_endpoint=liveness,
        memo=kopf.Memo(config=config),
    )
    return 0
