// Each client's jobs now and its limits (GET /api/v1/queue/stats `clients`): every client for an
// admin, its own for a client; nothing without named clients.
import { formatCount, typeLabel } from "./format.js";
import type { QueueStats } from "./types.js";

type Client = NonNullable<QueueStats["clients"]>[number];

/** "3 of 8" against a limit, or the count alone without one. */
function ofLimit(count: number, limit: number | undefined): string {
  return limit === undefined ? formatCount(count) : `${formatCount(count)} of ${formatCount(limit)}`;
}

function refusedText(refused: Client["refused"]): string {
  const entries = Object.entries(refused).filter(([, n]) => n > 0);
  if (entries.length === 0) return "0";
  return entries.map(([limit, n]) => `${formatCount(n)} (${limit})`).join(", ");
}

export function ClientTable(props: { clients: readonly Client[] }) {
  return (
    <div class="table-scroll">
      <table class="numbers" data-testid="client-table">
        <caption class="visually-hidden">Jobs per client against its limits</caption>
        <thead>
          <tr>
            <th scope="col">Client</th>
            <th scope="col">Running</th>
            <th scope="col">Pending</th>
            <th scope="col">Weight</th>
            <th scope="col">Job types</th>
            <th scope="col">Highest priority</th>
            <th scope="col">Refused</th>
          </tr>
        </thead>
        <tbody>
          {props.clients.map((c) => (
            <tr data-client={c.name}>
              <th scope="row">{c.name === "-" ? "(no client)" : c.name}</th>
              <td data-col="running">{ofLimit(c.running, c.max_running)}</td>
              <td data-col="pending">{ofLimit(c.pending, c.max_pending)}</td>
              <td data-col="weight">{formatCount(c.weight)}</td>
              <td data-col="job_types">{c.job_types ? c.job_types.map(typeLabel).join(", ") : "all"}</td>
              <td data-col="max_priority">{c.max_priority ?? "any"}</td>
              <td data-col="refused">{refusedText(c.refused)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
