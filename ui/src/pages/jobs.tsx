import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { api, query } from "../api.js";
import { LiveState, Loading, Notice, Pager, StatusBadge } from "../components.js";
import { formatAgo, formatDateTime, isoToLocalInput, localInputToIso, typeLabel } from "../format.js";
import { useJobChanges } from "../live.js";
import { OutputThumb } from "../preview.js";
import { Link, navigate, useLocation } from "../router.js";
import type { Job, JobChange, JobList, JobState, JobSummary } from "../types.js";
import { JOB_STATES, JOB_TYPES } from "../../../core/jobs/types.js";

const PAGE_SIZE = 25;
// The filters, in the address; `limit` (the page size, 25 unless given) is not in the form.
// `state` is what the Status choice sets (failed and cancelled apart); `status` stays readable in links.
const FILTERS = ["status", "state", "type", "batch_id", "created_after", "created_before", "limit"] as const;
type Filters = Partial<Record<(typeof FILTERS)[number], string>>;

interface Paging {
  key: string;
  stack: string[];
  cursor?: string;
}

export interface Row extends Omit<JobSummary, "state"> {
  /** What a person reads (cancelled apart from failed); absent from an older API's summaries. */
  state?: JobSummary["state"];
  error?: string;
  cancelled?: boolean;
  /** Arrived over the live stream after the page was read. */
  isNew?: boolean;
}

function filtersOf(params: URLSearchParams): Filters {
  const filters: Filters = {};
  for (const name of FILTERS) {
    const value = params.get(name);
    if (value) filters[name] = value;
  }
  return filters;
}

/** A change's state: a failure that is a cancellation is cancelled. */
function changeState(change: JobChange): JobState {
  return change.status === "failed" && change.cancelled ? "cancelled" : change.status;
}

function matches(filters: Filters, change: JobChange): boolean {
  if (filters.status && filters.status !== change.status) return false;
  if (filters.state && filters.state !== changeState(change)) return false;
  if (filters.type && filters.type !== change.type) return false;
  if (filters.batch_id && filters.batch_id !== change.batch_id) return false;
  return true;
}

/**
 * The jobs: a table filtered by status, type, batch and time, paged by cursor, whose rows change as
 * the jobs do (GET /api/v1/events), with a preview of each completed image output.
 */
export function JobsPage() {
  const { query: params } = useLocation();
  const filters = filtersOf(params);
  const filterKey = JSON.stringify(filters);
  // The cursors of the pages before this one (for Newer) and this page's own, for one filter: another
  // filter starts again from the first page.
  const [paging, setPaging] = useState<Paging>({ key: filterKey, stack: [] });
  const { stack: cursors, cursor } = paging.key === filterKey ? paging : { stack: [], cursor: undefined };
  const [rows, setRows] = useState<Row[] | null>(null);
  const [total, setTotal] = useState(0);
  const [next, setNext] = useState<string | undefined>(undefined);
  const [error, setError] = useState<string | null>(null);
  const known = useRef(new Set<string>());

  const load = useCallback(async () => {
    try {
      const list = await api<JobList>(
        `/jobs${query({ limit: PAGE_SIZE, ...(JSON.parse(filterKey) as Filters), cursor })}`,
      );
      known.current = new Set(list.jobs.map((j) => j.id));
      setRows(list.jobs);
      setTotal(list.total);
      setNext(list.next_cursor);
      setError(null);
    } catch (err) {
      setError((err as Error).message);
    }
  }, [filterKey, cursor]);

  useEffect(() => {
    setRows(null);
    void load();
  }, [load]);

  const onChange = (change: JobChange) => {
    if (known.current.has(change.id)) {
      setRows(
        (current) =>
          current?.map((row) =>
            row.id === change.id
              ? {
                  ...row,
                  status: change.status,
                  state: changeState(change),
                  ...(change.error !== undefined ? { error: change.error } : {}),
                  ...(change.cancelled ? { cancelled: true } : {}),
                }
              : row,
          ) ?? current,
      );
      return;
    }
    // A job not on the page: shown at the top of the first page when it matches the filters and is
    // newer than the page (no created_before in the past).
    if (cursor !== undefined || !matches(filters, change)) return;
    if (filters.created_before && new Date(filters.created_before).getTime() < Date.now()) return;
    known.current.add(change.id);
    const add = (row: Row) => {
      setRows((current) => (current ? [row, ...current.filter((r) => r.id !== row.id)] : current));
      setTotal((t) => t + 1);
    };
    if (change.status === "pending") {
      const createdAt = change.at ?? new Date().toISOString();
      add({ id: change.id, type: change.type, status: change.status, created_at: createdAt, isNew: true });
    } else {
      // First seen after it was submitted: its creation time is in its record.
      void api<Job>(`/jobs/${encodeURIComponent(change.id)}`)
        .then((job) =>
          add({
            id: job.id,
            type: job.type,
            status: job.status,
            ...(job.state ? { state: job.state } : {}),
            created_at: job.created_at,
            ...(job.error !== undefined ? { error: job.error } : {}),
            ...(job.cancelled_at !== undefined ? { cancelled: true } : {}),
            isNew: true,
          }),
        )
        .catch(() => known.current.delete(change.id));
    }
  };
  const live = useJobChanges({ type: filters.type, batch_id: filters.batch_id }, onChange, () => void load());

  const page = cursors.length + 1;
  return (
    <main id="main" tabIndex={-1}>
      <div class="page-head">
        <h1>Jobs</h1>
        <LiveState state={live} />
      </div>
      <FilterForm filters={filters} />
      {error && <Notice kind="error">Could not list the jobs: {error}</Notice>}
      {!rows && !error && <Loading what="the jobs" />}
      {rows && (
        <>
          <p class="count" role="status">
            {total === 0 ? "No job matches." : `${total} job${total === 1 ? "" : "s"} match.`}
          </p>
          {rows.length > 0 && <JobTable rows={rows} />}
          <Pager
            label="Job pages"
            page={page}
            hasNewer={cursors.length > 0}
            hasOlder={next !== undefined}
            onNewer={() => {
              const previous = cursors.at(-1);
              setPaging({
                key: filterKey,
                stack: cursors.slice(0, -1),
                ...(previous ? { cursor: previous } : {}),
              });
            }}
            onOlder={() => {
              if (next) setPaging({ key: filterKey, stack: [...cursors, cursor ?? ""], cursor: next });
            }}
          />
        </>
      )}
    </main>
  );
}

