// S3 error codes as the protocol defines them. Every failure the server reports goes through
// S3Error so the response is always the S3 XML error document with the right HTTP status, which is
// what SDKs map to their typed exceptions (err.name === "NoSuchKey", ...).

export class S3Error extends Error {
  constructor(
    readonly code: string,
    readonly status: number,
    message: string,
    /** Additional elements of the <Error> document (BucketName, Key, ...). */
    readonly detail: Record<string, string> = {},
  ) {
    super(message);
    this.name = "S3Error";
  }
}

export const accessDenied = (message = "Access Denied") => new S3Error("AccessDenied", 403, message);
/** The AccessDenied of a request that carries no signature at all. */
export class AnonymousRequestDenied extends S3Error {
  constructor() {
    super("AccessDenied", 403, "Access Denied");
  }
}

export const invalidAccessKeyId = (accessKeyId: string) =>
  new S3Error(
    "InvalidAccessKeyId",
    403,
    "The AWS Access Key Id you provided does not exist in our records.",
    {
      AWSAccessKeyId: accessKeyId,
    },
  );

export const signatureDoesNotMatch = (detail: Record<string, string> = {}) =>
  new S3Error(
    "SignatureDoesNotMatch",
    403,
    "The request signature we calculated does not match the signature you provided. Check your key and signing method.",
    detail,
  );

export const authorizationHeaderMalformed = (message: string) =>
  new S3Error("AuthorizationHeaderMalformed", 400, message);

export const authorizationQueryParametersError = (message: string) =>
  new S3Error("AuthorizationQueryParametersError", 400, message);

export const requestTimeTooSkewed = () =>
  new S3Error(
    "RequestTimeTooSkewed",
    403,
    "The difference between the request time and the current time is too large.",
  );

export const invalidRequest = (message: string) => new S3Error("InvalidRequest", 400, message);

export const invalidArgument = (message: string, detail: Record<string, string> = {}) =>
  new S3Error("InvalidArgument", 400, message, detail);

export const invalidBucketName = (bucket: string) =>
  new S3Error("InvalidBucketName", 400, "The specified bucket is not valid.", { BucketName: bucket });

export const invalidUri = () => new S3Error("InvalidURI", 400, "Couldn't parse the specified URI.");

export const keyTooLong = () => new S3Error("KeyTooLongError", 400, "Your key is too long");

export const noSuchBucket = (bucket: string) =>
  new S3Error("NoSuchBucket", 404, "The specified bucket does not exist", { BucketName: bucket });

export const noSuchKey = (key: string) =>
  new S3Error("NoSuchKey", 404, "The specified key does not exist.", { Key: key });

export const noSuchUpload = (uploadId: string) =>
  new S3Error(
    "NoSuchUpload",
    404,
    "The specified upload does not exist. The upload ID may be invalid, or the upload may have been aborted or completed.",
    { UploadId: uploadId },
  );

export const noSuchVersion = (versionId: string) =>
  new S3Error("NoSuchVersion", 404, "The specified version does not exist.", { VersionId: versionId });

export const bucketAlreadyOwnedByYou = (bucket: string) =>
  new S3Error(
    "BucketAlreadyOwnedByYou",
    409,
    "Your previous request to create the named bucket succeeded and you already own it.",
    { BucketName: bucket },
  );

export const bucketNotEmpty = (bucket: string) =>
  new S3Error("BucketNotEmpty", 409, "The bucket you tried to delete is not empty", { BucketName: bucket });

export const methodNotAllowed = (method: string) =>
  new S3Error("MethodNotAllowed", 405, "The specified method is not allowed against this resource.", {
    Method: method,
  });

export const notImplemented = (
  what = "A header or query you provided implies functionality that is not implemented.",
) => new S3Error("NotImplemented", 501, what);

export const malformedXml = () =>
  new S3Error(
    "MalformedXML",
    400,
    "The XML you provided was not well-formed or did not validate against our published schema.",
  );

export const maxMessageLengthExceeded = () =>
  new S3Error("MaxMessageLengthExceeded", 400, "Your request was too big.");

export const missingContentLength = () =>
  new S3Error("MissingContentLength", 411, "You must provide the Content-Length HTTP header.");
export const entityTooLarge = (maxSize: number) =>
  new S3Error("EntityTooLarge", 400, "Your proposed upload exceeds the maximum allowed object size.", {
    MaxSizeAllowed: String(maxSize),
  });

export const entityTooSmall = (partNumber: number) =>
  new S3Error(
    "EntityTooSmall",
    400,
    "Your proposed upload is smaller than the minimum allowed object size.",
    {
      PartNumber: String(partNumber),
    },
  );

export const incompleteBody = (
  message = "You did not provide the number of bytes specified by the Content-Length HTTP header",
) => new S3Error("IncompleteBody", 400, message);

export const badDigest = (message = "The Content-MD5 you specified did not match what we received.") =>
  new S3Error("BadDigest", 400, message);

export const invalidDigest = () =>
  new S3Error("InvalidDigest", 400, "The Content-MD5 you specified was invalid.");

export const contentSha256Mismatch = (clientValue: string, computed: string) =>
  new S3Error(
    "XAmzContentSHA256Mismatch",
    400,
    "The provided 'x-amz-content-sha256' header does not match what was computed.",
    { ClientComputedContentSHA256: clientValue, S3ComputedContentSHA256: computed },
  );

export const invalidRange = (size: number) =>
  new S3Error("InvalidRange", 416, "The requested range is not satisfiable", {
    ActualObjectSize: String(size),
  });

export const preconditionFailed = (condition: string) =>
  new S3Error("PreconditionFailed", 412, "At least one of the pre-conditions you specified did not hold", {
    Condition: condition,
  });

export const invalidPart = () =>
  new S3Error(
    "InvalidPart",
    400,
    "One or more of the specified parts could not be found. The part may not have been uploaded, or the specified entity tag may not match the part's entity tag.",
  );

export const invalidPartOrder = () =>
  new S3Error(
    "InvalidPartOrder",
    400,
    "The list of parts was not in ascending order. Parts must be ordered by part number.",
  );

export const metadataTooLarge = () =>
  new S3Error("MetadataTooLarge", 400, "Your metadata headers exceed the maximum allowed metadata size.");

export const internalError = () =>
  new S3Error("InternalError", 500, "We encountered an internal error. Please try again.");
