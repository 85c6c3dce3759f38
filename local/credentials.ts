import type { Config } from "../core/config/load.js";

/** Credentials of the embedded S3-protocol store when S3_ACCESS_KEY_ID / S3_SECRET_ACCESS_KEY are unset. */
export const DEFAULT_EMBEDDED_ACCESS_KEY = "media-service";
export const DEFAULT_EMBEDDED_SECRET_KEY = "media-service-secret";
/** The bucket the embedded store has ready from the first start. */
export const LOCAL_BUCKET = "media";

export interface EmbeddedCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  /**
   * The secret is the default one, published here: printing it gives nothing away, and serving the
   * store off loopback with it would open the store to anyone.
   */
  wellKnown: boolean;
}

/** The embedded store's credentials: the configured ones, else the defaults. */
export function embeddedCredentials(storage: Config["storage"]): EmbeddedCredentials {
  const secretAccessKey = storage.secretAccessKey ?? DEFAULT_EMBEDDED_SECRET_KEY;
  return {
    accessKeyId: storage.accessKeyId ?? DEFAULT_EMBEDDED_ACCESS_KEY,
    secretAccessKey,
    wellKnown: secretAccessKey === DEFAULT_EMBEDDED_SECRET_KEY,
  };
}
