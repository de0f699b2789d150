# One image for the TrainGuard operator and the evaluator sidecar:
#   trainguard operator ...          (the chart's Deployment)
#   trainguard sidecar --config ...  (the evaluator the operator adds to DebugJob pods)
# BASE is any Debian-like image with python3 >= 3.11 and its venv module; CI passes a local debootstrap
# base (dev/build-image.sh) because registries cannot be reached there.
# The final stage holds the venv only: no compiler, no pip, no package manager run, no writes at runtime
# (HOME and TMPDIR point at /tmp, which the pod mounts as an emptyDir under a read-only root filesystem).
ARG BASE=python:3.11-slim

FROM ${BASE} AS build
# Set by dev/build-image.sh to the host CA bundle it mounts, for pip behind a TLS-intercepting proxy.
ARG PIP_CERT
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_ROOT_USER_ACTION=ignore
WORKDIR /src
# Dependencies first, so that a code change reuses this layer: every package pinned with its sha256 hashes
# (requirements/image.lock, from dev/lock-image.sh); a file that differs from the locked one fails the build.
COPY requirements/image.lock requirements/image.lock
RUN python3 -m venv /opt/trainguard \
    && /opt/trainguard/bin/pip install --no-cache-dir --require-hashes --no-deps -r requirements/image.lock
COPY pyproject.toml README.md LICENSE ./
COPY trainguard ./trainguard
# --no-deps: the locked set above is complete; --no-build-isolation: build with its setuptools, not a fresh
# unpinned one. Then drop the installers from the venv.
RUN /opt/trainguard/bin/pip install --no-cache-dir --no-deps --no-build-isolation . \
    && /opt/trainguard/bin/python3 -m pip uninstall --yes setuptools pip \
    && /opt/trainguard/bin/trainguard --version

FROM ${BASE}
LABEL org.opencontainers.image.title="trainguard" \
      org.opencontainers.image.description="TrainGuard operator and rule-evaluator sidecar" \
      org.opencontainers.image.source="https://github.com/trainguard/trainguard" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /opt/trainguard /opt/trainguard
ENV PATH=/opt/trainguard/bin:${PATH} \
    HOME=/tmp \
    TMPDIR=/tmp \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
WORKDIR /tmp
# Numeric, so Kubernetes can verify runAsNonRoot without a passwd entry.
USER 10001:10001
# 9400: evaluator /metrics and /healthz; 9401: operator /metrics; 8080: operator liveness.
EXPOSE 9400 9401 8080
ENTRYPOINT ["/opt/trainguard/bin/trainguard"]
CMD ["--help"]
