"""Print a CustomResourceDefinition of TrainGuard (generated from the pydantic models).

`trainguard crd > crds/debugjob.yaml` and `trainguard crd --kind debugpolicy > crds/debugpolicy.yaml`
regenerate the checked-in files; `kubectl apply
--server-side -f -` installs it. `--vendor-pod-schema` refreshes the embedded PodTemplateSpec
schema from the `kubernetes-validate` package (development only).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HELP = "print the DebugJob (or, with --kind debugpolicy, the DebugPolicy) CRD as YAML"


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--kind",
        choices=("debugjob", "debugpolicy"),
        default="debugjob",
        help="which CRD to print (default debugjob)",
    )
    parser.add_argument("-o", "--output", type=Path, help="write to this file instead of stdout")
    parser.add_argument(
        "--vendor-pod-schema",
        action="store_true",
        help="rewrite trainguard/api/schemas/podtemplatespec-*.json from kubernetes-validate, then print the CRD",
    )


def main(args: argparse.Namespace) -> int:
    from trainguard.api import crd

    if args.vendor_pod_schema:
        target = Path(crd.__file__).parent / "schemas" / crd.POD_SCHEMA_FILE
        target.write_text(json.dumps(crd.vendor_pod_template_schema(), indent=1, sort_keys=True) + "\n")
        print(f"wrote {target}", file=sys.stderr)
    text = crd.policy_crd_yaml() if args.kind == "debugpolicy" else crd.crd_yaml()
    if args.output:
        args.output.write_text(text)
    else:
        sys.stdout.write(text)
    return 0
