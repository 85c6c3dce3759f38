import { useCallback, useEffect, useMemo, useRef, useState } from "preact/hooks";
import { api, ApiError, query } from "../api.js";
import { BatchProgress, LiveState, Loading, Notice, Pager, StatusBadge } from "../components.js";
import { formatAgo, formatDateTime } from "../format.js";
import { throttle, useJobChanges } from "../live.js";
import { Link, navigate, useLocation } from "../router.js";
import type { Batch, BatchList, BatchWithJobs, Job, JobChange } from "../types.js";
import { BATCH_STATUSES } from "../../../core/jobs/states.js";
import { JobTable } from "./jobs.js";

const PAGE_SIZE = 20;

interface Paging {
  key: string;
  stack: string[];
  cursor?: string;
}

/** The batches, newest first, with their progress, following their jobs' changes. */
export function BatchesPage() {
  const { query: params } = useLocation();
  const status = params.get("status") ?? "";
  const [paging, setPaging] = useState<Paging>({ key: status, stack: [] });
  const { stack, cursor } = paging.key === status ? paging : { stack: [], cursor: undefined };
  const [batches, setBatches] = useState<Batch[] | null>(null);
  const [total, setTotal] = useState(0);
  const [next, setNext] = useState<string | undefined>(undefined);
  const [error, setError] = useState<string | null>(null);
  const shown = useRef(new Set<string>());
  const stale = useRef(new Set<string>());

  const load = useCallback(async () => {
    try {
      const list = await api<BatchList>(`/jobs/batch${query({ status, limit: PAGE_SIZE, cursor })}`);
      shown.current = new Set(list.batches.map((b) => b.id));
      setBatches(list.batches);
      setTotal(list.total);
      setNext(list.next_cursor);
      setError(null);
    } catch (err) {
      setError((err as Error).message);
    }
  }, [status, cursor]);
  useEffect(() => {
    setBatches(null);
    void load();
  }, [load]);

  // A job of a batch on the page changed: that batch is read again (at most twice a second in all).
  const reread = useMemo(
    () =>
      throttle(() => {
        const ids = [...stale.current];
        stale.current.clear();
        for (const id of ids) {
          void api<BatchWithJobs>(`/jobs/batch/${encodeURIComponent(id)}`)
            .then(({ batch }) =>
              setBatches((list) => list?.map((b) => (b.id === batch.id ? batch : b)) ?? list),
            )
            .catch(() => undefined);
        }
      }, 500),
    [],
  );
  const reloadList = useMemo(() => throttle(() => void load(), 500), [load]);
  useEffect(
    () => () => {
      reread.cancel();
      reloadList.cancel();
    },
    [reread, reloadList],
  );
  const live = useJobChanges(
    {},
    (change: JobChange) => {
      if (!change.batch_id) return;
      if (shown.current.has(change.batch_id)) {
        stale.current.add(change.batch_id);
        reread();
      } else if (cursor === undefined) {
        // A batch not on the first page yet (a new one): the page is read again to show it.
        reloadList();
      }
    },
    () => void load(),
  );

  return (
    <main id="main" tabIndex={-1}>
      <div class="page-head">
        <h1>Batches</h1>
        <LiveState state={live} />
      </div>
      <form class="filters" aria-label="Filter batches" onSubmit={(e) => e.preventDefault()}>
        <div class="field">
          <label for="b-status">Status</label>
          <select
            id="b-status"
            value={status}
            onChange={(e) => navigate(`/batches${query({ status: e.currentTarget.value })}`)}
          >
            <option value="">any</option>
            {BATCH_STATUSES.map((s) => (
              <option value={s}>{s}</option>
            ))}
          </select>
        </div>
      </form>
      {error && <Notice kind="error">Could not list the batches: {error}</Notice>}
      {!batches && !error && <Loading what="the batches" />}
      {batches && (
        <>
          <p class="count" role="status">
            {total === 0 ? "No batch matches." : `${total} batch${total === 1 ? "" : "es"}.`}
          </p>
          <ul class="batch-list" data-testid="batch-list">
            {batches.map((batch) => (
              <li class="batch-card" data-batch-id={batch.id}>
                <div class="batch-head">
                  <Link href={`/batches/${encodeURIComponent(batch.id)}`} class="batch-name">
                    {batch.id}
                  </Link>
                  <StatusBadge status={batch.status} />
                </div>
                <BatchProgress batch={batch} />
                <p class="subtle">
                  Created <time dateTime={batch.created_at}>{formatAgo(batch.created_at)}</time>
                  {" · "}
                  {batch.fail_fast
                    ? "stops at the first failure (fail_fast)"
                    : "runs every job (no fail_fast)"}
                  {batch.stopped_by && (
                    <>
                      {" · "}stopped by{" "}
                      <Link href={`/jobs/${encodeURIComponent(batch.stopped_by)}`} class="mono">
                        {batch.stopped_by.slice(0, 8)}
                      </Link>
                    </>
                  )}
                </p>
              </li>
            ))}
          </ul>
          <Pager
            label="Batch pages"
            page={stack.length + 1}
            hasNewer={stack.length > 0}
            hasOlder={next !== undefined}
            onNewer={() => {
              const previous = stack.at(-1);
              setPaging({
                key: status,
                stack: stack.slice(0, -1),
                ...(previous ? { cursor: previous } : {}),
              });
            }}
            onOlder={() => {
              if (next) setPaging({ key: status, stack: [...stack, cursor ?? ""], cursor: next });
            }}
          />
        </>
      )}
    </main>
  );
}

