// Templates over HTTP: stored per client (PUT, GET, versions, DELETE, the list), validated when
// stored as a submit of their type is, the configuration's listed for every client and read-only,
// another client's never seen; and used by the submit routes: the job records the template and
// the parameters it resolved to, with the overrides the template allows, the destination patterns
// filled in.
import { withDefaults } from "../../core/jobs/parameters.js";
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { startTestStack, type TestStack } from "../support/api.js";

let stack: TestStack;
const ALICE = "alice-key-0123456789";
const BOB = "bob-key-0123456789";
const ADMIN = "admin-key-0123456789";
const CAROL = "carol-key-0123456789";
/** The limits of this stack: templates a client may store, versions kept of each. */
const PER_CLIENT = 30;
const VERSIONS = 3;

before(async () => {
  stack = await startTestStack({
    config: {
      server: {
        clients: [
          { name: "alice", keys: [ALICE] },
          { name: "bob", keys: [BOB] },
          { name: "ops", keys: [ADMIN], admin: true },
          { name: "carol", keys: [CAROL] },
        ],
      },
      limits: { templates_per_client: PER_CLIENT, template_versions: VERSIONS },
      templates: {
        "site-thumb": {
          type: "image_resize",
          version: 3,
          parameters: { width: 64, height: 48 },
          overridable: ["quality"],
          dest_key: "thumbs/{name}.jpg",
          description: "The site's thumbnails",
        },
      },
    },
  });
});
after(async () => {
  await stack?.close();
});

type Body = Record<string, unknown>;
const SOURCE = { source_bucket: "media-in", source_key: "uploads/2026/cat.photo.jpg" };

async function call(key: string, path: string, init: { method?: string; json?: unknown } = {}) {
  const res = await stack.request(path, { ...init, key });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : {}) as Body, text };
}
const put = (key: string, name: string, json: unknown) =>
  call(key, `/api/v1/templates/${name}`, { method: "PUT", json });
const job = async (key: string, id: string) => (await call(key, `/api/v1/jobs/${id}`)).body;

