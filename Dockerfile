# syntax=docker/dockerfile:1
# The svc server image (docs/production.md). Three stages on one pinned base:
#   build: every dependency, `npm run build` (esbuild: src/ -> dist/; Vite: the web app -> dist/app)
#   deps:  production dependencies only, from the lockfile (`npm ci --omit=dev`), better-sqlite3 built
#   final: node, git and tini; the built dist/ and the production node_modules; a non-root user that
#          writes only under /data (the SQLite database and the generated key when no DATABASE_URL
#          or SVC_SECRET_KEY is given; SVC_GIT_DIR's repositories under /data/git)
# Commands are the README's: `svc serve` (the default) and `svc migrate`, e.g.
#   docker run --rm --env-file .env svc:0.1.0 migrate

# Pinned: an exact Node version on Debian 12. Raise it on purpose (and the test's pin rule keeps it exact).
FROM node:20.20.2-bookworm-slim AS base
ENV NODE_ENV=production \
    npm_config_update_notifier=false \
    npm_config_fund=false \
    npm_config_audit=false
WORKDIR /app

FROM base AS build
# The toolchain better-sqlite3 falls back to when no prebuilt binary matches.
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
# Development dependencies are needed here (esbuild, Vite); scripts wait for the sources.
RUN npm ci --include=dev --ignore-scripts
COPY tsconfig.json ./
COPY scripts/build.js scripts/build.js
COPY bin ./bin
COPY src ./src
COPY web ./web
RUN npm rebuild esbuild && npm run build \
 && find dist -name '*.map' -delete

FROM base AS deps
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
# Production dependencies only, exactly as locked; the package's own `prepare` (the build) is not
# run here (its output comes from the build stage): only better-sqlite3's native addon is built.
RUN npm ci --omit=dev --ignore-scripts \
 && npm rebuild better-sqlite3 \
 && npm cache clean --force

FROM base
ARG VERSION=0.1.0
ARG REVISION=unknown
LABEL org.opencontainers.image.title="svc" \
      org.opencontainers.image.description="Self-hostable multi-tenant workspace platform API" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.base.name="docker.io/library/node:20.20.2-bookworm-slim" \
      org.opencontainers.image.documentation="docs/production.md"
# git: the repositories the service keeps under SVC_GIT_DIR; tini: PID 1 that forwards SIGTERM (svc
# drains on it) and reaps children. A numeric, non-root user owns /data and nothing else.
RUN apt-get update \
 && apt-get install -y --no-install-recommends git tini ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 svc \
 && useradd --system --uid 10001 --gid 10001 --home-dir /data --no-create-home --shell /usr/sbin/nologin svc \
 && install -d -o 10001 -g 10001 -m 0700 /data
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
COPY bin/svc.js ./bin/svc.js
COPY src/cli/generated/commands.json ./src/cli/generated/commands.json
COPY deploy/docker/healthcheck.js ./healthcheck.js
RUN chmod 0755 /app/bin/svc.js && ln -s /app/bin/svc.js /usr/local/bin/svc
ENV HOST=0.0.0.0 \
    PORT=8080 \
    SVC_DATA_DIR=/data \
    SVC_GIT_DIR=/data/git \
    HOME=/data
USER 10001:10001
VOLUME ["/data"]
EXPOSE 8080 8081
HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=3 CMD ["node", "/app/healthcheck.js"]
ENTRYPOINT ["/usr/bin/tini", "--", "svc"]
CMD ["serve"]
