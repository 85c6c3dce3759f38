import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { api, query } from "../api.js";
import { LiveState, Loading, Notice, Pager, StatusBadge } from "../components.js";
import { BulkBar } from "../bulk.js";
import { formatAgo, formatDateTime, isoToLocalInput, localInputToIso, typeLabel } from "../format.js";
import { useJobChanges } from "../live.js";
import { OutputThumb } from "../preview.js";
import { Link, navigate, useLocation } from "../router.js";
import type { Job, JobChange, JobList, JobState, JobSummary } from "../types.js";
import { JOB_TYPES } from "virtual:job-types";
import { JOB_STATES } from "../../../core/jobs/states.js";

const PAGE_SIZE = 25;
// The filters, in the address; `limit` (the page size, 25 unless given) is not in the form.
// `state` is what the Status choice sets (failed and cancelled apart); `status` stays readable in links.
const FILTERS = [
  "q",
  "status",
  "state",
  "type",
  "batch_id",
  "client",
  "created_after",
  "created_before",
  "limit",
] as const;
type Filters = Partial<Record<(typeof FILTERS)[number], string>>;

interface Paging {
  key: string;
  stack: string[];
  cursor?: string;
}

export interface Row extends Omit<JobSummary, "state"> {
  /** What a person reads (cancelled apart from failed); absent from an older API's summaries. */
  state?: JobSummary["state"];
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
  // A search or a client filter: the live stream does not say whether a new job matches it.
  if (filters.q || filters.client) return false;
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
  const [selected, setSelected] = useState<string[]>([]);

  const load = useCallback(async () => {
    try {
      const list = await api<JobList>(
        `/jobs${query({ limit: PAGE_SIZE, ...(JSON.parse(filterKey) as Filters), cursor })}`,
      );
      known.current = new Set(list.jobs.map((j) => j.id));
      setRows(list.jobs);
      setSelected((chosen) => chosen.filter((id) => known.current.has(id)));
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
            source: `${job.source_bucket}/${job.source_key}`,
            ...(job.dest_bucket && job.dest_key ? { output: `${job.dest_bucket}/${job.dest_key}` } : {}),
            ...(job.duration_seconds !== undefined ? { duration_seconds: job.duration_seconds } : {}),
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
          <BulkBar
            selected={selected}
            filter={bulkFilter(filters)}
            total={total}
            onDone={() => void load()}
          />
          {rows.length > 0 && <JobTable rows={rows} selected={selected} onSelect={setSelected} />}
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

/** The filters of the page as a bulk action's filter: the list's own, without its page size. */
function bulkFilter(filters: Filters): Record<string, string> {
  const { limit: _limit, ...rest } = filters;
  return rest;
}

export function JobTable(props: {
  rows: Row[];
  caption?: string;
  /** With onSelect: a checkbox on each row, these ids checked. */
  selected?: string[];
  onSelect?: (ids: string[]) => void;
}) {
  const { selected = [], onSelect } = props;
  const allChosen = props.rows.length > 0 && props.rows.every((r) => selected.includes(r.id));
  const toggle = (id: string, on: boolean) =>
    onSelect?.(on ? [...selected.filter((s) => s !== id), id] : selected.filter((s) => s !== id));
  return (
    <div class="table-scroll">
      <table class="jobs" data-testid="jobs-table">
        <caption class="visually-hidden">{props.caption ?? "Jobs, newest first"}</caption>
        <thead>
          <tr>
            {onSelect && (
              <th scope="col" class="select-cell">
                <input
                  type="checkbox"
                  aria-label="Choose every job of this page"
                  checked={allChosen}
                  onChange={(e) => onSelect(e.currentTarget.checked ? props.rows.map((r) => r.id) : [])}
                />
              </th>
            )}
            <th scope="col">Job</th>
            <th scope="col">Type</th>
            <th scope="col">Status</th>
            <th scope="col">Created</th>
            <th scope="col">Duration</th>
            <th scope="col">Source</th>
            <th scope="col">Output</th>
            <th scope="col">Error</th>
            <th scope="col">
              <span class="visually-hidden">Preview</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {props.rows.map((row) => (
            <tr data-job-id={row.id} class={row.isNew ? "is-new" : undefined}>
              {onSelect && (
                <td class="select-cell">
                  <input
                    type="checkbox"
                    aria-label={`Choose job ${row.id.slice(0, 8)}`}
                    checked={selected.includes(row.id)}
                    onChange={(e) => toggle(row.id, e.currentTarget.checked)}
                  />
                </td>
              )}
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
                  cancelled={row.cancelled === true || row.state === "cancelled"}
                />
              </td>
              <td data-label="Created">
                <time dateTime={row.created_at} title={formatDateTime(row.created_at)}>
                  {formatAgo(row.created_at)}
                </time>
              </td>
              <td data-label="Duration">
                {row.duration_seconds !== undefined ? `${row.duration_seconds.toFixed(1)} s` : ""}
              </td>
              <td data-label="Source" class="mono place" title={row.source}>
                {row.source}
              </td>
              <td data-label="Output" class="mono place" title={row.output}>
                {row.output}
              </td>
              <td data-label="Error" class="error-cell">
                {row.error && <span class="row-error">{row.error}</span>}
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
      <div class="field search-field">
        <label for="f-q">Search</label>
        <input
          id="f-q"
          type="search"
          spellcheck={false}
          placeholder="job id, request id, or bucket/key prefix"
          value={draft.q ?? ""}
          onInput={(e) => set("q", e.currentTarget.value.trim())}
        />
      </div>
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
        <label for="f-client">Client</label>
        <input
          id="f-client"
          type="text"
          spellcheck={false}
          placeholder="admin keys only"
          value={draft.client ?? ""}
          onInput={(e) => set("client", e.currentTarget.value.trim())}
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