/** One batch: its progress and its jobs, live. */
export function BatchPage(props: { id: string }) {
  const { id } = props;
  const [data, setData] = useState<BatchWithJobs | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [missing, setMissing] = useState(false);
  const [busy, setBusy] = useState(false);
  const path = `/jobs/batch/${encodeURIComponent(id)}`;

  const load = useCallback(async () => {
    try {
      setData(await api<BatchWithJobs>(`${path}?include_jobs=true`));
      setError(null);
    } catch (err) {
      if (err instanceof ApiError && err.status === 404) setMissing(true);
      else setError((err as Error).message);
    }
  }, [path]);
  const reload = useMemo(() => throttle(() => void load(), 500), [load]);
  useEffect(() => {
    setData(null);
    setMissing(false);
    void load();
    return () => reload.cancel();
  }, [load, reload]);

  const live = useJobChanges(
    { batch_id: id },
    (change) => {
      // The job's row at once, the batch's counts from the batch's record.
      setData((d) =>
        d
          ? {
              ...d,
              jobs: d.jobs?.map((j): Job =>
                j.id === change.id
                  ? {
                      ...j,
                      status: change.status,
                      ...(change.error !== undefined ? { error: change.error } : {}),
                      ...(change.cancelled && !j.cancelled_at
                        ? { cancelled_at: change.at ?? new Date().toISOString() }
                        : {}),
                    }
                  : j,
              ),
            }
          : d,
      );
      reload();
    },
    () => void load(),
  );

  const cancel = async () => {
    setBusy(true);
    try {
      const { batch } = await api<{ batch: Batch }>(`${path}/cancel`, { method: "POST" });
      setData((d) => (d ? { ...d, batch } : d));
      void load();
    } catch (err) {
      setError(`Could not cancel the batch: ${(err as Error).message}`);
    } finally {
      setBusy(false);
    }
  };

  if (missing) {
    return (
      <main id="main" tabIndex={-1}>
        <h1>Batch not found</h1>
        <Notice kind="error">
          There is no batch <code>{id}</code> that this key may see.
        </Notice>
        <p>
          <Link href="/batches">Back to the batches</Link>
        </p>
      </main>
    );
  }
  const batch = data?.batch;
  const ended = batch ? ["completed", "failed", "partial"].includes(batch.status) : true;
  return (
    <main id="main" tabIndex={-1}>
      <nav class="breadcrumbs" aria-label="Breadcrumbs">
        <Link href="/batches">Batches</Link> <span aria-hidden="true">/</span> <span>{id}</span>
      </nav>
      <div class="page-head">
        <h1>
          Batch <span class="mono">{id}</span>
        </h1>
        <LiveState state={ended ? "off" : live} />
      </div>
      {error && <Notice kind="error">{error}</Notice>}
      {!data && !error && <Loading what="the batch" />}
      {batch && (
        <>
          <section class="batch-summary" aria-label="Progress">
            <p class="status-line">
              <StatusBadge status={batch.status} />
              <span>
                {batch.total_jobs} jobs, created {formatDateTime(batch.created_at)}
                {batch.completed_at && `, ended ${formatDateTime(batch.completed_at)}`}.{" "}
                {batch.fail_fast
                  ? "Stops at the first failure (fail_fast)."
                  : "Runs every job (no fail_fast)."}
              </span>
            </p>
            <BatchProgress batch={batch} />
            {batch.stopped_by && (
              <p>
                Stopped by the failure of job{" "}
                <Link href={`/jobs/${encodeURIComponent(batch.stopped_by)}`} class="mono">
                  {batch.stopped_by}
                </Link>
                .
              </p>
            )}
            {!ended && (
              <div class="actions">
                <button type="button" class="danger" disabled={busy} onClick={() => void cancel()}>
                  Cancel the batch
                </button>
              </div>
            )}
          </section>
          <section aria-labelledby="batch-jobs-heading">
            <h2 id="batch-jobs-heading">Jobs of this batch</h2>
            <p>
              <Link href={`/jobs?batch_id=${encodeURIComponent(id)}`}>Open in the jobs table</Link>
            </p>
            {data.jobs && (
              <JobTable
                caption={`Jobs of batch ${id}`}
                rows={data.jobs.map((j) => ({
                  id: j.id,
                  type: j.type,
                  status: j.status,
                  created_at: j.created_at,
                  ...(j.error !== undefined ? { error: j.error } : {}),
                  ...(j.cancelled_at !== undefined ? { cancelled: true } : {}),
                }))}
              />
            )}
          </section>
        </>
      )}
    </main>
  );
}
