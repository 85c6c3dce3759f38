// @media-service/s3-server: an S3-protocol server on a data directory (path-style addressing, one
// credential pair, AWS Signature Version 4). What it offers and refuses: README.md.
export { startEmbeddedS3, type EmbeddedS3, type EmbeddedS3Options } from "./server.js";
