import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  checkAddress,
  compileAddressPolicy,
  parseAllowedHosts,
  type WebhookAddressPolicy,
} from "../../core/webhooks/address-policy.js";

const strict: WebhookAddressPolicy = { allowPrivate: false, allowedHosts: [] };
const lenient: WebhookAddressPolicy = { allowPrivate: true, allowedHosts: [] };

// address, allowed by the strict policy, allowed with allow_private, words expected in the strict reason
const table: Array<[string, boolean, boolean, string]> = [
  ["8.8.8.8", true, true, ""],
  ["1.1.1.1", true, true, ""],
  ["2001:4860:4860::8888", true, true, ""],
  ["::ffff:8.8.8.8", true, true, ""],
  ["127.0.0.1", false, true, "loopback"],
  ["127.255.0.1", false, true, "loopback"],
  ["::1", false, true, "loopback"],
  ["::ffff:127.0.0.1", false, true, "loopback"],
  ["::ffff:7f00:1", false, true, "loopback"],
  ["10.0.0.1", false, true, "private"],
  ["10.255.255.255", false, true, "private"],
  ["172.16.0.1", false, true, "private"],
  ["172.31.255.254", false, true, "private"],
  ["172.32.0.1", true, true, ""],
  ["192.168.1.1", false, true, "private"],
  ["100.64.0.1", false, true, "carrier-grade NAT"],
  ["100.127.255.254", false, true, "carrier-grade NAT"],
  ["169.254.1.1", false, true, "link-local"],
  ["fe80::1", false, true, "link-local"],
  ["fc00::1", false, true, "unique local"],
  ["fd12:3456::1", false, true, "unique local"],
  ["192.0.2.1", false, true, "reserved"],
  ["240.0.0.1", false, true, "reserved"],
  ["64:ff9b::808:808", false, true, "NAT64"],
  ["2002:7f00:1::1", false, true, "6to4"],
  ["2001:0:4136:e378:8000:63bf:3fff:fdd2", false, true, "Teredo"],
  // never, even with allow_private
  ["169.254.169.254", false, false, "cloud metadata"],
  ["::ffff:169.254.169.254", false, false, "cloud metadata"],
  ["fd00:ec2::254", false, false, "cloud metadata"],
  ["100.100.100.200", false, false, "cloud metadata"],
  ["169.254.170.2", false, false, "cloud metadata"],
  ["169.254.170.23", false, false, "cloud metadata"],
  ["fd00:ec2::23", false, false, "cloud metadata"],
  ["fd00:0ec2:0000:0000:0000:0000:0000:0023", false, false, "cloud metadata"],
  // ... and every IPv6 form that reaches one of them through a translator or a tunnel
  ["::ffff:a9fe:a9fe", false, false, "cloud metadata"], // IPv4-mapped, hex
  ["64:ff9b::a9fe:a9fe", false, false, "cloud metadata"], // NAT64, well-known prefix
  ["64:ff9b::169.254.169.254", false, false, "cloud metadata"],
  ["64:ff9b::a9fe:aa02", false, false, "cloud metadata"], // 169.254.170.2
  ["64:ff9b:1::a9fe:a9fe", false, false, "cloud metadata"], // local-use NAT64 prefix, /96
  ["64:ff9b:1:a9fe:a9:fe00::", false, false, "cloud metadata"], // local-use, a /48 prefix (RFC 6052)
  ["::ffff:0:a9fe:a9fe", false, false, "cloud metadata"], // IPv4-translated
  ["::ffff:0:169.254.169.254", false, false, "cloud metadata"],
  ["::a9fe:a9fe", false, false, "cloud metadata"], // IPv4-compatible (deprecated)
  ["2002:a9fe:a9fe::1", false, false, "cloud metadata"], // 6to4
  ["2002:6464:64c8::1", false, false, "cloud metadata"], // 6to4 of 100.100.100.200
  ["2001:0:a9fe:a9fe::1", false, false, "cloud metadata"], // Teredo server
  ["2001:0:4136:e378:8000:63bf:5601:5601", false, false, "cloud metadata"], // Teredo client (inverted)
  // IPv4-compatible addresses of anything else are special, not public
  ["::808:808", false, true, "IPv4-compatible"],
  ["0.0.0.0", false, false, "unspecified"],
  ["0.1.2.3", false, false, "unspecified"],
  ["::", false, false, "unspecified"],
  ["224.0.0.1", false, false, "multicast"],
  ["ff02::1", false, false, "multicast"],
  ["255.255.255.255", false, false, "broadcast"],
];

