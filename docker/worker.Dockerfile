# syntax=docker/dockerfile:1
#
# The connect-plane worker: `connect-distributed` (default) or `connect-standalone`.
# Build from the repository root, as docker/compose.yaml does:
#
#   docker build -f docker/worker.Dockerfile -t connect-plane-worker .
#
# docker/worker.Dockerfile.dockerignore (BuildKit's per-Dockerfile ignore file) keeps
# .venv, .git, tests, ... out of the build context.
FROM python:3.11-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore

# The worker and the provider are one distribution; constraints.txt pins every dependency,
# exactly as `make venv` installs them (no test extras).
WORKDIR /opt/connect-plane
COPY pyproject.toml constraints.txt README.md ./
COPY worker/ ./worker/
COPY airflow_provider/ ./airflow_provider/
RUN pip install -c constraints.txt . \
    && pip check \
    && rm -rf build ./*.egg-info

# Run as an unprivileged user. /data is where file connectors read and write (a named
# volume shared by the workers in compose); /etc/connect holds worker.properties.
RUN groupadd --system --gid 1000 connect \
    && useradd --system --uid 1000 --gid connect --create-home --home-dir /home/connect connect \
    && mkdir -p /data /etc/connect \
    && chown connect:connect /data
USER connect
WORKDIR /home/connect

# The REST API (listeners=http://0.0.0.0:8083 in the compose stack's worker files).
EXPOSE 8083

# KIP-1017: /health answers 200 once the worker has joined its cluster and read the config
# topic, 503 while it is starting, 500 when it is stuck (urlopen raises: exit status 1).
# Slim images have no curl. A worker file with another listener port needs its own
# healthcheck (compose: healthcheck.test).
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=6 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8083/health', timeout=4)"]

CMD ["connect-distributed", "/etc/connect/worker.properties"]