describe("templates: stored per client", () => {
  test("PUT makes version 1 (201), then 2 (200); GET shows the current one, ?version=1 the first", async () => {
    const first = await put(ALICE, "thumb", {
      type: "image_resize",
      parameters: { width: 200, height: 200 },
      overridable: ["quality", "format"],
    });
    assert.equal(first.status, 201, first.text);
    assert.equal(first.body.version, 1);
    assert.equal(first.body.source, "api");
    assert.deepEqual(first.body.parameters, {
      width: 200,
      height: 200,
      quality: 85,
      fit: "cover",
      enlarge: false,
    });
    const second = await put(ALICE, "thumb", {
      type: "image_resize",
      parameters: { width: 300, height: 300 },
    });
    assert.equal(second.status, 200, second.text);
    assert.equal(second.body.version, 2);

    const current = await call(ALICE, "/api/v1/templates/thumb");
    assert.equal(current.status, 200);
    assert.equal(current.body.version, 2);
    assert.equal((current.body.parameters as Body).width, 300);
    assert.equal(typeof current.body.created_at, "string");
    const old = await call(ALICE, "/api/v1/templates/thumb?version=1");
    assert.equal(old.status, 200, old.text);
    assert.equal(old.body.version, 1);
    assert.equal((old.body.parameters as Body).width, 200);
    assert.deepEqual(old.body.overridable, ["quality", "format"]);
    const none = await call(ALICE, "/api/v1/templates/thumb?version=3");
    assert.equal(none.status, 404);
    assert.deepEqual(none.body, { error: "template thumb has no version 3" });
  });

  test("DELETE removes it and its versions; the name's next PUT continues after the last version", async () => {
    assert.equal((await put(ALICE, "gone", { type: "image_colors", parameters: {} })).status, 201);
    assert.equal((await put(ALICE, "gone", { type: "image_colors", parameters: {} })).status, 200);
    const deleted = await call(ALICE, "/api/v1/templates/gone", { method: "DELETE" });
    assert.equal(deleted.status, 200, deleted.text);
    assert.deepEqual(deleted.body, { name: "gone", version: 2, deleted: true });
    assert.equal((await call(ALICE, "/api/v1/templates/gone")).status, 404);
    assert.equal((await call(ALICE, "/api/v1/templates/gone?version=1")).status, 404);
    assert.equal((await call(ALICE, "/api/v1/templates/gone", { method: "DELETE" })).status, 404);
    const again = await put(ALICE, "gone", { type: "image_colors", parameters: {} });
    assert.equal(again.status, 201, "the name stood for no template");
    assert.equal(again.body.version, 3, "version 1 and 2 meant another template");
  });

  test("a bad template is refused at PUT, naming the field", async () => {
    const cases: Array<[unknown, RegExp]> = [
      [{ type: "image_resize", parameters: { width: 99999, height: 10 } }, /parameters\.width/],
      [{ type: "image_resize", parameters: { width: 10, widht: 10 } }, /unknown field parameters\.widht/],
      [
        { type: "image_resize", parameters: { width: 10, height: 10 }, overridable: ["colour"] },
        /overridable\[0\]/,
      ],
      [
        { type: "image_resize", parameters: { width: 10, height: 10 }, dest_key: "x/{stem}.jpg" },
        /dest_key: \{stem\} is not a placeholder/,
      ],
      [{ type: "image_smash", parameters: {} }, /type must be one of/],
      [{ parameters: { width: 10 } }, /type is required/],
      // Parameters left out are the type's defaults; null is not an object of them.
      [{ type: "image_colors", parameters: null }, /parameters/],
      // A rule across parameters (the type's check) at PUT, not when a job first uses it.
      [
        {
          type: "video_adaptive",
          parameters: {
            renditions: [
              { height: 360, video_bitrate: "800k" },
              { height: 360, video_bitrate: "900k" },
            ],
          },
        },
        /parameters: renditions: heights must be distinct/,
      ],
    ];
    for (const [body, expected] of cases) {
      const res = await put(ALICE, "bad", body);
      assert.equal(res.status, 400, `${JSON.stringify(body)}: ${res.text}`);
      assert.match(String(res.body.error), expected, JSON.stringify(body));
    }
    assert.equal((await call(ALICE, "/api/v1/templates/bad")).status, 404, "nothing was stored");
    const defaults = await put(ALICE, "defaults", { type: "image_colors" });
    assert.equal(defaults.status, 201, `parameters left out are the type's defaults: ${defaults.text}`);
    assert.deepEqual(defaults.body.parameters, withDefaults("image_colors", {}));
    const badName = await put(ALICE, "Bad_Name", { type: "image_colors", parameters: {} });
    assert.equal(badName.status, 400);
    assert.match(String(badName.body.error), /must be a template name/);
  });

  test("the configuration's templates are listed for every client, readable, and not overwritten or deleted", async () => {
    for (const key of [ALICE, BOB, ADMIN]) {
      const list = await call(key, "/api/v1/templates");
      assert.equal(list.status, 200);
      const names = (list.body.templates as Array<{ name: string; source: string; version: number }>).map(
        (t) => `${t.name}:${t.source}:${t.version}`,
      );
      assert.ok(names.includes("site-thumb:config:3"), names.join(", "));
    }
    const got = await call(BOB, "/api/v1/templates/site-thumb");
    assert.equal(got.status, 200);
    assert.equal(got.body.source, "config");
    assert.deepEqual(got.body.parameters, {
      width: 64,
      height: 48,
      quality: 85,
      fit: "cover",
      enlarge: false,
    });
    assert.equal((await call(BOB, "/api/v1/templates/site-thumb?version=2")).status, 404);

    const overwrite = await put(ALICE, "site-thumb", { type: "image_colors", parameters: {} });
    assert.equal(overwrite.status, 409);
    assert.match(
      String(overwrite.body.error),
      /template site-thumb is the configuration's \(templates\.site-thumb\)/,
    );
    const remove = await call(ADMIN, "/api/v1/templates/site-thumb", { method: "DELETE" });
    assert.equal(remove.status, 409);
    assert.equal((await call(ALICE, "/api/v1/templates/site-thumb")).status, 200);
  });

  test("client B cannot read, list, use or delete client A's template: 404, as for none", async () => {
    assert.equal((await put(ALICE, "alices", { type: "image_colors", parameters: {} })).status, 201);
    const read = await call(BOB, "/api/v1/templates/alices");
    assert.equal(read.status, 404);
    assert.deepEqual(read.body, { error: "template alices not found" });
    assert.equal((await call(ADMIN, "/api/v1/templates/alices")).status, 404, "an admin has its own too");
    const listed = (await call(BOB, "/api/v1/templates")).body.templates as Array<{ name: string }>;
    assert.equal(
      listed.some((t) => t.name === "alices"),
      false,
    );
    const used = await call(BOB, "/api/v1/jobs/image/colors", {
      method: "POST",
      json: { ...SOURCE, template: "alices" },
    });
    assert.equal(used.status, 404);
    assert.deepEqual(used.body, { error: "template alices not found" });
    assert.equal((await call(BOB, "/api/v1/templates/alices", { method: "DELETE" })).status, 404);
    // Bob's own template of the same name is his, and Alice's is unchanged.
    assert.equal(
      (await put(BOB, "alices", { type: "image_resize", parameters: { width: 5, height: 5 } })).status,
      201,
    );
    assert.equal((await call(ALICE, "/api/v1/templates/alices")).body.type, "image_colors");
    const mine = (await call(ALICE, "/api/v1/templates")).body.templates as Array<{
      name: string;
      type: string;
    }>;
    assert.deepEqual(
      mine.filter((t) => t.name === "alices").map((t) => t.type),
      ["image_colors"],
    );
  });
});

