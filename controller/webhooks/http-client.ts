import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import http from "node:http";
import https from "node:https";
import { isIP, type LookupFunction, type Socket } from "node:net";
import { parseRetryAfter } from "../../core/retry.js";
import {
  checkAddress,
  compileAddressPolicy,
  type CompiledAddressPolicy,
  type WebhookAddressPolicy,
} from "../../core/webhooks/address-policy.js";

// The HTTP layer of the webhook notifier: one POST attempt, its outcome classified for the retry logic.
// Messages name the URL's origin at most: paths and queries of webhook URLs often carry secrets.

export interface WebhookRequest {
  url: string;
  body: string;
  headers: Record<string, string>;
  timeoutMs: number;
}

export type WebhookResponse =
  | { kind: "delivered"; statusCode: number }
  | { kind: "rejected"; statusCode: number; message: string }
  | { kind: "retryable"; statusCode?: number; retryAfterMs?: number; message: string }
  | { kind: "refused"; message: string };

export interface WebhookClientOptions {
  /** Per origin; default 16. */
  maxSockets?: number;
  /** Default `media-service-webhooks`. */
  userAgent?: string;
}

/** The most of a response body that is read (and discarded) before the connection is dropped. */
export const MAX_RESPONSE_BODY = 64 * 1024;

/** Raised by the lookup or the connect check when the address policy refuses the address. */
class AddressRefusedError extends Error {
  readonly code = "EWEBHOOKADDRESSREFUSED";
}

export class WebhookClient {
  readonly #policy: CompiledAddressPolicy;
  readonly #userAgent: string;
  readonly #http: http.Agent;
  readonly #https: https.Agent;

