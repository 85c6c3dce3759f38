# syntax=docker/dockerfile:1
# media-service image: `docker build -t media-service .`; runs `media-service api` by default
# (`docker run media-service controller` for the controller, `docker run -p 8080:8080 -e API_KEYS=…
# media-service start` for the whole local stack in one container).

ARG NODE_IMAGE=node:24-bookworm-slim

# ---- build: compile TypeScript, then drop dev dependencies ----
FROM ${NODE_IMAGE} AS build
WORKDIR /app
ENV CI=true
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
# npm run build = tsc + scripts/copy-assets.mjs (the store's Lua scripts into dist/).
RUN npm run build \
 && test -f dist/cli.js \
 && npm prune --omit=dev --no-audit --no-fund \
 && rm -rf node_modules/.cache

# ---- runtime ----
FROM ${NODE_IMAGE} AS runtime
ARG NODE_IMAGE
ARG VERSION=0.1.0
ARG REVISION=unknown
ARG CREATED=unknown
ARG SOURCE=""
LABEL org.opencontainers.image.title="media-service" \
      org.opencontainers.image.description="Asynchronous media processing service (images, video, audio, AI) with an HTTP/JSON API on Redis and S3" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.source="${SOURCE}" \
      org.opencontainers.image.base.name="${NODE_IMAGE}"

# The system programs come from the same provisioning script as `npm start` and `npm test`: ffmpeg,
# the watermark font, redis-server (for `start`), tini and CA certificates.
COPY scripts/provision.sh /tmp/provision.sh
RUN bash /tmp/provision.sh image \
 && rm -rf /var/lib/apt/lists/* /tmp/provision.sh \
 && groupadd --gid 10001 media \
 && useradd --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin media \
 && mkdir -p /data \
 && chown 10001:10001 /data

WORKDIR /app
# HOST: a container is reached through its published ports, so the API listens on every interface of
# its own network namespace; `start` still refuses to serve without API keys there. DATA_DIR: where
# `start` keeps its Redis and object store (mount a volume on it to keep them).
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    DATA_DIR=/data
# Owned by root and read-only for the service user.
COPY --from=build /app/package.json ./package.json
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# Runner Jobs run `media-service runner --job <id>` (their command replaces the entrypoint).
RUN printf '#!/bin/sh\nexec node /app/dist/cli.js "$@"\n' > /usr/local/bin/media-service \
 && chmod 755 /usr/local/bin/media-service

USER 10001:10001
EXPOSE 8080 9000
ENTRYPOINT ["tini", "--", "media-service"]
CMD ["api"]
