# syntax=docker/dockerfile:1
# media-service image: `bash scripts/build-image.sh` (prints the image reference; docs/image.md), or
# `docker build -t media-service .`. Runs `media-service api` by default (`docker run media-service
# controller` for the controller, `docker run -p 8080:8080 -e API_KEYS=… media-service start` for the
# whole local stack in one container).
#
# Stages: build (TypeScript, production node_modules without what they carry for development),
# native (ffmpeg from Debian's source with what the runner uses; node stripped), system (the runtime
# filesystem: Debian, node, ffmpeg, redis-server, tini, a font, CA certificates), runtime (that
# filesystem as one layer, without npm, headers, manuals or the build's certificates, then the app).
# Nothing in it needs BuildKit: the classic builder builds it (scripts/build-image.sh uses BuildKit only
# where the buildx plugin is installed).
#
# build-ca.pem (optional, in the build context): certificates npm and apt trust during the build, as
# behind a TLS-intercepting proxy (scripts/build-image.sh puts the host's bundle there). Only build
# stages see it; nothing of it reaches the image.

ARG NODE_IMAGE=node:24-bookworm-slim

# ---- build: compile TypeScript, then drop dev dependencies ----
FROM ${NODE_IMAGE} AS build
WORKDIR /app
ENV CI=true
COPY package.json package-lock.json build-ca.pe[m] ./
# The workspace packages' manifests too: npm ci links them into node_modules.
COPY packages/s3-server/package.json packages/s3-server/
RUN if [ -s build-ca.pem ]; then export npm_config_cafile="$PWD/build-ca.pem"; fi \
 && npm ci --no-audit --no-fund
COPY . .
# npm run build = tsc -b (the workspace package @media-service/s3-server into packages/s3-server/dist,
# then the service into dist/) + scripts/copy-assets.mjs (the store's Lua scripts into dist/) +
# scripts/bundle-typebox.mjs (TypeBox as one file, dist/core/typebox.js) + the dashboard (Vite,
# into dist/ui: browser code, left out of the import check below). Then what the production
# dependencies carry and never run: source maps, type declarations, Markdown (licences kept), a
# package's own tests, docs, examples and benchmarks, and prebuilt binaries for other platforms; of
# the workspace packages (linked from node_modules) only package.json and the compiled JavaScript
# (with its source maps, as dist/ has them) are kept. Every dependency and every compiled module
# must still import.
RUN npm run build \
 && test -f dist/cli.js && test -f dist/ui/index.html \
 && npm prune --omit=dev --no-audit --no-fund \
 && find packages -mindepth 2 -maxdepth 2 ! -name package.json ! -name dist ! -name node_modules -exec rm -rf {} + \
 && find packages -path '*/dist/*' \( -name '*.d.ts' -o -name '*.d.ts.map' -o -name '*.tsbuildinfo' \) -delete \
 && rm -rf node_modules/.cache \
 && find node_modules -type f \( -name '*.map' -o -name '*.d.ts' -o -name '*.d.mts' -o -name '*.d.cts' \
      -o -iname '*.md' -o -iname '*.markdown' \) ! -iname 'licen[cs]e*' ! -iname 'copying*' ! -iname 'notice*' -delete \
 && find node_modules -regextype posix-extended -type d \
      -regex '(.*/)?node_modules/(@[^/]+/)?[^/]+/(test|tests|__tests__|coverage|docs?|examples?|benchmarks?|\.github)' \
      -prune -exec rm -rf {} + \
 && platform="$(node -p 'process.platform + "-" + process.arch')" \
 && find node_modules -type d -path '*/prebuilds/*' -prune ! -name "$platform" -exec rm -rf {} + \
 && node --input-type=module -e " \
      import { readdirSync, readFileSync } from 'node:fs'; \
      for (const d of Object.keys(JSON.parse(readFileSync('package.json', 'utf8')).dependencies)) await import(d); \
      for (const f of readdirSync('dist', { recursive: true })) \
        if (f.endsWith('.js') && f !== 'cli.js' && !f.startsWith('ui/')) await import('./dist/' + f);"

# ---- native: ffmpeg and ffprobe from Debian's source, with what the runner uses ----
FROM ${NODE_IMAGE} AS native
COPY scripts/build-ffmpeg.sh build-ca.pe[m] /tmp/native/
RUN if [ -s /tmp/native/build-ca.pem ]; then \
      echo 'Acquire::https::CAInfo "/tmp/native/build-ca.pem";' >/etc/apt/apt.conf.d/99build-ca; \
    fi \
 && bash /tmp/native/build-ffmpeg.sh /out \
 && strip --strip-all -o /out/usr/local/bin/node /usr/local/bin/node

