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

  const shown = ip === parsed ? address : `${address} (${ip.toString()})`;
  const range = ip.range();
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
