// What a failed Kubernetes API call says, for logs and job errors.
import { ApiException } from "@kubernetes/client-node";

/** The `message` of a Status body (client-node gives the body as a string or as parsed JSON). */
export function bodyMessage(body: unknown): string {
  if (typeof body === "string") {
    try {
      return (JSON.parse(body) as { message?: string }).message ?? body;
    } catch {
      return body;
    }
  }
  return (body as { message?: string } | undefined)?.message ?? "";
}

export function describeError(err: unknown): string {
  if (err instanceof ApiException) return `Kubernetes API answered ${err.code}: ${bodyMessage(err.body)}`;
  return err instanceof Error ? err.message : String(err);
}
