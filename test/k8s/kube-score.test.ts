// kube-score, an outside linter of Kubernetes objects (built from its Go module by
// scripts/k8s/build-kube-score.sh), on the chart's renders through scripts/k8s/kube-score.sh, which
// skips the checks the chart departs from on purpose, each with its reason: with the default values
// and networkPolicy on, and with every option on, no check is CRITICAL. The counts of each grade are
// the test's diagnostics.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { join } from "node:path";
import { describe, test } from "node:test";
import { ALL_ON_VALUES, CHART, helm } from "./support/helm.js";

const SCRIPT = join(CHART, "../../scripts/k8s/kube-score.sh");

/** kube-score's `--output-format json`: its scorecard, an object a row. */
interface ScoredObject {
  object_name: string;
  type_meta: { kind: string };
  checks: Array<{
    check: { id: string };
    grade: number;
    skipped: boolean;
    comments: Array<{ path: string; summary: string }> | null;
  }>;
}
/** kube-score's grades (scorecard.Grade): below WARNING is CRITICAL; above, OK (AlmostOK, AllOK). */
const GRADE = { critical: 1, warning: 5 } as const;

function run(
  command: string,
  args: string[],
  stdin: string,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code: code ?? 1, stdout, stderr }));
    child.stdin.end(stdin);
  });
}

async function score(values: string[]): Promise<ScoredObject[]> {
  const render = await helm(["template", "media", CHART, "--namespace", "media-ns", ...values]);
  assert.equal(render.code, 0, render.stderr);
  // 0: no CRITICAL; 1: some (listed below, from the JSON); anything else: kube-score did not run.
  const result = await run("bash", [SCRIPT, "--output-format", "json"], render.stdout);
  assert.ok(result.code === 0 || result.code === 1, `kube-score exited ${result.code}: ${result.stderr}`);
  return JSON.parse(result.stdout) as ScoredObject[];
}

describe("kube-score on the chart's renders", () => {
  for (const [name, values] of [
    ["the default values, networkPolicy on", ["--set", "networkPolicy.enabled=true"]],
    ["every option on", ["--values", ALL_ON_VALUES]],
  ] as const) {
    test(`no CRITICAL with ${name}`, async (t) => {
      const objects = await score([...values]);
      const counts = { ok: 0, warning: 0, critical: 0, skipped: 0 };
      const findings: string[] = [];
      for (const object of objects) {
        for (const check of object.checks) {
          if (check.skipped) {
            counts.skipped++;
            continue;
          }
          const grade =
            check.grade <= GRADE.critical ? "critical" : check.grade <= GRADE.warning ? "warning" : "ok";
          counts[grade]++;
          if (grade === "ok") continue;
          const why = (check.comments ?? []).map((c) => `${c.path}: ${c.summary}`).join("; ");
          findings.push(
            `${grade.toUpperCase()} ${object.type_meta.kind}/${object.object_name} ${check.check.id}: ${why}`,
          );
        }
      }
      t.diagnostic(
        `${objects.length} objects: ${counts.ok} OK, ${counts.warning} WARNING, ${counts.critical} CRITICAL, ${counts.skipped} skipped`,
      );
      for (const finding of findings) t.diagnostic(finding);
      assert.ok(counts.ok > 0, "kube-score checked the objects");
      assert.deepEqual(
        findings.filter((f) => f.startsWith("CRITICAL")),
        [],
        "a CRITICAL finding: fix the chart, or skip the check in scripts/k8s/kube-score.sh with the reason (docs/kubernetes.md)",
      );
    });
  }
});
