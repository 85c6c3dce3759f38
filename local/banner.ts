import {
  DASHBOARD_PATH,
  DEFAULT_API_URL,
  isLoopback,
  isUnspecified,
  listenHost,
} from "../core/config/exposure.js";
import type { Config } from "../core/config/load.js";
import { ConfigFile, ENV, StorageConfig } from "../core/config/schema.js";
import { embeddedCredentials, LOCAL_BUCKET } from "./credentials.js";

import type { LocalStack } from "./stack.js";

/** Where a client on this machine reaches the API `start` serves. */
export function apiBaseUrl(config: Config): string {
  const host = listenHost(config, "start");
  const name = isLoopback(host) || isUnspecified(host) ? "localhost" : host;
  return `http://${name.includes(":") ? `[${name}]` : name}:${config.server.port}`;
}

/**
 * How the example `start` prints reaches the service: with the project's own command line
 * (`bin/media-service`, from the project's directory: what `npm start` users have), or with nothing but
 * curl and node (a container of the image, whose host has no media-service command).
 */
export type ExampleClient = "cli" | "curl";

/**
 * The copy-paste example `start` prints and the README shows (for the default settings): upload a
 * photo into the object store, submit a resize and follow it to its end, fetch the result. The
 * command line reads the object store's settings as the service does (the same environment); the
 * API's address and a key are given when they are not the defaults. Credentials the user chose are
 * referenced by their variables, never printed.
 */
export function quickstart(config: Config, client: ExampleClient = "cli", embeddedStore?: string): string {
  return client === "cli" ? cliQuickstart(config, embeddedStore) : curlQuickstart(config);
}

/** `embeddedStore`: the address of the embedded store `start` runs, when it runs one. */
function cliQuickstart(config: Config, embeddedStore?: string): string {
  const api = apiBaseUrl(config);
  const url = api === DEFAULT_API_URL ? "" : ` --url ${api}`;
  const key = config.server.clients.length > 0 ? ' --api-key "$API_KEY"' : "";
  const at = (key: string) => `s3://${LOCAL_BUCKET}/${key}`;
  // put and get find the store as the service does: the embedded store of the `start` whose API
  // --url names (local/start-state.ts), or S3_ENDPOINT, which another terminal may not have.
  // A data directory other than the default one, which another terminal would not find the state
  // in, needs the store's port said.
  const embeddedPort = embeddedStore ? Number(new URL(embeddedStore).port) : config.storage.embeddedPort;
  const store =
    config.storage.endpoint && !embeddedStore
      ? `S3_ENDPOINT=${config.storage.endpoint} `
      : embeddedPort !== SETTING.port.default && config.dataDir !== SETTING.dataDir.default
        ? `${SETTING.port[ENV]}=${embeddedPort} `
        : "";
  const storeUrl = embeddedStore ? url : "";
  // A path, not `npx media-service`: outside the project npx would fetch and run whatever the npm
  // registry has under that name.
  return [
    `${store}${CLI}${storeUrl} put photo.jpg ${at("in/photo.jpg")}`,
    `${CLI}${url}${key} submit image/resize --source ${at("in/photo.jpg")} \\`,
    `  --dest ${at("out/photo.webp")} width=640 height=480 format=webp --wait`,
    `${store}${CLI}${storeUrl} get ${at("out/photo.webp")} photo.webp`,
  ].join("\n");
}

/** The settings whose defaults the example leaves out: their defaults and environment variables. */
const SETTING = {
  port: StorageConfig.properties.embedded_port as unknown as { default: number; [ENV]: string },
  dataDir: ConfigFile.properties.data_dir as unknown as { default: string },
};

/** The project's command line, from the project's directory (bin/media-service runs it under Node 24). */
export const CLI = "bin/media-service";

function curlQuickstart(config: Config): string {
  const api = apiBaseUrl(config);
  const s3 = config.storage.endpoint ?? `http://127.0.0.1:${config.storage.embeddedPort}`;
  const credentials = embeddedCredentials(config.storage);
  const user = credentials.wellKnown
    ? `${credentials.accessKeyId}:${credentials.secretAccessKey}`
    : '"$S3_ACCESS_KEY_ID:$S3_SECRET_ACCESS_KEY"';
  // curl signs S3 requests itself (7.75+); the payload hash header is what older curls do not add.
  const s3curl =
    `s3() { curl -fsS --aws-sigv4 aws:amz:${config.storage.region}:s3 --user ${user} ` +
    `-H x-amz-content-sha256:UNSIGNED-PAYLOAD "$@"; }`;
  const key = config.server.clients.length > 0 ? ` -H "X-API-Key: $API_KEY"` : "";
  const job = JSON.stringify({
    source_bucket: LOCAL_BUCKET,
    source_key: "in/photo.jpg",
    dest_bucket: LOCAL_BUCKET,
    dest_key: "out/photo.webp",
    width: 640,
    height: 480,
    format: "webp",
  });
  return [
    s3curl,
    `s3 -T photo.jpg ${s3}/${LOCAL_BUCKET}/in/photo.jpg`,
    `JOB=$(curl -fsS${key} ${api}/api/v1/jobs/image/resize -H 'Content-Type: application/json' \\`,
    `  -d '${job}' \\`,
    `  | node -p 'JSON.parse(fs.readFileSync(0, "utf8")).job_id')`,
    `curl -fsSN${key} ${api}/api/v1/jobs/$JOB/stream`,
    `s3 -o photo.webp ${s3}/${LOCAL_BUCKET}/out/photo.webp`,
  ].join("\n");
}

/** What `start` started (LocalStack.started), and the AI provider line. */
export interface BannerFacts extends Pick<LocalStack, "started"> {
  ai: string;
  /** How the printed example reaches the service. */
  client: ExampleClient;
}

/** What `start` prints on a terminal once everything is up. */
export function banner(config: Config, facts: BannerFacts): string {
  const api = apiBaseUrl(config);
  const host = listenHost(config, "start");
  const reach = isLoopback(host)
    ? "this machine only"
    : config.server.clients.length > 0
      ? `${host}, with API keys`
      : `${host}, WITHOUT authentication`;
  const { accessKeyId, endpoint } = config.storage;
  const embedded = embeddedCredentials(config.storage);
  const credentials = embedded.wellKnown
    ? `access key ${embedded.accessKeyId}, secret ${embedded.secretAccessKey}`
    : `access key ${accessKeyId ?? "from the environment"}`;
  const { started } = facts;
  const bucket = started.s3 ? `, bucket ${LOCAL_BUCKET}` : "";
  const redis = started.redis
    ? `${started.redis} (its own, password in ${config.dataDir}/redis/password)`
    : "from REDIS_URL";
  const indent = (text: string) => text.replace(/^/gm, "    ");
  const keyNote = config.server.clients.length > 0 ? "\n    API_KEY=<one of your API keys>" : "";
  return `
  media-service is running (Ctrl-C stops it)

    API            ${api}/api/v1  (reachable from ${reach})
    dashboard      ${api}${DASHBOARD_PATH}
    API reference  ${api}${config.server.docsPath}
    health         ${api}/health/ready
    object store   ${endpoint ?? "AWS S3"}  ${credentials}${bucket}
    redis          ${redis}
    AI provider    ${facts.ai}
    data           ${config.dataDir}

  try it from another terminal${facts.client === "cli" ? ", in this directory," : ""} next to a photo.jpg:
${keyNote}
${indent(quickstart(config, facts.client, started.s3))}

`;
}