describe("checkAddress", () => {
  for (const [address, strictAllowed, lenientAllowed, words] of table) {
    test(`${address}: ${strictAllowed ? "public" : words}`, () => {
      const verdict = checkAddress(address, "hooks.example.com", strict);
      assert.equal(verdict.allowed, strictAllowed);
      if (!verdict.allowed) {
        assert.ok(verdict.reason.startsWith(`${address} `), verdict.reason);
        assert.ok(verdict.reason.includes(` ${words} `), verdict.reason);
        assert.match(verdict.reason, /webhooks\.allowed_hosts/);
        if (lenientAllowed)
          assert.match(verdict.reason, /webhooks\.allow_private is false and hooks\.example\.com/);
        else
          assert.match(verdict.reason, /is never a webhook target unless listed in webhooks\.allowed_hosts$/);
      }
      assert.equal(checkAddress(address, "hooks.example.com", lenient).allowed, lenientAllowed);
    });
  }

  test("reasons an operator can act on", () => {
    assert.deepEqual(checkAddress("127.0.0.1", "localhost", strict), {
      allowed: false,
      reason:
        "127.0.0.1 is a loopback address; webhooks.allow_private is false and localhost is not in webhooks.allowed_hosts",
    });
    assert.deepEqual(checkAddress("169.254.169.254", "169.254.169.254", lenient), {
      allowed: false,
      reason:
        "169.254.169.254 is a cloud metadata address and is never a webhook target unless listed in webhooks.allowed_hosts",
    });
    const mapped = checkAddress("::ffff:127.0.0.1", "[::ffff:7f00:1]", strict);
    assert.equal(mapped.allowed, false);
    assert.match(
      mapped.allowed ? "" : mapped.reason,
      /^::ffff:127\.0\.0\.1 \(127\.0\.0\.1\) is a loopback address;.* ::ffff:7f00:1 is not/,
    );
  });

  test("a metadata address reached through an embedding says which", () => {
    assert.deepEqual(checkAddress("64:ff9b::a9fe:a9fe", "hooks.example.com", lenient), {
      allowed: false,
      reason:
        "64:ff9b::a9fe:a9fe (169.254.169.254 through NAT64) is a cloud metadata address and is never a webhook target unless listed in webhooks.allowed_hosts",
    });
    const teredo = checkAddress("2001:0:4136:e378:8000:63bf:5601:5601", "x.example", lenient);
    assert.match(teredo.allowed ? "" : teredo.reason, /\(169\.254\.169\.254 through Teredo client\)/);
    // Embeddings of other addresses are judged as before: refused unless allow_private.
    for (const address of [
      "64:ff9b::a9fe:a9fd",
      "2002:a9fe:a9fd::1",
      "::ffff:0:a9fe:1",
      "64:ff9b:1::808:808",
    ]) {
      assert.equal(checkAddress(address, "x.example", lenient).allowed, true, address);
      assert.equal(checkAddress(address, "x.example", strict).allowed, false, address);
    }
    assert.equal(checkAddress("::1", "x.example", lenient).allowed, true);
  });

  test("something that is not an IP address is refused", () => {
    assert.deepEqual(checkAddress("example.com", "example.com", lenient), {
      allowed: false,
      reason: "example.com is not an IP address",
    });
  });
});

