import type { ListFilter, ListPosition } from "../core/store/store.js";
import type { Viewer } from "../core/store/visibility.js";
import { clip } from "../core/text.js";

/**
 * The paging of the list routes (GET /jobs, GET /jobs/batch). A cursor is opaque to clients; it is
 * the place of the last record of a page: its created_ms in base 36, a dot, its id. The next page
 * starts after that place in the lists' order (created_ms descending, then id descending), whether
 * or not the record still exists, so records added or removed meanwhile never shift a page.
 *
 * CURSOR_PATTERN is the whole grammar, and every text it matches is a place (created_ms below 36^10,
 * an id of the characters job and batch ids are made of, a batch's as it is stored: a client's own
 * as "<client>/<id>", core/store/keys.ts storedBatchId), so the schema alone tells a cursor from
 * anything else: a malformed one is refused by validation (a 400 naming `cursor`), and one that is
 * well formed but made up is only a place in the order, which shows nothing the reader may not list.
 */
export const CURSOR_PATTERN =
  "^[0-9a-z]{1,10}\\.(?:[A-Za-z0-9][A-Za-z0-9._-]{0,63}/)?[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$";

/** A 400 whose message the client gets as is (api/errors.ts). */
class ListQueryError extends Error {
  readonly statusCode = 400;
}

const CURSOR = new RegExp(CURSOR_PATTERN);

export function encodeCursor(position: ListPosition): string {
  const cursor = `${position.createdMs.toString(36)}.${position.id}`;
  if (!Number.isSafeInteger(position.createdMs) || !CURSOR.test(cursor)) {
    throw new Error(`no cursor stands for created_ms ${position.createdMs} and id ${clip(position.id, 80)}`);
  }
  return cursor;
}

/** The place a cursor stands for (the schema has checked its form; this checks it again). */
export function decodeCursor(cursor: string): ListPosition {
  if (!CURSOR.test(cursor)) {
    throw new ListQueryError(
      `query parameter cursor is not a cursor of this API: pass the next_cursor of a previous answer as it is (${clip(cursor, 80)})`,
    );
  }
  const dot = cursor.indexOf(".");
  return { createdMs: parseInt(cursor.slice(0, dot), 36), id: cursor.slice(dot + 1) };
}

/**
 * An RFC 3339 date-time (the schema has checked it) as epoch ms, rounded up: records carry whole
 * milliseconds, so "at or after t" and "before t" mean the same with t rounded up. A leap second
 * (23:59:60) is the end of its minute.
 */
export function timeParam(name: string, text: string): number {
  const match =
    /^(\d{4}-\d{2}-\d{2})[Tt ](\d{2}:\d{2}):(\d{2})(?:\.(\d+))?(?:([Zz])|([+-]\d{2})(?::?(\d{2}))?)$/.exec(
      text,
    );
  const [, date, minute, second = "", fraction = "", zulu, hours, minutes = "00"] = match ?? [];
  const leap = second === "60";
  const at = `${date}T${minute}:${leap ? "59" : second}${zulu ? "Z" : `${hours}:${minutes}`}`;
  const ms = match ? Date.parse(at) : NaN;
  if (!Number.isFinite(ms)) {
    throw new ListQueryError(
      `query parameter ${name} is not a date-time this API can read (such as 2026-05-01T12:00:00Z): ${clip(text, 80)}`,
    );
  }
  if (leap) return ms + 1000;
  const whole = Number(fraction.slice(0, 3).padEnd(3, "0"));
  const rest = /[1-9]/.test(fraction.slice(3)) ? 1 : 0;
  return ms + whole + rest;
}

/** What the list routes share in their query strings. */
export interface ListQuery {
  limit: number;
  cursor?: string;
  created_after?: string;
  created_before?: string;
}

/**
 * The store's filter for a list route's query: times read, cursor decoded. A window whose
 * created_after is not before its created_before is empty (the store finds nothing in it).
 */
export function listFilter(query: ListQuery, viewer: Viewer): ListFilter {
  const createdAfter =
    query.created_after !== undefined ? timeParam("created_after", query.created_after) : undefined;
  const createdBefore =
    query.created_before !== undefined ? timeParam("created_before", query.created_before) : undefined;
  return {
    limit: query.limit,
    viewer,
    ...(createdAfter !== undefined ? { createdAfter } : {}),
    ...(createdBefore !== undefined ? { createdBefore } : {}),
    ...(query.cursor !== undefined ? { after: decodeCursor(query.cursor) } : {}),
  };
}

/** The answer's next_cursor, present only when records follow the page. */
export function nextCursor(next: ListPosition | undefined): { next_cursor?: string } {
  return next ? { next_cursor: encodeCursor(next) } : {};
}
