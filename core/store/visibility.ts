/**
 * Whose records a reader may see: every client's (an admin, or any caller when authentication is
 * off or only server.api_keys are configured), or one client's own. A record without a client (one
 * submitted while authentication was off) is seen by admins only once named clients exist.
 */
export type Viewer = { all: true } | { client: string };

export const EVERYONE: Viewer = { all: true };

export function canSee(viewer: Viewer, owner: string | undefined): boolean {
  return "all" in viewer || owner === viewer.client;
}
