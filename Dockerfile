# The minds controller image. The same image runs the controller (the default command) and the
# ledger migrations (`minds db upgrade`, the chart's hook Job): they ship inside the package.
#
#   buildah bud --timestamp "$(git log -1 --format=%ct)" --build-arg VERSION=0.1.0 \
#       --build-arg REVISION="$(git rev-parse HEAD)" -t minds-operator:0.1.0 .
#
# VERSION must be the package's version (pyproject.toml): the build fails otherwise, so the
# image's version label is always the version it holds. The dependencies are exactly those of
# requirements/image.lock, each checked against its hash (`make lock` regenerates it). With
# --timestamp set to the last commit's time, two builds of one commit on one base are the same
# image, digest and all (docs/install.md).
#
# BASE_IMAGE is pinned by tag and digest; pass another (a mirror, a locally built base) with
# --build-arg BASE_IMAGE=... . To build without network, put wheels of every dependency in
# wheelhouse/ and pass --build-arg PIP_NO_INDEX=1 --build-arg PIP_FIND_LINKS=/src/wheelhouse.
ARG BASE_IMAGE=python:3.12-slim-bookworm@sha256:34386ef0cb081344d7ec1c103ba398e6e9f64e9ab3a1509accc92a4e24a07258

FROM ${BASE_IMAGE} AS builder
ARG PIP_NO_INDEX=
ARG PIP_FIND_LINKS=
ARG VERSION=
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PYTHONDONTWRITEBYTECODE=1
WORKDIR /src
COPY . /src
# VERSION is checked first: the package's version, or no build. A build virtualenv with the
# locked build backend builds the wheel (what a release publishes); the runtime virtualenv gets
# the locked dependencies and the wheel, nothing else: no pip, no test extras, no build tools.
# kubernetes/aio (the client's asyncio twin, 41 MB) goes: nothing imports it, kopf talks to the
# API server itself. scripts/image-pack.py prunes tests, stubs and C sources, zips the
# pure-Python packages into one file on sys.path and byte-compiles what the commands import
# (the runtime's root filesystem is read-only: Python could not write its caches there). The
# compiled extensions and the libraries they bundle lose their symbol tables (strip, from
# binutils, bookworm's, pinned: installed here from Debian's archive unless the base has it).
SHELL ["/bin/sh", "-eu", "-c"]
RUN python3 -c 'import sys, tomllib; v = tomllib.load(open("pyproject.toml", "rb"))["project"]["version"]; sys.exit(None if v == sys.argv[1] else f"--build-arg VERSION={sys.argv[1]!r}: the package is {v}")' "$VERSION" \
    && python3 -m venv /opt/build \
    && /opt/build/bin/pip install --quiet --require-hashes --no-deps -r requirements/build.lock \
    && /opt/build/bin/pip wheel --quiet --no-deps --no-build-isolation --wheel-dir /wheels . \
    && python3 -m venv --without-pip /opt/minds \
    && pip="/opt/build/bin/pip --python /opt/minds/bin/python" \
    && $pip install --quiet --no-compile --require-hashes --no-deps -r requirements/image.lock \
    && $pip install --quiet --no-compile --no-deps /wheels/*.whl \
    && rm -r "$(/opt/minds/bin/python -c 'import kubernetes, os; print(os.path.dirname(kubernetes.__file__))')/aio" \
    && /opt/minds/bin/python scripts/image-pack.py \
    && if ! command -v strip >/dev/null; then \
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends binutils=2.40-2 >/dev/null; \
    fi \
    && find /opt/minds -type f \( -name '*.so' -o -name '*.so.*' \) -exec strip --strip-unneeded {} +

FROM ${BASE_IMAGE}
ARG VERSION=
ARG REVISION=unknown
LABEL org.opencontainers.image.title="minds-operator" \
      org.opencontainers.image.description="A Kubernetes operator that runs minds: agents that look after infrastructure under strict, inspectable authority." \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.revision="${REVISION}"
ENV PATH=/opt/minds/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
COPY --from=builder /opt/minds /opt/minds
# A numeric user, so Kubernetes can check runAsNonRoot without an /etc/passwd entry.
USER 10001:10001
# 8080: kopf's liveness endpoint; 9090: metrics (the chart's metrics Service).
EXPOSE 8080 9090
ENTRYPOINT ["minds"]
CMD ["controller", "run", "--liveness", "http://0.0.0.0:8080/healthz"]
