import { ClientLimitError } from "../jobs/client-limits.js";

/** A transition the state machine refuses (e.g. completing a pending job). */
export class IllegalTransitionError extends Error {
  override name = "IllegalTransitionError";
}
export class NotFoundError extends Error {
  override name = "NotFoundError";
}
/** An id (job or batch) that is already taken. */
export class ConflictError extends Error {
  override name = "ConflictError";
}

/** A search whose terms match more index entries than one call reads (lua/list.lua, SEARCH_MAX). */
export class SearchTooBroadError extends Error {
  override name = "SearchTooBroadError";
}

// The scripts answer refusals as error replies that start with a code word.
export function translateScriptError(err: unknown): unknown {
  if (!(err instanceof Error)) return err;
  const match = /(ILLEGAL|NOTFOUND|CONFLICT|TOOMANY|LIMIT) (.*)$/s.exec(err.message);
  if (!match) return err;
  const message = match[2]!.replace(/\s*script: .*$/s, "").trim();
  if (match[1] === "ILLEGAL") return new IllegalTransitionError(message);
  if (match[1] === "NOTFOUND") return new NotFoundError(message);
  if (match[1] === "TOOMANY") return new SearchTooBroadError(message);
  // The one limit a script enforces at submit (submit.lua): max_running holds jobs back, refusing nothing.
  if (match[1] === "LIMIT") return new ClientLimitError(message, "max_pending", 429);
  return new ConflictError(message);
}
