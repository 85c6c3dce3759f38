import { ownBatchId } from "./keys.js";

/**
 * Whose records a reader may see: every client's (an admin, or any caller when authentication is
 * off or only server.api_keys are configured), or one client's own. A record without a client (one
 * submitted while authentication was off) is seen by admins only once named clients exist.
 */
export type Viewer = { all: true } | { client: string };

export const EVERYONE: Viewer = { all: true };

/**
 * Who submits: the name is recorded on every job and batch, and a client that is not an admin has
 * its own copies of the indexes, so that it lists its own records with the reads an admin uses for
 * all of them. An admin lists through the shared indexes: its records get no copies (two sorted-set
 * writes fewer per job). A client that stops being an admin still reads what it submitted as one,
 * by id; its lists hold what it submits from then on.
 */
export interface Submitter {
  name: string;
  admin: boolean;
}

export function canSee(viewer: Viewer, owner: string | undefined): boolean {
  return "all" in viewer || owner === viewer.client;
}

/**
 * Whose batch ids a reader or a submitter uses (keys.ts storedBatchId): a client that is not an
 * admin its own; an admin, or anyone without authentication, the stored ids as they are (an admin
 * reads another client's batch as "<client>/<id>").
 */
export function batchScope(who: Viewer | Submitter | undefined): string | undefined {
  if (!who) return undefined;
  if ("name" in who) return who.admin ? undefined : who.name;
  return "client" in who ? who.client : undefined;
}

/** A stored batch id as `viewer` is shown it: its own without the prefix, an admin's as stored. */
export function shownBatchId(stored: string, viewer: Viewer): string {
  return "all" in viewer ? stored : ownBatchId(stored);
}
