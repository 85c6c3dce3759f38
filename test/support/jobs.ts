// Submitting a job through a test stack's API and waiting for it to end.
import assert from "node:assert/strict";
import { GetObjectCommand, HeadObjectCommand, PutObjectCommand } from "@aws-sdk/client-s3";
import type { Job } from "../../core/jobs/records.js";
import type { TestStack } from "./api.js";

/** Polls the store until the job has ended (bounded: a stuck job fails the test). */
export async function finished(stack: TestStack, id: string, limitMs = 60_000): Promise<Job> {
  const deadline = Date.now() + limitMs;
  for (;;) {
    const job = await stack.services.store.getJob(id);
    if (job && (job.status === "completed" || job.status === "failed")) return job;
    if (Date.now() > deadline) assert.fail(`job ${id} did not finish: ${JSON.stringify(job)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** POST /api/v1/jobs/<path>; asserts 202 and returns the job id. */
export async function submit(stack: TestStack, path: string, body: Record<string, unknown>): Promise<string> {
  const res = await stack.request(`/api/v1/jobs/${path}`, { method: "POST", json: body });
  const json = (await res.json()) as { job_id: string; error?: string };
  assert.equal(res.status, 202, json.error);
  return json.job_id;
}

/** POST `json` to an /api/v1 path: the status and the parsed body, whatever they are. */
export async function answer(
  stack: TestStack,
  path: string,
  json: Record<string, unknown>,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await stack.request(path, { method: "POST", json });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** The job's record as GET /api/v1/jobs/{id} answers it. */
export async function recorded(stack: TestStack, id: unknown): Promise<Record<string, unknown>> {
  const res = await stack.request(`/api/v1/jobs/${String(id)}`);
  return (await res.json()) as Record<string, unknown>;
}

/** Whether the stack's bucket holds an object at `key`. */
export async function exists(stack: TestStack, key: string): Promise<boolean> {
  try {
    await stack.services.s3.send(new HeadObjectCommand({ Bucket: stack.bucket, Key: key }));
    return true;
  } catch {
    return false;
  }
}

/** Puts an object in the stack's bucket (with its content type, when given). */
export async function putObject(
  stack: TestStack,
  key: string,
  body: Buffer,
  contentType?: string,
): Promise<void> {
  await stack.services.s3.send(
    new PutObjectCommand({
      Bucket: stack.bucket,
      Key: key,
      Body: body,
      ...(contentType ? { ContentType: contentType } : {}),
    }),
  );
}

/** The bytes of an object of the stack's bucket. */
export async function objectBytes(stack: TestStack, key: string): Promise<Buffer> {
  const answer = await stack.services.s3.send(new GetObjectCommand({ Bucket: stack.bucket, Key: key }));
  return Buffer.from(await answer.Body!.transformToByteArray());
}