describe("templates: used by submits", () => {
  test("the job records the template and its resolved parameters; overrides it allows apply, others are refused", async () => {
    assert.equal(
      (
        await put(ALICE, "card", {
          type: "image_resize",
          parameters: { width: 120, height: 80, fit: "contain" },
          overridable: ["quality"],
          dest_bucket: "media-out",
          dest_key: "cards/{name}-{job_id}.webp",
        })
      ).status,
      201,
    );
    const res = await call(ALICE, "/api/v1/jobs/image/resize", {
      method: "POST",
      json: { ...SOURCE, template: "card", quality: 60 },
    });
    assert.equal(res.status, 202, res.text);
    const id = res.body.job_id as string;
    const record = await job(ALICE, id);
    assert.deepEqual(record.template, { name: "card", version: 1 });
    assert.deepEqual(record.parameters, {
      width: 120,
      height: 80,
      fit: "contain",
      quality: 60,
      enlarge: false,
    });
    assert.equal(record.dest_bucket, "media-out");
    assert.equal(record.dest_key, `cards/cat.photo-${id}.webp`, "{name} and {job_id} filled in");

    const refused = await call(ALICE, "/api/v1/jobs/image/resize", {
      method: "POST",
      json: { ...SOURCE, template: "card", width: 10, fit: "fill" },
    });
    assert.equal(refused.status, 400);
    assert.equal(
      refused.body.error,
      "template card does not let a submission override width, fit (it allows quality)",
    );
    const outOfBounds = await call(ALICE, "/api/v1/jobs/image/resize", {
      method: "POST",
      json: { ...SOURCE, template: "card", quality: 101 },
    });
    assert.equal(outOfBounds.status, 400, "an override is validated as any parameter");
    assert.match(String(outOfBounds.body.error), /quality/);
    const metrics = await (await stack.request("/metrics", { key: null })).text();
    const counted = /^media_jobs_from_template_total\{type="image_resize"\} (\d+)$/m.exec(metrics);
    assert.ok(counted && Number(counted[1]) >= 1, "counted as a job from a template");
    assert.match(metrics, /^media_jobs_from_template_total\{type="audio_convert"\} 0$/m);
  });

  test("dest_key patterns: {prefix} from dest_prefix, a dest_key of the submission wins, {prefix} needs dest_prefix", async () => {
    await put(ALICE, "web", {
      type: "image_optimize",
      parameters: {},
      dest_bucket: "media-out",
      dest_key: "{prefix}/{name}.webp",
    });
    const prefixed = await call(ALICE, "/api/v1/jobs/image/optimize", {
      method: "POST",
      json: { ...SOURCE, template: "web", dest_prefix: "sites/a/" },
    });
    assert.equal(prefixed.status, 202, prefixed.text);
    assert.equal((await job(ALICE, prefixed.body.job_id as string)).dest_key, "sites/a/cat.photo.webp");

    const given = await call(ALICE, "/api/v1/jobs/image/optimize", {
      method: "POST",
      json: { ...SOURCE, template: "web", dest_bucket: "other-out", dest_key: "exact/key.webp" },
    });
    assert.equal(given.status, 202, given.text);
    const record = await job(ALICE, given.body.job_id as string);
    assert.equal(record.dest_key, "exact/key.webp");
    assert.equal(record.dest_bucket, "other-out");

    const missing = await call(ALICE, "/api/v1/jobs/image/optimize", {
      method: "POST",
      json: { ...SOURCE, template: "web" },
    });
    assert.equal(missing.status, 400);
    assert.equal(
      missing.body.error,
      "template web's dest_key names {prefix}: give dest_prefix (or dest_key)",
    );

    // The configuration's template, by Bob, with {name} only: dest_prefix has nothing to fill.
    const unused = await call(BOB, "/api/v1/jobs/image/resize", {
      method: "POST",
      json: { ...SOURCE, dest_bucket: "media-out", template: "site-thumb", dest_prefix: "x" },
    });
    assert.equal(unused.status, 400);
    assert.match(
      String(unused.body.error),
      /^dest_prefix: template site-thumb has no destination that names \{prefix\}/,
    );
    const config = await call(BOB, "/api/v1/jobs/image/resize", {
      method: "POST",
      json: { ...SOURCE, dest_bucket: "media-out", template: "site-thumb" },
    });
    assert.equal(config.status, 202, config.text);
    const configured = await job(BOB, config.body.job_id as string);
    assert.deepEqual(configured.template, { name: "site-thumb", version: 3 });
    assert.equal(configured.dest_key, "thumbs/cat.photo.jpg");
  });

  test("a template of another type, an unknown one, or a version alone are refused", async () => {
    await put(ALICE, "colors", { type: "image_colors", parameters: { color_count: 3 } });
    const other = await call(ALICE, "/api/v1/jobs/image/resize", {
      method: "POST",
      json: { ...SOURCE, dest_bucket: "media-out", dest_key: "a.jpg", template: "colors" },
    });
    assert.equal(other.status, 400);
    assert.equal(
      other.body.error,
      "template colors is a image_colors template, not image_resize: submit it to POST /api/v1/jobs/image/colors",
    );
    const unknown = await call(ALICE, "/api/v1/jobs/image/colors", {
      method: "POST",
      json: { ...SOURCE, template: "nope" },
    });
    assert.equal(unknown.status, 404);
    const version = await call(ALICE, "/api/v1/jobs/image/colors", {
      method: "POST",
      json: { ...SOURCE, template_version: 1 },
    });
    assert.equal(version.status, 400);
    assert.match(String(version.body.error), /template_version goes with template/);
    const pinned = await call(ALICE, "/api/v1/jobs/image/colors", {
      method: "POST",
      json: { ...SOURCE, template: "colors", template_version: 2 },
    });
    assert.equal(pinned.status, 404);
    assert.deepEqual(pinned.body, { error: "template colors has no version 2" });
  });

  test("template_version pins an older version; an Idempotency-Key replays after the template changed", async () => {
    await put(ALICE, "pin", { type: "image_resize", parameters: { width: 10, height: 10 } });
    await put(ALICE, "pin", { type: "image_resize", parameters: { width: 20, height: 20 } });
    const body = {
      ...SOURCE,
      dest_bucket: "media-out",
      dest_key: "p.jpg",
      template: "pin",
      template_version: 1,
    };
    const old = await call(ALICE, "/api/v1/jobs/image/resize", { method: "POST", json: body });
    assert.equal(old.status, 202, old.text);
    const record = await job(ALICE, old.body.job_id as string);
    assert.deepEqual(record.template, { name: "pin", version: 1 });
    assert.equal((record.parameters as Body).width, 10);

    const keyed = { ...body, template_version: undefined };
    const headers = { "idempotency-key": "tpl-replay-1" };
    const first = await stack.request("/api/v1/jobs/image/resize", {
      method: "POST",
      json: keyed,
      key: ALICE,
      headers,
    });
    assert.equal(first.status, 202);
    const firstId = ((await first.json()) as Body).job_id;
    await put(ALICE, "pin", { type: "image_resize", parameters: { width: 30, height: 30 } });
    const again = await stack.request("/api/v1/jobs/image/resize", {
      method: "POST",
      json: keyed,
      key: ALICE,
      headers,
    });
    assert.equal(again.status, 202, "the same request, replayed, though the template changed");
    assert.equal(again.headers.get("idempotent-replayed"), "true");
    assert.equal(((await again.json()) as Body).job_id, firstId);
  });

  test("a batch's entries name templates as single submits do; the type may be left out; a refusal names the entry", async () => {
    await put(ALICE, "batch-thumb", {
      type: "image_resize",
      parameters: { width: 64, height: 64 },
      overridable: ["quality"],
      dest_bucket: "media-out",
      dest_key: "b/{name}-{job_id}.jpg",
    });
    const res = await call(ALICE, "/api/v1/jobs/batch", {
      method: "POST",
      json: {
        jobs: [
          { ...SOURCE, template: "batch-thumb" },
          { ...SOURCE, type: "image_resize", template: "batch-thumb", parameters: { quality: 40 } },
          { ...SOURCE, type: "image_colors" },
        ],
      },
    });
    assert.equal(res.status, 201, res.text);
    const [a, b, c] = res.body.job_ids as string[];
    const first = await job(ALICE, a!);
    assert.deepEqual(first.template, { name: "batch-thumb", version: 1 });
    assert.equal(first.type, "image_resize");
    assert.equal(first.dest_key, `b/cat.photo-${a}.jpg`);
    assert.equal(((await job(ALICE, b!)).parameters as Body).quality, 40);
    assert.equal((await job(ALICE, c!)).template, undefined);

    const refused = await call(ALICE, "/api/v1/jobs/batch", {
      method: "POST",
      json: {
        jobs: [
          { ...SOURCE, type: "image_colors" },
          { ...SOURCE, template: "batch-thumb", parameters: { width: 1 } },
        ],
      },
    });
    assert.equal(refused.status, 400);
    assert.equal(
      refused.body.error,
      "jobs[1]: template batch-thumb does not let a submission override width (it allows quality)",
    );
    const unknown = await call(BOB, "/api/v1/jobs/batch", {
      method: "POST",
      json: { jobs: [{ ...SOURCE, type: "image_colors", template: "batch-thumb" }] },
    });
    assert.equal(unknown.status, 404);
    assert.deepEqual(unknown.body, { error: "jobs[0]: template batch-thumb not found" });
    const untyped = await call(BOB, "/api/v1/jobs/batch", {
      method: "POST",
      json: { jobs: [{ ...SOURCE, template: "batch-thumb" }] },
    });
    const versionAlone = await call(ALICE, "/api/v1/jobs/batch", {
      method: "POST",
      json: { jobs: [{ ...SOURCE, type: "image_colors", template_version: 1 }] },
    });
    assert.equal(versionAlone.status, 400);
    assert.equal(versionAlone.body.error, "jobs[0]: template_version goes with template: name the template");
    assert.equal(untyped.status, 404, "an entry without a type, of a template the client does not have");
    assert.deepEqual(untyped.body, { error: "jobs[0]: template batch-thumb not found" });
  });

  test("a pipeline's template: {steps} shorthand, checked step by step at PUT, its step dest_keys' patterns filled at submit", async () => {
    const stored = await put(ALICE, "gallery", {
      steps: {
        thumb: {
          type: "image_resize",
          parameters: { width: 50, height: 50 },
          dest_key: "{prefix}/{name}-thumb-{job_id}.jpg",
        },
        colors: { type: "image_colors" },
      },
      keep_partial: true,
      dest_bucket: "media-out",
    });
    assert.equal(stored.status, 201, stored.text);
    assert.equal(stored.body.type, "pipeline");
    assert.equal((stored.body.parameters as Body).keep_partial, true);

    const bad = await put(ALICE, "gallery-bad", {
      steps: { thumb: { type: "image_resize", parameters: { width: 99999, height: 5 } } },
    });
    assert.equal(bad.status, 400, bad.text);
    assert.match(String(bad.body.error), /steps\.thumb\.parameters\.width/);

    const res = await call(ALICE, "/api/v1/jobs/pipeline", {
      method: "POST",
      json: { ...SOURCE, template: "gallery", dest_prefix: "sites/b" },
    });
    assert.equal(res.status, 202, res.text);
    const id = res.body.job_id as string;
    const record = await job(ALICE, id);
    assert.deepEqual(record.template, { name: "gallery", version: 1 });
    const steps = (record.parameters as { steps: Record<string, Body> }).steps;
    assert.equal(steps.thumb!.dest_key, `sites/b/cat.photo-thumb-${id}.jpg`);
    assert.equal((steps.thumb!.parameters as Body).width, 50);

    const other = await call(ALICE, "/api/v1/jobs/image/resize", {
      method: "POST",
      json: { ...SOURCE, template: "gallery", dest_prefix: "x" },
    });
    assert.equal(other.status, 400);
    assert.match(
      String(other.body.error),
      /template gallery is a pipeline template, not image_resize: submit it to POST \/api\/v1\/jobs\/pipeline/,
    );
  });
});

