/** Credentials of the embedded S3-protocol store when S3_ACCESS_KEY_ID / S3_SECRET_ACCESS_KEY are unset. */
export const DEFAULT_EMBEDDED_ACCESS_KEY = "media-service";
export const DEFAULT_EMBEDDED_SECRET_KEY = "media-service-secret";
/** The bucket the embedded store has ready from the first start. */
export const LOCAL_BUCKET = "media";