# ---- system: the runtime filesystem ----
FROM ${NODE_IMAGE} AS system
# As in Debian's slim images: packages leave out manuals, documentation (copyrights kept),
# translations and lintian overrides.
RUN printf '%s\n' 'path-exclude /usr/share/doc/*' 'path-include /usr/share/doc/*/copyright' \
      'path-exclude /usr/share/man/*' 'path-exclude /usr/share/groff/*' 'path-exclude /usr/share/info/*' \
      'path-exclude /usr/share/lintian/*' 'path-exclude /usr/share/linda/*' 'path-exclude /usr/share/locale/*' \
      >/etc/dpkg/dpkg.cfg.d/media-service-slim
# node (stripped), ffmpeg, ffprobe and their libraries.
COPY --from=native /out/ /
# The system programs come from the same provisioning script as `npm start` and `npm test`: the
# libraries the ffmpeg above links, the watermark font, redis-server (for `start`), tini and CA
# certificates. Then out goes what the runtime never uses: npm (with corepack and yarn where the base
# has them), Node's headers, APT's lists, logs, and what the base carried of manuals and translations.
# The `media-service` command puts MEDIA_SERVICE_NODE_FLAGS (unset: nothing) before the script: Node
# refuses V8 flags in NODE_OPTIONS, and a runner Job's pod sets the runner's there.
COPY scripts/provision.sh build-ca.pe[m] /tmp/system/
RUN set -eu \
 && if [ -s /tmp/system/build-ca.pem ]; then \
      echo 'Acquire::https::CAInfo "/tmp/system/build-ca.pem";' >/etc/apt/apt.conf.d/99build-ca; \
    fi \
 && ldconfig \
 && bash /tmp/system/provision.sh image \
 && ffmpeg -hide_banner -version >/dev/null && ffprobe -hide_banner -version >/dev/null \
 && rm -rf /usr/local/lib/node_modules /usr/local/bin/npm /usr/local/bin/npx /usr/local/bin/corepack \
      /usr/local/bin/yarn /usr/local/bin/yarnpkg /opt/yarn-* /usr/local/include /usr/local/share/doc \
      /usr/local/share/man /usr/local/etc/npmrc /root/.npm /root/.cache \
      /etc/apt/apt.conf.d/99build-ca /var/lib/apt/lists/* /var/cache/apt/*.bin /var/cache/apt/archives/*.deb \
      /var/cache/debconf/*-old \
      /var/log/apt /var/log/dpkg.log /var/log/alternatives.log /tmp/system \
 && find /usr/share/doc -mindepth 1 ! -type d ! -name copyright -delete \
 && find /usr/share/doc -mindepth 1 -type d -empty -delete \
 && rm -rf /usr/share/man/* /usr/share/groff/* /usr/share/info/* /usr/share/lintian/* /usr/share/locale/* \
 && groupadd --gid 10001 media \
 && useradd --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin media \
 && mkdir -p /data \
 && chown 10001:10001 /data \
 && printf '#!/bin/sh\nexec node $MEDIA_SERVICE_NODE_FLAGS /app/dist/cli.js "$@"\n' >/usr/local/bin/media-service \
 && chmod 755 /usr/local/bin/media-service

# ---- runtime ----
FROM scratch AS runtime
# The system stage's filesystem in one layer: what it removed is not underneath in a base layer.
COPY --from=system / /
WORKDIR /app
# HOST: a container is reached through its published ports, so the API listens on every interface of
# its own network namespace; `start` still refuses to serve without API keys there. DATA_DIR: where
# `start` keeps its Redis and object store (mount a volume on it to keep them). MEDIA_SERVICE_IMAGE:
# `start` prints its example with curl, for the container's host, which has no media-service command.
ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    NODE_ENV=production \
    MEDIA_SERVICE_IMAGE=1 \
    HOST=0.0.0.0 \
    DATA_DIR=/data
# Owned by root and read-only for the service user. Runner Jobs run `media-service runner --job <id>`
# (their command replaces the entrypoint).
COPY --from=build /app/package.json ./package.json
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/packages ./packages
COPY --from=build /app/dist ./dist

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

USER 10001:10001
EXPOSE 8080 9000
ENTRYPOINT ["tini", "--", "media-service"]
CMD ["api"]
