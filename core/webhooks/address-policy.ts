import { isIP } from "node:net";
import { domainToASCII } from "node:url";
import ipaddr from "ipaddr.js";

// Which addresses a webhook may connect to (SSRF protection). The HTTP client applies it to the address
// actually connected to, after DNS resolution, so a name that resolves (or re-resolves) to an internal
// address is caught.

export interface WebhookAddressPolicy {
  allowPrivate: boolean;
  allowedHosts: string[];
}

type IP = ipaddr.IPv4 | ipaddr.IPv6;

/** `webhooks.allowed_hosts`, validated and normalised by `parseAllowedHosts`. */
export interface AllowedHosts {
  names: ReadonlySet<string>;
  /** `*.example.com` is stored as `example.com`. */
  wildcards: readonly string[];
  /** IP literals are stored as /32 or /128 ranges. */
  ranges: ReadonlyArray<readonly [IP, number]>;
}

export interface CompiledAddressPolicy {
  allowPrivate: boolean;
  allowedHosts: AllowedHosts;
}

export type AddressVerdict = { allowed: true } | { allowed: false; reason: string };

const HOSTNAME = /^[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*$/;

/** Validates `webhooks.allowed_hosts` at config load; throws an Error naming the bad entry. */
export function parseAllowedHosts(entries: readonly string[]): AllowedHosts {
  const names = new Set<string>();
  const wildcards: string[] = [];
  const ranges: Array<readonly [IP, number]> = [];
  for (const entry of entries) {
    const bad = (why: string) => new Error(`webhooks.allowed_hosts: ${JSON.stringify(entry)} ${why}`);
    const text = entry.toLowerCase();
    if (text.includes("/")) {
      if (!ipaddr.IPv4.isValidCIDRFourPartDecimal(text) && !ipaddr.IPv6.isValidCIDR(text)) {
        throw bad("is not a valid CIDR range (such as 10.0.0.0/8 or fd00::/8)");
      }
      ranges.push(ipaddr.parseCIDR(text));
      continue;
    }
    const unbracketed = text.startsWith("[") && text.endsWith("]") ? text.slice(1, -1) : text;
    if (ipaddr.IPv4.isValidFourPartDecimal(unbracketed) || ipaddr.IPv6.isValid(unbracketed)) {
      const ip = ipaddr.parse(unbracketed);
      ranges.push([ip, ip.kind() === "ipv4" ? 32 : 128]);
      continue;
    }
    // "127.1" or "2130706433" would be read as IPv4 addresses by URL parsers: insist on the usual form.
    if (ipaddr.isValid(unbracketed)) throw bad("is an IPv4 address in an unusual form; write it as a.b.c.d");
    const wildcard = text.startsWith("*.");
    const name = normaliseHost(wildcard ? text.slice(2) : text);
    if (name === "" || name.length > 253 || !HOSTNAME.test(name)) {
      throw bad("is not a hostname, *.domain, IP address or CIDR range");
    }
    if (wildcard) wildcards.push(name);
    else names.add(name);
  }
  return { names, wildcards, ranges };
}

export function compileAddressPolicy(
  policy: WebhookAddressPolicy | CompiledAddressPolicy,
): CompiledAddressPolicy {
  if (!Array.isArray(policy.allowedHosts)) return policy as CompiledAddressPolicy;
  return { allowPrivate: policy.allowPrivate, allowedHosts: parseAllowedHosts(policy.allowedHosts) };
}

// Lower case, no brackets, no trailing dot, IDN in punycode: the form WHATWG URL gives a hostname.
function normaliseHost(host: string): string {
  let h = host.toLowerCase();
  if (h.startsWith("[") && h.endsWith("]")) h = h.slice(1, -1);
  if (isIP(h)) return h;
  if (h.endsWith(".")) h = h.slice(0, -1);
  return domainToASCII(h);
}

// Where clouds serve instance and workload credentials: EC2/GCE/Azure instance metadata (and its
// IPv6 form on EC2), Alibaba's, the ECS task metadata and credentials endpoint, the EKS Pod Identity
// agent (IPv4 and IPv6). Link-local or private, so webhooks.allow_private alone never opens them.
const METADATA = new Set([
  "169.254.169.254",
  "fd00:ec2::254",
  "100.100.100.200",
  "169.254.170.2",
  "169.254.170.23",
  "fd00:ec2::23",
]);
const NEVER = new Set(["unspecified", "broadcast", "multicast"]);

/**
 * The IPv4 addresses an IPv6 address may reach through a translator or tunnel, with the name of
 * the embedding: NAT64 (64:ff9b::/96 and the local-use 64:ff9b:1::/48, whose prefix length a
 * network chooses, so every RFC 6052 layout is read), IPv4-translated (::ffff:0:a.b.c.d), the
 * deprecated IPv4-compatible form (::a.b.c.d), 6to4 (2002:AABB:CCDD::/48) and Teredo (its server,
 * and its client, stored inverted). An IPv4-mapped address (::ffff:a.b.c.d) is that IPv4 address
 * itself and is judged as one. A metadata address reached this way is refused like the address
 * itself, whatever webhooks.allow_private says.
 */
export function embeddedIPv4(ip: ipaddr.IPv6): Array<{ ipv4: ipaddr.IPv4; via: string }> {
  const b = ip.toByteArray();
  const v4 = (i: number, j: number, k: number, l: number, invert = 0) =>
    new ipaddr.IPv4([b[i]! ^ invert, b[j]! ^ invert, b[k]! ^ invert, b[l]! ^ invert]);
  switch (ip.range()) {
    case "rfc6052": {
      // RFC 6052 2.2: the IPv4 address after a /32, /40, /48, /56, /64 or /96 prefix, skipping byte 8.
      const layouts =
        b[4] === 0 && b[5] === 0 && b[6] === 0 && b[7] === 0
          ? [[12, 13, 14, 15]]
          : [
              [4, 5, 6, 7],
              [5, 6, 7, 9],
              [6, 7, 9, 10],
              [7, 9, 10, 11],
              [9, 10, 11, 12],
              [12, 13, 14, 15],
            ];
      return layouts.map(([i, j, k, l]) => ({ ipv4: v4(i!, j!, k!, l!), via: "NAT64" }));
    }
    case "rfc6145":
      return [{ ipv4: v4(12, 13, 14, 15), via: "IPv4-translated" }];
    case "6to4":
      return [{ ipv4: v4(2, 3, 4, 5), via: "6to4" }];
    case "teredo":
      return [
        { ipv4: v4(4, 5, 6, 7), via: "Teredo server" },
        { ipv4: v4(12, 13, 14, 15, 0xff), via: "Teredo client" },
      ];
    default:
      return isIPv4Compatible(ip) ? [{ ipv4: v4(12, 13, 14, 15), via: "IPv4-compatible" }] : [];
  }
}

/** ::a.b.c.d (RFC 4291 2.5.5.1, deprecated), other than :: and ::1. */
function isIPv4Compatible(ip: ipaddr.IPv6): boolean {
  const p = ip.parts;
  return p.slice(0, 6).every((part) => part === 0) && (p[6] !== 0 || p[7]! > 1);
}

const DESCRIPTIONS: Record<string, string> = {
  unspecified: "an unspecified address",
  broadcast: "the broadcast address",
  multicast: "a multicast address",
  linkLocal: "a link-local address",
  loopback: "a loopback address",
  carrierGradeNat: "a carrier-grade NAT address",
  private: "a private address",
  reserved: "a reserved address",
  uniqueLocal: "a unique local address",
  deprecatedSiteLocal: "a site-local address",
  rfc6052: "a NAT64 address",
  rfc6145: "an IPv4-translated address",
  "6to4": "a 6to4 address",
  ipv4Compatible: "an IPv4-compatible address",
  teredo: "a Teredo address",
  benchmarking: "a benchmarking address",
  discard: "a discard-only address",
};

/** Is connecting to `address` (an IP literal) for URL host `host` allowed? */
export function checkAddress(
  address: string,
  host: string,
  policy: WebhookAddressPolicy | CompiledAddressPolicy,
): AddressVerdict {
  const { allowPrivate, allowedHosts } = compileAddressPolicy(policy);
  let parsed: IP;
  try {
    parsed = ipaddr.parse(address);
  } catch {
    return { allowed: false, reason: `${address} is not an IP address` };
  }
  // ::ffff:a.b.c.d reaches a.b.c.d: judge it as that IPv4 address.
  const ip =
    parsed.kind() === "ipv6" && (parsed as ipaddr.IPv6).isIPv4MappedAddress()
      ? (parsed as ipaddr.IPv6).toIPv4Address()
      : parsed;
  if (
    hostAllowed(normaliseHost(host), allowedHosts) ||
    inRanges(parsed, allowedHosts) ||
    inRanges(ip, allowedHosts)
  ) {
    return { allowed: true };
  }

  const metadata =
    ip.kind() === "ipv6"
      ? embeddedIPv4(ip as ipaddr.IPv6).find(({ ipv4 }) => METADATA.has(ipv4.toString()))
      : undefined;
  if (metadata) {
    return {
      allowed: false,
      reason: `${address} (${metadata.ipv4.toString()} through ${metadata.via}) is a cloud metadata address and is never a webhook target unless listed in webhooks.allowed_hosts`,
    };
  }
  const shown = ip === parsed ? address : `${address} (${ip.toString()})`;
  const range = ip.kind() === "ipv6" && isIPv4Compatible(ip as ipaddr.IPv6) ? "ipv4Compatible" : ip.range();
  if (METADATA.has(ip.toString()) || NEVER.has(range)) {
    const what = METADATA.has(ip.toString()) ? "a cloud metadata address" : DESCRIPTIONS[range];
    return {
      allowed: false,
      reason: `${shown} is ${what} and is never a webhook target unless listed in webhooks.allowed_hosts`,
    };
  }
  if (range === "unicast" || allowPrivate) return { allowed: true };
  const name = normaliseHost(host) || address;
  const what = DESCRIPTIONS[range] ?? `a special-purpose address (${range})`;
  return {
    allowed: false,
    reason: `${shown} is ${what}; webhooks.allow_private is false and ${name} is not in webhooks.allowed_hosts`,
  };
}

function hostAllowed(host: string, allowed: AllowedHosts): boolean {
  return allowed.names.has(host) || allowed.wildcards.some((suffix) => host.endsWith(`.${suffix}`));
}

function inRanges(ip: IP, allowed: AllowedHosts): boolean {
  return allowed.ranges.some(([net, bits]) => net.kind() === ip.kind() && ip.match(net, bits));
}
