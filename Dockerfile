# syntax=docker/dockerfile:1
# Build stage: install Portico and its dependencies into a self-contained virtualenv.
FROM python:3.11.11-slim-bookworm AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
RUN python -m venv /opt/portico
WORKDIR /src
COPY pyproject.toml README.md ./
COPY app ./app
COPY gen ./gen
RUN /opt/portico/bin/pip install --no-cache-dir /src
# The dashboard's files, where app/gateway/pages/dashboard.py looks in an install: <sys.prefix>/share/portico/static.
COPY static /opt/portico/share/portico/static

# Runtime stage: the virtualenv only, run as an unprivileged user (same pinned base as the build).
FROM python:3.11.11-slim-bookworm
# The image has no .git: GetVersionInformation reports what the build says here, e.g.
# docker build --build-arg GIT_COMMIT=$(git rev-parse HEAD) --build-arg BUILD_DATE=$(date -u +%FT%TZ) .
ARG GIT_COMMIT=""
ARG GIT_TREE_STATE=""
ARG BUILD_DATE=""
ENV PORTICO_GIT_COMMIT=$GIT_COMMIT \
    PORTICO_GIT_TREE_STATE=$GIT_TREE_STATE \
    PORTICO_BUILD_DATE=$BUILD_DATE
ENV PATH=/opt/portico/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PORTICO_HTTP_HOST=0.0.0.0 \
    PORTICO_GRPC_HOST=0.0.0.0 \
    PORTICO_DATA_DIR=/data
RUN groupadd --system --gid 10001 portico \
    && useradd --system --uid 10001 --gid portico --home-dir /data portico \
    && mkdir -p /data && chown 10001:10001 /data
COPY --from=build /opt/portico /opt/portico
USER 10001:10001
WORKDIR /data
VOLUME ["/data"]
EXPOSE 8080 50051
# Follows PORTICO_HTTP_HOST, PORTICO_HTTP_PORT and PORTICO_TLS_CERT: set them with docker run -e,
# not with serve's flags, which the probe cannot see.
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
    CMD ["python", "-m", "app.cli.healthcheck"]
CMD ["portico", "serve"]
