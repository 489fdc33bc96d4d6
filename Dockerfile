# Golem runtime image.
#
#   docker build -t golem .
#   docker run --rm -v golem-data:/var/lib/golem golem
#
# The image is offline by default: the embedding model is baked in at
# /opt/golem/models/all-minilm-l6-v2-int8 and HF_HUB_OFFLINE=1 is set.
# Keys never go in the image or the TOML: mount them as files (a later change
# reads them from a 0600 file or $CREDENTIALS_DIRECTORY).
#
# The operator API ([api] in the config) is off by default and the image exposes no
# port. To use it, mount a config with [api] enabled = true, host = "0.0.0.0" (inside
# the container; loopback would be unreachable) and a 0600 token file, and publish the
# port on the host's loopback only:
#   docker run --rm -v golem-data:/var/lib/golem -v /etc/golem:/etc/golem:ro \
#       -p 127.0.0.1:8421:8421 golem

# ---- build: venv, project, model, default config ---------------------------
FROM python:3.11-slim-bookworm AS build

ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PATH=/opt/golem/.venv/bin:$PATH

WORKDIR /src

# Dependencies first, so editing the code does not invalidate this layer.
COPY requirements/runtime.txt requirements/runtime.txt
RUN python -m venv /opt/golem/.venv \
    && pip install --no-cache-dir -r requirements/runtime.txt

COPY . .
RUN pip install --no-cache-dir --no-deps . \
    && python scripts/install-model.py --dest /opt/golem/models/all-minilm-l6-v2-int8 \
    && rm -f /opt/golem/models/.all-minilm-l6-v2-int8.lock \
    && mkdir -p /etc/golem \
    && golem init /etc/golem/bardo.toml --data-dir /var/lib/golem \
        --model-dir /opt/golem/models/all-minilm-l6-v2-int8

# ---- runtime ----------------------------------------------------------------
FROM python:3.11-slim-bookworm

RUN groupadd --system --gid 10001 golem \
    && useradd --system --uid 10001 --gid golem --no-create-home \
        --home-dir /var/lib/golem --shell /usr/sbin/nologin golem \
    && mkdir -p /var/lib/golem \
    && chown golem:golem /var/lib/golem \
    && chmod 0700 /var/lib/golem

COPY --from=build /opt/golem /opt/golem
COPY --from=build /etc/golem/bardo.toml /etc/golem/bardo.toml

ENV HF_HUB_OFFLINE=1 \
    MALLOC_ARENA_MAX=2 \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PATH=/opt/golem/.venv/bin:$PATH

# The data dir: episodes, semantic store, durable state, testament.
VOLUME ["/var/lib/golem"]
WORKDIR /var/lib/golem

# The daemon stops ticks, flushes and exits 0 on SIGTERM within its 20 s grace:
# use `docker stop -t 45` (or stop_grace_period) to leave it room.
STOPSIGNAL SIGTERM
# golem:golem, numeric so that runtimes (e.g. Kubernetes runAsNonRoot) can check it.
USER 10001:10001
ENTRYPOINT ["golem", "run", "--config", "/etc/golem/bardo.toml"]