describe("webhooks.allowed_hosts", () => {
  const policy = (...allowedHosts: string[]) => compileAddressPolicy({ allowPrivate: false, allowedHosts });

  test("a hostname: exact, case-insensitive, trailing dot ignored, whatever the address", () => {
    const p = policy("Hooks.Internal.");
    for (const host of ["hooks.internal", "HOOKS.internal", "hooks.internal."]) {
      assert.equal(checkAddress("10.1.2.3", host, p).allowed, true, host);
      assert.equal(checkAddress("169.254.169.254", host, p).allowed, true, host);
    }
    assert.equal(checkAddress("10.1.2.3", "a.hooks.internal", p).allowed, false);
    assert.equal(checkAddress("10.1.2.3", "hooks.internal.evil.com", p).allowed, false);
    assert.equal(checkAddress("10.1.2.3", "xhooks.internal", p).allowed, false);
  });

  test("a wildcard: any subdomain, not the apex", () => {
    const p = policy("*.svc.cluster.local");
    assert.equal(checkAddress("10.96.0.10", "hooks.svc.cluster.local", p).allowed, true);
    assert.equal(checkAddress("10.96.0.10", "a.b.svc.cluster.local", p).allowed, true);
    assert.equal(checkAddress("10.96.0.10", "svc.cluster.local", p).allowed, false);
    assert.equal(checkAddress("10.96.0.10", "evilsvc.cluster.local", p).allowed, false);
  });

  test("an IP literal", () => {
    const p = policy("10.1.2.3", "fd00::5", "[::1]");
    assert.equal(checkAddress("10.1.2.3", "anything.example", p).allowed, true);
    assert.equal(checkAddress("::ffff:10.1.2.3", "anything.example", p).allowed, true);
    assert.equal(checkAddress("10.1.2.4", "anything.example", p).allowed, false);
    assert.equal(checkAddress("fd00::5", "anything.example", p).allowed, true);
    assert.equal(checkAddress("::1", "anything.example", p).allowed, true);
    assert.equal(checkAddress("127.0.0.1", "anything.example", p).allowed, false);
  });

  test("a CIDR range, including the always-refused addresses inside it", () => {
    const p = policy("10.0.0.0/8", "fd00::/8", "169.254.169.254/32");
    assert.equal(checkAddress("10.200.3.4", "x.example", p).allowed, true);
    assert.equal(checkAddress("11.0.0.1", "x.example", p).allowed, true); // public anyway
    assert.equal(checkAddress("192.168.0.1", "x.example", p).allowed, false);
    assert.equal(checkAddress("fd00:ec2::254", "x.example", p).allowed, true);
    assert.equal(checkAddress("fc00::1", "x.example", p).allowed, false);
    assert.equal(checkAddress("169.254.169.254", "x.example", p).allowed, true);
    assert.equal(checkAddress("169.254.169.253", "x.example", p).allowed, false);
  });

  test("an uncompiled policy is accepted too", () => {
    assert.equal(
      checkAddress("10.0.0.1", "x.example", { allowPrivate: false, allowedHosts: ["10.0.0.0/8"] }).allowed,
      true,
    );
  });

  test("parseAllowedHosts normalises entries", () => {
    const parsed = parseAllowedHosts(["Example.COM.", "*.Svc.Local", "bücher.de", "10.0.0.0/8", "::1"]);
    assert.deepEqual([...parsed.names], ["example.com", "xn--bcher-kva.de"]);
    assert.deepEqual(parsed.wildcards, ["svc.local"]);
    assert.equal(parsed.ranges.length, 2);
    assert.equal(
      checkAddress("10.0.0.1", "bücher.de", { allowPrivate: false, allowedHosts: parsed }).allowed,
      true,
    );
    assert.equal(
      checkAddress("10.0.0.1", "xn--bcher-kva.de", { allowPrivate: false, allowedHosts: parsed }).allowed,
      true,
    );
  });

  test("parseAllowedHosts names the bad entry", () => {
    for (const bad of [
      "",
      "*",
      "*.",
      "a.*.com",
      "http://example.com",
      "example.com:8080",
      "example.com/path",
      "exa mple.com",
      "-example.com",
      "a..b",
      "10.0.0.0/33",
      "10.0.0/8",
      "fd00::/129",
      "127.1",
      "2130706433",
      "0x7f.0.0.1",
    ]) {
      assert.throws(
        () => parseAllowedHosts(["ok.example", bad]),
        (err: Error) => err.message.startsWith(`webhooks.allowed_hosts: ${JSON.stringify(bad)} `),
        bad,
      );
    }
  });
});
