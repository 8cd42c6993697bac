# Postern in a container: a build stage compiles TypeScript and the native SQLite driver, the
# runtime stage carries only production dependencies and runs as an unprivileged user.
# Docker (20.10+) sets net.ipv4.ip_unprivileged_port_start=0 inside containers, so the non-root
# user can bind port 25.

FROM node:24-bookworm-slim AS build
WORKDIR /app
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json tsconfig.json tsconfig.build.json ./
COPY bin ./bin
COPY config ./config
COPY src ./src
COPY ui ./ui
RUN npm ci --no-audit --no-fund && npm prune --omit=dev

FROM node:24-bookworm-slim
# HTTP listens on every address of the container; with POSTERN_PUBLIC_URL unset, links are made
# with http://<POSTERN_HOSTNAME>:8025 (never 0.0.0.0) and the start logs a warning to set it.
# The first start's API keys go to /data/bootstrap-keys.txt (mode 0600) unless run with -t.
# The HTTP port is left to config/default.json (8025): variables win over a config file, so one
# set here would be the only port a config file (POSTERN_CONFIG) could never change.
ENV NODE_ENV=production \
    POSTERN_DATA_DIR=/data \
    POSTERN_HTTP_HOST=0.0.0.0 \
    POSTERN_SMTP_HOST=0.0.0.0 \
    POSTERN_SMTP_PORT=25
RUN groupadd --system --gid 10025 postern \
 && useradd --system --uid 10025 --gid postern --home-dir /data --no-create-home postern \
 && mkdir -p /data && chown postern:postern /data
WORKDIR /app
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
COPY bin ./bin
COPY config ./config
USER postern
VOLUME ["/data"]
# 587 and 465: SMTP submission, when POSTERN_SUBMISSION_ENABLED=true (docs/submission.md).
# 443 (and 80 for ACME HTTP-01): the HTTPS listener, when POSTERN_HTTPS_ENABLED=true (docs/install.md).
EXPOSE 25 587 465 8025 443
STOPSIGNAL SIGTERM
# `postern ready` loads the configuration as `serve` does (defaults, the file POSTERN_CONFIG names,
# POSTERN_* variables), so it asks /readyz on the port the daemon listens on however it was set.
# One attempt of at most 2 s after ~0.7 s of start-up, within the 5 s timeout; any failure, a
# configuration it cannot read (exit 2) included, is Docker's "unhealthy" (1).
HEALTHCHECK --interval=30s --timeout=5s CMD node bin/postern.js ready || exit 1
# The node flags size what only Node's command line can (src/lib/heap-sizes.ts).
ENTRYPOINT ["node", "--max-semi-space-size=8", "bin/postern.js"]
CMD ["serve"]
