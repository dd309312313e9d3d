# opsche's image for users who build with Docker (or any Dockerfile builder).
# The project's own build is `make image` (mmdebstrap + crane, no Docker engine): the same
# layout, Debian's Python 3.11, opsche and its dependencies from PyPI, entrypoint without a shell.
#
#   docker build -t registry.example/opsche:0.1.0 .
#   helm install opsche ./helm/opsche --set image.repository=registry.example/opsche

FROM debian:bookworm-slim AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 python3-pip python3-venv \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY pyproject.toml README.md ./
COPY src ./src
RUN python3 -m venv /tmp/build && /tmp/build/bin/pip wheel --no-deps --wheel-dir /wheels . \
 && /tmp/build/bin/pip install --no-compile --only-binary=:all: \
      --target /app/usr/local/lib/python3.11/dist-packages /wheels/opsche-*.whl \
 && rm -rf /app/usr/local/lib/python3.11/dist-packages/bin

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 libstdc++6 ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /app/ /
LABEL org.opencontainers.image.title="opsche" \
      org.opencontainers.image.description="A Kubernetes scheduler with cluster-wide CP-SAT plans" \
      org.opencontainers.image.version="0.1.0" \
      org.opencontainers.image.licenses="Apache-2.0"
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 HOME=/tmp
USER 65532:65532
ENTRYPOINT ["/usr/bin/python3", "-m", "opsche_daemon.cli.main"]
CMD ["--help"]
