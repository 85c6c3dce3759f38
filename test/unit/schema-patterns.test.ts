import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { integerRange } from "../../core/jobs/bounds.js";
import { CPU_QUANTITY, MEMORY_QUANTITY, WEBHOOK_URL_PATTERN } from "../../core/jobs/records.js";
import { MAX_TIMESTAMP_SECONDS, TIMESTAMP_PATTERN, timestampSeconds } from "../../core/jobs/timestamp.js";
import { quantityWithin } from "../../core/jobs/spec.js";
import { parseQuantity, QuantityError } from "../../core/quantity.js";

// The route schemas say their bounds as patterns, which the OpenAPI document publishes and the
// contract test generates from. Each pattern must accept exactly what the server can act on: these
// properties check that with generated values (fast-check), against the code that reads them.

const RUNS = { numRuns: 2000, seed: 20261125 };

describe("integerRange", () => {
  test("matches exactly the integers from min to max, written without leading zeros", () => {
    fc.assert(
      fc.property(
        fc.nat(5_000_000),
        fc.nat(5_000_000),
        fc.integer({ min: -50, max: 5_000_050 }),
        (a, b, n) => {
          const [min, max] = a <= b ? [a, b] : [b, a];
          const re = new RegExp(`^${integerRange(min, max)}$`);
          assert.equal(re.test(String(n)), n >= min && n <= max, `${n} in ${min}..${max}`);
          // The edges themselves, and their neighbours.
          for (const edge of [min - 1, min, max, max + 1]) {
            assert.equal(re.test(String(edge)), edge >= min && edge <= max, `${edge} in ${min}..${max}`);
          }
          assert.equal(re.test(`0${min}`), false, "no leading zero");
        },
      ),
      RUNS,
    );
  });

  test("refuses impossible ranges", () => {
    assert.throws(() => integerRange(5, 4), RangeError);
    assert.throws(() => integerRange(-1, 4), RangeError);
  });
});

describe("thumbnail timestamps", () => {
  const pattern = new RegExp(TIMESTAMP_PATTERN);

  test("every string the pattern accepts is read, and lies within the maximum", () => {
    // Strings of the pattern's alphabet, shaped like clocks and numbers, most of them near the edges.
    const digits = fc.stringMatching(/^[0-9]{1,8}$/);
    const fraction = fc.option(fc.stringMatching(/^\.[0-9]{1,3}$/), { nil: "" });
    const candidate = fc.oneof(
      fc.tuple(digits, fraction).map(([n, f]) => `${n}${f}`),
      fc.tuple(digits, fc.nat(99), fc.nat(99), fraction).map(([h, m, s, f]) => `${h}:${m}:${s}${f}`),
      fc.tuple(fc.nat(99), fc.nat(99), fraction).map(([m, s, f]) => `${m}:${s}${f}`),
      fc
        .tuple(fc.integer({ min: 998, max: 1001 }), fc.nat(60), fc.nat(60), fraction)
        .map(([h, m, s, f]) => `${h}:${String(m).padStart(2, "0")}:${String(s).padStart(2, "0")}${f}`),
      fc.integer({ min: MAX_TIMESTAMP_SECONDS - 3, max: MAX_TIMESTAMP_SECONDS + 3 }).map(String),
    );
    fc.assert(
      fc.property(candidate, (text) => {
        const seconds = timestampSeconds(text);
        if (pattern.test(text)) {
          assert.notEqual(seconds, undefined, `${text} matches but is not read`);
          assert.ok(seconds! <= MAX_TIMESTAMP_SECONDS, `${text} matches but is ${seconds} s`);
        } else if (seconds !== undefined) {
          // Refused by the pattern: only because it is too late (or a form the reader is lenient on).
          assert.ok(
            seconds > MAX_TIMESTAMP_SECONDS || !/^[0-9:.]+$/.test(text),
            `${text} (${seconds} s) refused`,
          );
        }
      }),
      RUNS,
    );
  });

  test("the edges", () => {
    for (const ok of ["1000:00:00", "1000:00:00.000", "999:59:59.9", "3600000", "0", "00:00:01", "59:59"]) {
      assert.ok(pattern.test(ok), ok);
    }
    for (const no of ["1000:00:00.1", "1000:00:01", "3600000.5", "3600001", "60:00", "1e308", "", "-1"]) {
      assert.ok(!pattern.test(no), no);
    }
  });
});

