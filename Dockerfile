# syntax=docker/dockerfile:1
#
# A meta-core node. Build: docker build -t meta-core .
#
# Stage "deps" compiles better-sqlite3 (it needs python3, make and g++) and installs the
# production dependencies only; the runtime stage copies them beside the sources, which
# tsx (a production dependency) runs as they are: no build step, no dev dependencies,
# no compiler. The web page is the committed ui/dist.
#
# Run (a token is required: the API listens on every interface of the container):
#   docker run -d -p 127.0.0.1:9000:9000 -e META_CORE_API_TOKEN=… -v mc-data:/data -v /srv/media:/files meta-core
# Commands: docker run --rm meta-core keygen - > swarm.key   (help, id, status: see README)

FROM node:20-bookworm-slim AS deps
WORKDIR /app
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund \
 && npm cache clean --force

FROM node:20-bookworm-slim AS runtime
ENV NODE_ENV=production \
    META_CORE_DB_PATH=/data/meta-core.db \
    FILES_PATH=/files \
    META_CORE_HTTP_HOST=0.0.0.0 \
    META_CORE_HTTP_PORT=9000
WORKDIR /app
# A fixed uid/gid, so volumes and files mounted from the host can be given to it (chown 10001).
RUN groupadd --system --gid 10001 metacore \
 && useradd --system --uid 10001 --gid metacore --home-dir /app --no-create-home --shell /usr/sbin/nologin metacore \
 && mkdir -p /data /files /keys \
 && chown metacore:metacore /data /files /keys
COPY --from=deps /app/node_modules ./node_modules
COPY package.json package-lock.json tsconfig.json ./
COPY bin ./bin
COPY src ./src
COPY ui/dist ./ui/dist
# `docker exec <container> meta-core status` (and id, help) inside a running container.
RUN ln -s /app/bin/meta-core.js /usr/local/bin/meta-core
USER metacore
# /data: the store, its WAL and the identity key; /files: the library; /keys: a swarm key (read-only is enough).
VOLUME ["/data", "/files"]
# 9000: HTTP API and web page; 4001: the mesh (libp2p TCP), used only with a swarm key.
EXPOSE 9000 4001
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 CMD ["node", "/app/bin/healthcheck.js"]
# node is PID 1 and handles SIGTERM itself (graceful stop within META_CORE_SHUTDOWN_TIMEOUT_MS, 5 s by default).
STOPSIGNAL SIGTERM
ENTRYPOINT ["node", "/app/bin/meta-core.js"]
CMD ["start"]
