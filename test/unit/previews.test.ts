// The bound on the previews one API process makes at once (api/previews.ts): beyond it a request is
// refused with a 503 instead of holding one more source in memory; a preview being made is shared.
import assert from "node:assert/strict";
import { test } from "node:test";
import { PreviewMaker, PreviewRefusal } from "../../api/previews.js";

/** A preview that is made when `finish` is called. */
function pending() {
  let finish!: (bytes: Buffer) => void;
  const made = new Promise<Buffer>((resolve) => (finish = resolve));
  return { made, finish, calls: 0 };
}

test("beyond its limit a preview is refused with a 503; the same preview is made once; a slot frees when one ends", async () => {
  const maker = new PreviewMaker(2);
  const a = pending();
  const b = pending();
  const first = maker.run("a", () => (a.calls++, a.made));
  const again = maker.run("a", () => (a.calls++, a.made));
  const second = maker.run("b", () => b.made);
  await assert.rejects(
    maker.run("c", () => Promise.resolve(Buffer.from("c"))),
    (err: unknown) =>
      err instanceof PreviewRefusal &&
      err.status === 503 &&
      /making 2 previews already, as many as it makes at once; try again in 1 s/.test(err.message),
  );
  assert.equal(a.calls, 1);
  a.finish(Buffer.from("a"));
  assert.deepEqual(await first, Buffer.from("a"));
  assert.deepEqual(await again, Buffer.from("a"));
  assert.deepEqual(await maker.run("c", () => Promise.resolve(Buffer.from("c"))), Buffer.from("c"));
  b.finish(Buffer.from("b"));
  assert.deepEqual(await second, Buffer.from("b"));
});

test("a preview that fails frees its slot", async () => {
  const maker = new PreviewMaker(1);
  await assert.rejects(
    maker.run("x", () => Promise.reject(new Error("broken"))),
    /broken/,
  );
  assert.deepEqual(await maker.run("y", () => Promise.resolve(Buffer.from("y"))), Buffer.from("y"));
});
