// A known path asked with a method it does not have is a 405 naming the methods it has (Allow), not
// the 404 of an unknown path; under /api/v1 the key is checked first, as for the routes themselves.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { startTestStack, type TestStack } from "../support/api.js";

let stack: TestStack;
before(async () => {
  stack = await startTestStack({ apiKeys: ["methods-key"] });
});
after(async () => {
  await stack?.close();
});

describe("methods a path does not have", () => {
  test("DELETE on a job is 405 with Allow: GET, HEAD and an {error} naming them", async () => {
    const res = await stack.request("/api/v1/jobs/some-id", { method: "DELETE" });
    assert.equal(res.status, 405);
    assert.equal(res.headers.get("allow"), "GET, HEAD");
    assert.match(res.headers.get("content-type") ?? "", /^application\/json/);
    assert.deepEqual(await res.json(), {
      error: "method DELETE is not allowed on /api/v1/jobs/:id: use GET, HEAD",
    });
  });

  test("GET on a submit route is 405 with Allow: POST", async () => {
    const res = await stack.request("/api/v1/jobs/image/resize");
    assert.equal(res.status, 405);
    assert.equal(res.headers.get("allow"), "POST");
  });

  test("outside /api/v1 too: PUT /health is 405", async () => {
    const res = await stack.request("/health", { method: "PUT", key: null });
    assert.equal(res.status, 405);
    assert.equal(res.headers.get("allow"), "GET, HEAD");
  });

  test("without a key, /api/v1 answers 401 before saying anything about methods", async () => {
    const res = await stack.request("/api/v1/jobs/some-id", { method: "DELETE", key: null });
    assert.equal(res.status, 401);
    assert.equal(res.headers.get("allow"), null);
  });

  test("an unknown path is still a 404", async () => {
    const res = await stack.request("/api/v1/nothing-here", { method: "DELETE" });
    assert.equal(res.status, 404);
  });

  test("the 405 routes are not in the OpenAPI document", async () => {
    const doc = (await (await stack.request("/docs/json", { key: null })).json()) as {
      paths: Record<string, Record<string, unknown>>;
    };
    assert.deepEqual(Object.keys(doc.paths["/api/v1/jobs/{id}"] ?? {}).sort(), ["get"]);
    assert.deepEqual(Object.keys(doc.paths["/api/v1/jobs/image/resize"] ?? {}).sort(), ["post"]);
  });
});
