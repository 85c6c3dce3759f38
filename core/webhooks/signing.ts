import { createHmac } from "node:crypto";

// Standard Webhooks (https://www.standardwebhooks.com): the signature is an HMAC-SHA256, keyed with
// the base64-decoded secret, over `${webhook-id}.${webhook-timestamp}.${body}`, sent as `v1,<base64>`.
// Written here rather than taken from the `standardwebhooks` package: signing is three lines of
// node:crypto, and the tests verify our output with that package as the independent implementation.

const SECRET_PREFIX = "whsec_";
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/** The HMAC key of a `whsec_<base64>` secret (the prefix is optional, as receivers' libraries allow). */
export function decodeSigningSecret(secret: string): Buffer {
  const encoded = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret;
  const key = BASE64.test(encoded) && encoded.length % 4 === 0 ? Buffer.from(encoded, "base64") : undefined;
  if (!key || key.length < 24 || key.length > 64) {
    throw new Error(
      "must be whsec_ followed by the base64 of 24 to 64 random bytes; generate one with: echo whsec_$(openssl rand -base64 32)",
    );
  }
  return key;
}

/** The `webhook-signature` header value. */
export function signWebhook(key: Buffer, id: string, timestampSeconds: number, body: string): string {
  const mac = createHmac("sha256", key).update(`${id}.${timestampSeconds}.${body}`).digest("base64");
  return `v1,${mac}`;
}
