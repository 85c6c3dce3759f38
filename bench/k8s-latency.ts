// Part latency of the Kubernetes benchmark (bench/k8s.ts): submit → completed of one tiny resize at a
// time, the Kubernetes executor and the local one alternating.
import type { TestCluster } from "../test/k8s/support/cluster.js";
import {
  errorText,
  knob,
  load,
  log,
  ms,
  ratio,
  step,
  summarize,
  type Row,
  type Summary,
} from "./k8s-common.js";
import { ended, resizeBody, startKube, startLocal, type Target } from "./k8s-targets.js";

interface SequentialFigures {
  total: Summary;
  /** Submit → processing (the runner started the job), from the record's started_at. */
  toStart: Summary;
  /** Processing → completed, from the record's started_at and completed_at. */
  run: Summary;
  failed: number;
  firstError?: string;
}

export interface LatencyResult {
  jobs: number;
  cap: number;
  kube: SequentialFigures;
  local: SequentialFigures;
  localConcurrency: number;
  loadAfter: string;
}

export async function sequentialLatency(cluster: TestCluster): Promise<LatencyResult> {
  const jobs = knob("BENCH_K8S_SEQ", 30);
  const warmup = knob("BENCH_K8S_SEQ_WARMUP", 2, 0);
  const cap = knob("BENCH_K8S_CAP", 10);
  const kube = await startKube(cluster, cap);
  let local: Target | undefined;
  try {
    local = await startLocal();
    const samples = new Map<
      Target,
      { total: number[]; toStart: number[]; run: number[]; errors: string[] }
    >();
    for (const t of [kube, local]) samples.set(t, { total: [], toStart: [], run: [], errors: [] });
    let n = 0;
    const one = async (t: Target, counted: boolean) => {
      const wall0 = Date.now();
      const t0 = performance.now();
      const res = await t.stack.request("/api/v1/jobs/image/resize", {
        method: "POST",
        json: resizeBody(t, n++),
      });
      const answer = (await res.json()) as { job_id?: string; error?: string };
      if (res.status !== 202 || !answer.job_id)
        throw new Error(`${t.name}: submit answered ${res.status}: ${answer.error}`);
      step(`latency: waiting for ${t.name} job ${answer.job_id}`);
      const job = await ended(t.stack, answer.job_id, 300_000);
      const t1 = performance.now();
      if (!job) throw new Error(`${t.name}: job ${answer.job_id} did not end within 300 s`);
      if (!counted) return;
      const s = samples.get(t)!;
      if (job.status !== "completed") {
        s.errors.push(job.error ?? job.status);
        return;
      }
      s.total.push(t1 - t0);
      if (job.started_at && job.completed_at) {
        s.toStart.push(Date.parse(job.started_at) - wall0);
        s.run.push(Date.parse(job.completed_at) - Date.parse(job.started_at));
      }
    };
    for (let i = 0; i < warmup; i++) {
      await one(kube, false);
      await one(local, false);
    }
    log(`latency: ${jobs} resizes per executor, one at a time, alternating (load ${load()})`);
    for (let i = 0; i < jobs; i++) {
      // Alternating which goes first too, so neither always follows the other.
      for (const t of i % 2 === 0 ? [kube, local] : [local, kube]) await one(t, true);
      if ((i + 1) % 10 === 0 || i + 1 === jobs) {
        const k = summarize(samples.get(kube)!.total);
        const l = summarize(samples.get(local)!.total);
        log(`latency: ${i + 1}/${jobs}: kubernetes p50 ${ms(k.p50)}, local p50 ${ms(l.p50)}`);
      }
    }
    const figures = (t: Target): SequentialFigures => {
      const s = samples.get(t)!;
      return {
        total: summarize(s.total),
        toStart: summarize(s.toStart),
        run: summarize(s.run),
        failed: s.errors.length,
        ...(s.errors[0] ? { firstError: s.errors[0] } : {}),
      };
    };
    return {
      jobs,
      cap,
      kube: figures(kube),
      local: figures(local),
      localConcurrency: local.stack.config.executor.localConcurrency,
      loadAfter: load(),
    };
  } finally {
    await local?.close().catch((e: unknown) => log(`cleanup: ${errorText(e)}`));
    await kube.close();
  }
}

/** Prints the part's figures; its rows of the summary table. */
export function printLatency(l: LatencyResult): Row[] {
  const rows: Row[] = [];
  console.log(
    `\nSubmit → completed, one tiny resize at a time (64x48 PNG → 32x24 WebP, ${l.jobs} per executor, ` +
      `alternating): Kubernetes executor (max_running_jobs ${l.cap}) vs local executor\n`,
  );
  const line = (f: SequentialFigures) => ({
    "p50 ms": Math.round(f.total.p50),
    "p99 ms": Math.round(f.total.p99),
    "max ms": Math.round(f.total.max),
    "→ processing p50 ms": Math.round(f.toStart.p50),
    "runner p50 ms": Math.round(f.run.p50),
    failed: f.failed,
  });
  console.table({ kubernetes: line(l.kube), local: line(l.local) });
  console.log(
    `kubernetes/local: p50 ${ratio(l.kube.total.p50, l.local.total.p50)}, p99 ${ratio(l.kube.total.p99, l.local.total.p99)}` +
      ` ("→ processing" = submit → the runner started the job; "runner" = processing → completed)`,
  );
  for (const [name, f] of [["kubernetes", l.kube] as const, ["local", l.local] as const]) {
    if (f.firstError) console.log(`${name}: ${f.failed} failed, first: ${f.firstError}`);
  }
  rows.push(
    {
      figure: `Resize submit → completed p50 (sequential, ${l.jobs} each)`,
      kube: ms(l.kube.total.p50),
      local: ms(l.local.total.p50),
      ratio: ratio(l.kube.total.p50, l.local.total.p50),
      note: `of which submit → runner started: ${ms(l.kube.toStart.p50)} vs ${ms(l.local.toStart.p50)}`,
    },
    {
      figure: `Resize submit → completed p99`,
      kube: ms(l.kube.total.p99),
      local: ms(l.local.total.p99),
      ratio: ratio(l.kube.total.p99, l.local.total.p99),
      note:
        `one pod per job vs ${l.localConcurrency} warm local runners` +
        (l.kube.failed + l.local.failed > 0 ? `; failed ${l.kube.failed} vs ${l.local.failed}` : ""),
    },
  );
  return rows;
}