describe("templates: limits", () => {
  const body = (width: number) => ({ type: "image_resize", parameters: { width, height: 48 } });

  test("a new name beyond limits.templates_per_client is refused (409) until one is deleted; versions of one are not", async () => {
    for (let i = 0; i < PER_CLIENT; i++) assert.equal((await put(CAROL, `t${i}`, body(64))).status, 201);
    const refused = await put(CAROL, "one-more", body(64));
    assert.equal(refused.status, 409);
    assert.equal(
      refused.body.error,
      `client carol has ${PER_CLIENT} templates, the most limits.templates_per_client allows: delete one, or store this as a version of one`,
    );
    assert.equal((await call(CAROL, "/api/v1/templates/one-more")).status, 404, "nothing was stored");
    assert.equal((await put(CAROL, "t0", body(80))).status, 200, "a new version of one it has");
    assert.equal((await put(ALICE, "alice-own", body(64))).status, 201, "another client's count is its own");
    assert.equal((await call(CAROL, "/api/v1/templates/t1", { method: "DELETE" })).status, 200);
    assert.equal((await put(CAROL, "one-more", body(64))).status, 201);
  });

  test("storing a version beyond limits.template_versions drops the oldest", async () => {
    for (let width = 1; width <= VERSIONS + 2; width++) await put(ALICE, "many", body(width));
    const kept = VERSIONS + 2 - VERSIONS + 1;
    for (let version = 1; version <= VERSIONS + 2; version++) {
      const read = await call(ALICE, `/api/v1/templates/many?version=${version}`);
      if (version < kept) {
        assert.equal(read.status, 404, `version ${version} dropped`);
        assert.equal(read.body.error, `template many has no version ${version}`);
      } else {
        assert.equal(read.status, 200, `version ${version} kept`);
        assert.equal((read.body.parameters as Body).width, version);
      }
    }
    const current = await call(ALICE, "/api/v1/templates/many");
    assert.equal(current.body.version, VERSIONS + 2);
  });
});