describe("webhook URLs", () => {
  test("every string the pattern accepts parses as an http(s) URL with a host", () => {
    const re = new RegExp(WEBHOOK_URL_PATTERN, "u");
    // Hosts of each kind the pattern has, then ports, paths and odd characters around them.
    const label = fc.stringMatching(/^[A-Za-z0-9_]([A-Za-z0-9_-]{0,8}[A-Za-z0-9_])?$/);
    const name = fc
      .tuple(fc.array(label, { maxLength: 3 }), fc.stringMatching(/^[A-Za-z][A-Za-z0-9-]{0,6}$/))
      .map(([labels, last]) => [...labels, last].join("."));
    const ipv4 = fc.ipV4();
    const ipv6 = fc.ipV6().map((a) => `[${a}]`);
    const host = fc.oneof(name, ipv4, ipv6, fc.stringMatching(/^[^/?#@\s]{1,12}$/));
    const port = fc.option(
      fc.integer({ min: 0, max: 70000 }).map((p) => `:${p}`),
      { nil: "" },
    );
    const rest = fc.option(fc.stringMatching(/^[/?#][^\s]{0,20}$/), { nil: "" });
    const scheme = fc.constantFrom("http://", "https://", "HTTPS://", "ftp://", "http:/");
    const userinfo = fc.option(fc.stringMatching(/^[A-Za-z0-9:%.]{0,6}@$/), { nil: "" });
    let matched = 0;
    fc.assert(
      fc.property(fc.tuple(scheme, userinfo, host, port, rest), ([s, u, h, p, r]) => {
        const text = `${s}${u}${h}${p}${r}`;
        if (!re.test(text)) return;
        matched++;
        const url = new URL(text);
        assert.ok(url.protocol === "http:" || url.protocol === "https:", text);
        assert.notEqual(url.hostname, "", text);
      }),
      RUNS,
    );
    assert.ok(matched > RUNS.numRuns / 4, `only ${matched} generated URLs matched`);
  });
});

describe("per-job quantities", () => {
  test("every quantity the patterns accept is read as a number above zero, or refused as too large", () => {
    const cpu = new RegExp(CPU_QUANTITY);
    const memory = new RegExp(MEMORY_QUANTITY);
    const candidate = fc.stringMatching(/^[0-9.]{1,6}(m|[KMGTPE]i?|k|e[0-9]{1,3})?$/);
    fc.assert(
      fc.property(candidate, (text) => {
        for (const re of [cpu, memory]) {
          if (!re.test(text)) continue;
          let amount: number;
          try {
            amount = parseQuantity(text);
          } catch (err) {
            // Beyond a double (1e310): refused as too large, never a server error.
            assert.ok(err instanceof QuantityError && /too large/.test(err.message), text);
            assert.equal(quantityWithin(text, "1E"), false, text);
            continue;
          }
          assert.ok(amount > 0, `${text} matches but is ${amount}`);
          assert.equal(quantityWithin(text, "1E"), amount <= 1e18, text);
        }
      }),
      RUNS,
    );
  });

  test("compared with the maximum as numbers", () => {
    assert.equal(quantityWithin("8192Mi", "8Gi"), true);
    assert.equal(quantityWithin("8193Mi", "8Gi"), false);
    assert.equal(quantityWithin("0", "8Gi"), false);
    assert.equal(quantityWithin("1500m", "1.5"), true);
    assert.equal(quantityWithin("1501m", "1.5"), false);
  });
});
