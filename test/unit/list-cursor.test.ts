// The list routes' cursor and time parameters (api/listing.ts): every cursor the schema's pattern
// lets through is a place, a place round-trips through its cursor, and RFC 3339 times become the
// millisecond the store compares (rounded up, offsets and leap seconds included).
import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { CURSOR_PATTERN, decodeCursor, encodeCursor, timeParam } from "../../api/listing.js";

test("a place round-trips through its cursor, and the cursor matches the schema's pattern", () => {
  const pattern = new RegExp(CURSOR_PATTERN);
  const id = fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/);
  fc.assert(
    fc.property(fc.integer({ min: 0, max: 36 ** 10 - 1 }), id, (createdMs, id) => {
      const cursor = encodeCursor({ createdMs, id });
      assert.match(cursor, pattern);
      assert.deepEqual(decodeCursor(cursor), { createdMs, id });
    }),
  );
  assert.equal(encodeCursor({ createdMs: 1777636800000, id: "a.b" }), "momv1xc0.a.b");
  assert.throws(() => encodeCursor({ createdMs: -1, id: "x" }), /no cursor/);
  assert.throws(() => encodeCursor({ createdMs: 1, id: "has space" }), /no cursor/);
});

test("every text the pattern lets through is a place with a safe created_ms", () => {
  fc.assert(
    fc.property(fc.stringMatching(new RegExp(CURSOR_PATTERN)), (cursor) => {
      const place = decodeCursor(cursor);
      assert.ok(Number.isSafeInteger(place.createdMs) && place.createdMs >= 0);
      assert.ok(place.id.length > 0);
    }),
  );
  assert.throws(() => decodeCursor("nope"), { statusCode: 400, message: /query parameter cursor/ });
});

test("times: offsets, separators and case as RFC 3339 allows; fractions below a millisecond and leap seconds round up", () => {
  const ms = Date.parse("2026-05-01T12:00:00.000Z");
  assert.equal(timeParam("t", "2026-05-01T12:00:00Z"), ms);
  assert.equal(timeParam("t", "2026-05-01t12:00:00z"), ms);
  assert.equal(timeParam("t", "2026-05-01 12:00:00Z"), ms);
  assert.equal(timeParam("t", "2026-05-01T14:30:00+02:30"), ms);
  assert.equal(timeParam("t", "2026-05-01T14:30:00+0230"), ms);
  assert.equal(timeParam("t", "2026-05-01T10:00:00-02"), ms);
  assert.equal(timeParam("t", "2026-05-01T12:00:00.5Z"), ms + 500);
  assert.equal(timeParam("t", "2026-05-01T12:00:00.123Z"), ms + 123);
  assert.equal(timeParam("t", "2026-05-01T12:00:00.1230000Z"), ms + 123);
  assert.equal(timeParam("t", "2026-05-01T12:00:00.1230001Z"), ms + 124);
  assert.equal(timeParam("t", "2026-06-30T23:59:60Z"), Date.parse("2026-07-01T00:00:00Z"));
  assert.equal(timeParam("t", "0001-01-01T00:00:00Z"), Date.parse("0001-01-01T00:00:00Z"));
  assert.throws(() => timeParam("created_after", "tomorrow"), {
    statusCode: 400,
    message: /^query parameter created_after is not a date-time/,
  });
});