export function JobTable(props: { rows: Row[]; caption?: string }) {
  return (
    <div class="table-scroll">
      <table class="jobs" data-testid="jobs-table">
        <caption class="visually-hidden">{props.caption ?? "Jobs, newest first"}</caption>
        <thead>
          <tr>
            <th scope="col">Job</th>
            <th scope="col">Type</th>
            <th scope="col">Status</th>
            <th scope="col">Created</th>
            <th scope="col">
              <span class="visually-hidden">Preview</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {props.rows.map((row) => (
            <tr data-job-id={row.id} class={row.isNew ? "is-new" : undefined}>
              <td data-label="Job">
                <Link href={`/jobs/${encodeURIComponent(row.id)}`} class="mono">
                  {row.id.slice(0, 8)}
                  <span class="visually-hidden">{row.id.slice(8)}</span>
                </Link>
              </td>
              <td data-label="Type">{typeLabel(row.type)}</td>
              <td data-label="Status" class="status-cell">
                <StatusBadge
                  status={row.status}
                  cancelled={row.state === "cancelled" || row.cancelled === true}
                />
                {row.error && <span class="row-error">{row.error}</span>}
              </td>
              <td data-label="Created">
                <time dateTime={row.created_at} title={formatDateTime(row.created_at)}>
                  {formatAgo(row.created_at)}
                </time>
              </td>
              <td class="preview-cell">
                <OutputThumb id={row.id} type={row.type} status={row.status} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function FilterForm(props: { filters: Filters }) {
  const { filters } = props;
  const key = JSON.stringify(filters);
  const [draft, setDraft] = useState(filters);
  useEffect(() => setDraft(JSON.parse(key) as Filters), [key]);
  const set = (name: keyof Filters, value: string) => setDraft((d) => ({ ...d, [name]: value || undefined }));
  const apply = (event: Event) => {
    event.preventDefault();
    navigate(`/jobs${query(draft)}`);
  };
  return (
    <form class="filters" onSubmit={apply} aria-label="Filter jobs">
      <div class="field">
        <label for="f-status">Status</label>
        <select
          id="f-status"
          value={draft.state ?? draft.status ?? ""}
          onChange={(e) => {
            // The choice is a state: failed without the cancelled jobs, cancelled apart.
            const value = e.currentTarget.value;
            setDraft((d) => ({ ...d, state: value || undefined, status: undefined }));
          }}
        >
          <option value="">any</option>
          {JOB_STATES.map((s) => (
            <option value={s}>{s}</option>
          ))}
        </select>
      </div>
      <div class="field">
        <label for="f-type">Type</label>
        <select id="f-type" value={draft.type ?? ""} onChange={(e) => set("type", e.currentTarget.value)}>
          <option value="">any</option>
          {JOB_TYPES.map((t) => (
            <option value={t}>{typeLabel(t)}</option>
          ))}
        </select>
      </div>
      <div class="field">
        <label for="f-batch">Batch</label>
        <input
          id="f-batch"
          type="text"
          spellcheck={false}
          placeholder="batch id"
          value={draft.batch_id ?? ""}
          onInput={(e) => set("batch_id", e.currentTarget.value.trim())}
        />
      </div>
      <div class="field">
        <label for="f-after">Created after</label>
        <input
          id="f-after"
          type="datetime-local"
          value={isoToLocalInput(draft.created_after ?? null)}
          onInput={(e) => set("created_after", localInputToIso(e.currentTarget.value) ?? "")}
        />
      </div>
      <div class="field">
        <label for="f-before">Created before</label>
        <input
          id="f-before"
          type="datetime-local"
          value={isoToLocalInput(draft.created_before ?? null)}
          onInput={(e) => set("created_before", localInputToIso(e.currentTarget.value) ?? "")}
        />
      </div>
      <div class="actions">
        <button type="submit" class="primary">
          Apply
        </button>
        <button type="button" onClick={() => navigate("/jobs")} disabled={Object.keys(filters).length === 0}>
          Clear
        </button>
      </div>
    </form>
  );
}
