import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { decimalAtMost, integerRange, quantityPattern } from "../../core/jobs/bounds.js";
import { NO_CONTROL_PATTERN, WEBHOOK_URL_PATTERN } from "../../core/jobs/records.js";
import { MAX_TIMESTAMP_SECONDS, TIMESTAMP_PATTERN, timestampSeconds } from "../../core/jobs/timestamp.js";
import { parseQuantity } from "../../core/quantity.js";

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

  test("decimalAtMost: decimals above zero up to a bound, with up to so many digits after the point", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 10_000_000 }),
        fc.integer({ min: 0, max: 3 }),
        fc.stringMatching(/^[0-9]{1,5}(\.[0-9]{1,4})?$/),
        (scaled, digits, text) => {
          const re = new RegExp(`^${decimalAtMost(BigInt(scaled), digits)}$`);
          const [whole = "", fraction = ""] = text.split(".");
          const canonical = !/^0[0-9]/.test(whole) && fraction.length <= digits;
          const value = Number(text) * 10 ** digits;
          assert.equal(
            re.test(text),
            canonical && value > 0 && Math.round(value) <= scaled,
            `${text} vs ${scaled}/10^${digits}`,
          );
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
  // Quantities in the forms the pattern knows, and some it does not (exponents, n and u, K).
  const quantity = fc
    .tuple(
      fc.oneof(fc.nat(9_999_999).map(String), fc.stringMatching(/^[0-9]{1,5}\.[0-9]{1,4}$/)),
      fc.constantFrom(
        "",
        "m",
        "k",
        "K",
        "M",
        "G",
        "T",
        "P",
        "E",
        "Ki",
        "Mi",
        "Gi",
        "Ti",
        "Pi",
        "Ei",
        "e3",
        "n",
      ),
    )
    .map(([n, suffix]) => `${n}${suffix}`);

  for (const [resource, max] of [
    ["cpu", "4"],
    ["cpu", "1500m"],
    ["cpu", "0.3"],
    ["memory", "8Gi"],
    ["memory", "3Gi"],
    ["memory", "1500M"],
  ] as const) {
    test(`${resource} at most ${max}: the pattern takes exactly the quantities above zero and within`, () => {
      const pattern = new RegExp(quantityPattern(resource, max));
      const limit = parseQuantity(max);
      const forms =
        resource === "cpu"
          ? /^(?:[0-9]+m|[0-9]+(?:\.[0-9]{1,3})?)$/
          : /^[0-9]+(?:(?:\.[0-9]{1,3})?(?:[kMGTPE]|[KMGTPE]i))?$/;
      fc.assert(
        fc.property(quantity, (text) => {
          const matched = pattern.test(text);
          if (!forms.test(text) || /^0[0-9]/.test(text)) {
            assert.equal(matched, false, `${text} is not a form the pattern takes`);
            return;
          }
          const value = parseQuantity(text);
          assert.equal(
            matched,
            value > 0 && value <= limit * (1 + 1e-12),
            `${text} = ${value}, max ${limit}`,
          );
        }),
        RUNS,
      );
      // The edges.
      assert.ok(pattern.test(max), `${max} itself`);
      assert.ok(!pattern.test("0"));
    });
  }

  test("the edges said in words", () => {
    const cpu = new RegExp(quantityPattern("cpu", "4"));
    for (const ok of ["4", "4.000", "4000m", "0.001", "1m", "0.5", "500m"]) assert.ok(cpu.test(ok), ok);
    for (const no of ["4.001", "4001m", "0", "0m", "0.0001", ".5", "1.5000", "05", "1e3", "-1"]) {
      assert.ok(!cpu.test(no), no);
    }
    const memory = new RegExp(quantityPattern("memory", "8Gi"));
    for (const ok of ["8Gi", "8192Mi", "1.5Gi", "8589934592", "8.589G", "512Ki", "0.007Ti", "1k"]) {
      assert.ok(memory.test(ok), ok);
    }
    for (const no of ["8.001Gi", "8193Mi", "8589934593", "8.590G", "0.008Ti", "1K", "0Mi", "129e6"]) {
      assert.ok(!memory.test(no), no);
    }
  });
});

describe("NO_CONTROL_PATTERN (object keys, request_id)", () => {
  const pattern = new RegExp(NO_CONTROL_PATTERN);

  test("refuses exactly the strings holding a control character (Unicode's Cc: C0, DEL and C1)", () => {
    for (let cp = 0; cp <= 0xffff; cp++) {
      const char = String.fromCharCode(cp);
      assert.equal(
        pattern.test(`in/a${char}b.jpg`),
        !/\p{Cc}/u.test(char),
        `U+${cp.toString(16).padStart(4, "0")}`,
      );
    }
    fc.assert(
      fc.property(fc.string({ unit: "grapheme-ascii" }), fc.string({ unit: "binary" }), (a, b) => {
        const text = a + b;
        assert.equal(pattern.test(text), !/\p{Cc}/u.test(text), JSON.stringify(text));
      }),
      { ...RUNS, numRuns: 300 },
    );
  });

  test("the C1 controls a probe sent: NEL, and the rest of U+0080 to U+009F", () => {
    for (const text of ["in/a\u0085b.jpg", "\u0080", "x\u009b[31m", "\u009f"]) {
      assert.ok(!pattern.test(text), JSON.stringify(text));
    }
    for (const text of ["in/Ünïcødé – photo (1).jpg", "\u00a0", "\u2028", "😀"]) {
      assert.ok(pattern.test(text), JSON.stringify(text));
    }
  });
});
