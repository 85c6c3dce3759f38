// The client's templates commands against a running API: put from a YAML file, list, get (a
// version), submit --template with an override and --dest-prefix, the job showing its template,
// delete.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startTestStack, type TestStack } from "../support/api.js";
import { clientEnv, runCli, said } from "../support/cli.js";

const KEY = "cli-templates-key-0123456789";
let stack: TestStack;
let dir: string;
let env: Record<string, string>;

before(async () => {
  stack = await startTestStack({ apiKeys: [KEY] });
  dir = await mkdtemp(join(tmpdir(), "cli-templates-"));
  env = clientEnv(stack.baseUrl, KEY);
});
after(async () => {
  await stack?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

test("templates put (YAML), list, get --version, submit --template, job, delete", async () => {
  const file = join(dir, "thumb.yaml");
  await writeFile(
    file,
    [
      "type: image_resize",
      "parameters: {width: 320, height: 240, format: webp}",
      "overridable: [quality]",
      'dest_key: "{prefix}/{name}.webp"',
      "description: Thumbnails of the gallery",
    ].join("\n"),
  );
  const put = await runCli(["templates", "put", "thumb", file], env);
  assert.equal(put.code, 0, said(put));
  assert.equal(put.stdout.trim(), "template thumb version 1");
  // What get prints goes back in as it is: version 2.
  const got = await runCli(["templates", "get", "thumb"], env);
  assert.equal(got.code, 0, said(got));
  await writeFile(join(dir, "again.json"), got.stdout);
  const again = await runCli(["templates", "put", "thumb", join(dir, "again.json")], env);
  assert.equal(again.stdout.trim(), "template thumb version 2", said(again));

  const list = await runCli(["templates", "list"], env);
  assert.equal(list.code, 0, said(list));
  assert.match(list.stdout, /thumb\s+image_resize\s+2\s+api\s+Thumbnails of the gallery/);
  const first = await runCli(["templates", "get", "thumb", "--version", "1", "--json"], env);
  assert.equal((JSON.parse(first.stdout) as { version: number }).version, 1, said(first));

  const submitted = await runCli(
    [
      "submit",
      "image/resize",
      "--template",
      "thumb",
      "--source",
      `s3://${stack.bucket}/in/cat.jpg`,
      "--dest-prefix",
      `s3://${stack.bucket}/gallery`,
      "quality=70",
    ],
    env,
  );
  assert.equal(submitted.code, 0, said(submitted));
  const id = submitted.stdout.trim();
  const job = (await stack.services.store.getJob(id))!;
  assert.deepEqual(job.template, { name: "thumb", version: 2 });
  assert.equal(job.dest_key, "gallery/cat.webp");
  assert.equal((job.parameters as Record<string, unknown>).quality, 70);
  const shown = await runCli(["job", id], env);
  assert.match(shown.stdout, /template:\s+thumb version 2/, said(shown));

  const refused = await runCli(
    [
      "submit",
      "image/resize",
      "--template",
      "thumb",
      "--source",
      `s3://${stack.bucket}/in/cat.jpg`,
      "width=10",
    ],
    env,
  );
  assert.equal(refused.code, 1, said(refused));
  assert.match(refused.stderr, /template thumb does not let a submission override width/);

  const removed = await runCli(["templates", "delete", "thumb"], env);
  assert.equal(removed.code, 0, said(removed));
  const gone = await runCli(["templates", "get", "thumb"], env);
  assert.equal(gone.code, 1);
  assert.match(gone.stderr, /template thumb not found/);
});