  constructor(policy: WebhookAddressPolicy | CompiledAddressPolicy, options: WebhookClientOptions = {}) {
    this.#policy = compileAddressPolicy(policy);
    this.#userAgent = options.userAgent ?? "media-service-webhooks";
    // Agent options reach every socket the agent creates, so every connection goes through the lookup.
    const agentOptions = { keepAlive: true, maxSockets: options.maxSockets ?? 16, lookup: this.#lookup };
    this.#http = new http.Agent(agentOptions);
    this.#https = new https.Agent(agentOptions);
  }

  /** Never throws. */
  async post(request: WebhookRequest): Promise<WebhookResponse> {
    let url: URL;
    try {
      url = new URL(request.url);
    } catch {
      return { kind: "refused", message: "the webhook URL is not a valid URL" };
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") {
      return { kind: "refused", message: `webhook URLs must use http: or https:, not ${url.protocol}` };
    }
    const host = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
    // net.connect does not call the lookup for an IP literal: check it here.
    if (isIP(host) !== 0) {
      const verdict = checkAddress(host, host, this.#policy);
      if (!verdict.allowed)
        return { kind: "refused", message: `refused to connect to ${url.origin}: ${verdict.reason}` };
    }
    return new Promise((resolve) => this.#attempt(url, host, request, resolve));
  }

  /** Destroys the agents and their sockets. */
  close(): void {
    this.#http.destroy();
    this.#https.destroy();
  }

  // dns.lookup, always asked for every address so that all of them are checked. If any address is
  // refused the connection is: with autoSelectFamily, node may try each address in turn, and a name
  // that mixes public and internal addresses is a rebinding attempt far more often than a real setup.
  readonly #lookup: LookupFunction = (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses: LookupAddress[]) => {
      if (err) return callback(err, "");
      for (const { address } of addresses) {
        const verdict = checkAddress(address, hostname, this.#policy);
        if (!verdict.allowed) return callback(new AddressRefusedError(verdict.reason), "");
      }
      const first = addresses[0];
      if (options.all) callback(null, addresses);
      else if (first) callback(null, first.address, first.family);
      else callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: "ENOTFOUND" }), "");
    });
  };

  #attempt(url: URL, host: string, request: WebhookRequest, resolve: (r: WebhookResponse) => void): void {
    const origin = url.origin;
    let outcome: WebhookResponse | undefined; // known once the status line has arrived
    let settled = false;
    const finish = (response: WebhookResponse) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(response);
    };

    const headers: Record<string, string | number> = {
      "user-agent": this.#userAgent,
      "content-type": "application/json",
    };
    for (const [name, value] of Object.entries(request.headers)) {
      // The framing is ours: a caller's content-length or transfer-encoding would break it.
      if (!/^(content-length|transfer-encoding)$/i.test(name)) headers[name] = value;
    }
    headers["content-length"] = Buffer.byteLength(request.body);

    let req: http.ClientRequest;
    try {
      const agent = url.protocol === "https:" ? this.#https : this.#http;
      req = (url.protocol === "https:" ? https : http).request(url, { method: "POST", agent, headers });
    } catch (err) {
      // Invalid header names or values: the same on every attempt.
      resolve({ kind: "refused", message: `could not build the request to ${origin}: ${describe(err)}` });
      return;
    }

    // One deadline for the whole attempt. Once the status is known it is the outcome (the receiver has
    // the webhook), and a slow body only costs the connection.
    const timer = setTimeout(() => {
      const seconds = Math.round(request.timeoutMs / 100) / 10;
      finish(outcome ?? { kind: "retryable", message: `no response from ${origin} within ${seconds} s` });
      req.destroy();
    }, request.timeoutMs);

    req.on("socket", (socket: Socket) => {
      // Defence in depth: the address actually connected to, whatever resolved it.
      const verify = () => {
        const address = socket.remoteAddress;
        const verdict = address === undefined ? undefined : checkAddress(address, host, this.#policy);
        if (verdict && !verdict.allowed) req.destroy(new AddressRefusedError(verdict.reason));
      };
      // Listeners run before the request is flushed to a connecting socket, so nothing is sent.
      if (socket.connecting) socket.once("connect", verify);
      else verify();
    });

    req.on("error", (err) => {
      if (outcome) finish(outcome);
      else if (err instanceof AddressRefusedError) {
        finish({ kind: "refused", message: `refused to connect to ${origin}: ${err.message}` });
      } else finish({ kind: "retryable", message: `could not deliver to ${origin}: ${describe(err)}` });
    });

    req.on("response", (res) => {
      const done = classify(res.statusCode ?? 0, res.headers, origin);
      outcome = done;
      let received = 0;
      res.on("data", (chunk: Buffer) => {
        received += chunk.length;
        if (received > MAX_RESPONSE_BODY) {
          finish(done);
          res.destroy(); // drops the connection rather than reading the rest
        }
      });
      res.on("end", () => finish(done));
      res.on("close", () => finish(done));
      res.on("error", () => finish(done));
    });

    req.end(request.body);
  }
}

function classify(statusCode: number, headers: http.IncomingHttpHeaders, origin: string): WebhookResponse {
  const status = `${statusCode} ${http.STATUS_CODES[statusCode] ?? ""}`.trim();
  if (statusCode >= 200 && statusCode < 300) return { kind: "delivered", statusCode };
  if (statusCode >= 300 && statusCode < 400) {
    return {
      kind: "rejected",
      statusCode,
      message: `${origin} answered ${status}; redirects are not followed`,
    };
  }
  if (statusCode === 429 || (statusCode >= 500 && statusCode < 600)) {
    const retryAfterMs = parseRetryAfter(headers["retry-after"]);
    const message = `${origin} answered ${status}`;
    return retryAfterMs === undefined
      ? { kind: "retryable", statusCode, message }
      : { kind: "retryable", statusCode, retryAfterMs, message };
  }
  return { kind: "rejected", statusCode, message: `${origin} answered ${status}` };
}

function describe(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  // With autoSelectFamily, failing every address gives an AggregateError with an empty message.
  if (err.message === "" && err instanceof AggregateError) {
    return err.errors.map((e: unknown) => (e instanceof Error ? e.message : String(e))).join("; ");
  }
  return err.message.trim() || ((err as NodeJS.ErrnoException).code ?? err.name);
}
