# The minds controller image. The same image runs the controller (the default command) and the
# ledger migrations (`minds db upgrade`, the chart's hook Job): they ship inside the package.
#
#   docker build -t minds-operator:0.1.0 .
#
# BASE_IMAGE is pinned by tag and digest; pass another (a mirror, a locally built base) with
# --build-arg BASE_IMAGE=... . To build without network, put wheels of every dependency in
# wheelhouse/ and pass --build-arg PIP_NO_INDEX=1 --build-arg PIP_FIND_LINKS=/src/wheelhouse.
ARG BASE_IMAGE=python:3.12-slim-bookworm@sha256:34386ef0cb081344d7ec1c103ba398e6e9f64e9ab3a1509accc92a4e24a07258

FROM ${BASE_IMAGE} AS builder
ARG PIP_NO_INDEX=
ARG PIP_FIND_LINKS=
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PYTHONDONTWRITEBYTECODE=1
WORKDIR /src
COPY . /src
# The wheel first (what a release publishes), then a virtualenv holding it and its runtime
# dependencies only: no test extras, no build tools. Byte-compiled here, because the runtime's
# root filesystem is read-only and Python could not write its caches there.
SHELL ["/bin/sh", "-eu", "-c"]
RUN python3 -m venv /opt/minds \
    && /opt/minds/bin/pip wheel --no-deps --wheel-dir /wheels . \
    && /opt/minds/bin/pip install /wheels/*.whl \
    && /opt/minds/bin/pip uninstall --yes pip \
    && python3 -m compileall -q -j 0 /opt/minds

FROM ${BASE_IMAGE}
ARG VERSION=0.1.0
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
