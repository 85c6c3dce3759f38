// Kubernetes resource quantities ("500m", "2", "512Mi", "1.5Gi", "129e6") as numbers, with the
// grammar of k8s.io/apimachinery resource.Quantity, so that limits can be compared at submit and at
// configuration load without loading @kubernetes/client-node (which needs Node 24).
//
//   <quantity> ::= <sign>? <number> <suffix>
//   <number>   ::= <digits> | <digits> "." <digits>? | "." <digits>
//   <suffix>   ::= "" | n | u | m | k | M | G | T | P | E      (decimal SI)
//                | Ki | Mi | Gi | Ti | Pi | Ei                 (binary SI)
//                | ("e" | "E") <sign>? <digits>                (decimal exponent)
//
// One departure: a quantity must have a digit ("." and "+" alone are 0 to Kubernetes).

/** A string that is not a Kubernetes quantity. */
export class QuantityError extends Error {
  override name = "QuantityError";
}

const DECIMAL_EXPONENTS: Record<string, number> = {
  n: -9,
  u: -6,
  m: -3,
  "": 0,
  k: 3,
  M: 6,
  G: 9,
  T: 12,
  P: 15,
  E: 18,
};
const BINARY_EXPONENTS: Record<string, number> = { Ki: 10, Mi: 20, Gi: 30, Ti: 40, Pi: 50, Ei: 60 };

const QUANTITY = /^([+-]?)(\d*)(?:\.(\d*))?(.*)$/;
const EXPONENT = /^[eE]([+-]?\d+)$/;

/**
 * The value of a Kubernetes quantity in base units: cores for CPU ("100m" → 0.1), bytes for memory
 * ("1.5Gi" → 1610612736). Decimal forms are rounded once, as Number() rounds a decimal string; a
 * binary suffix multiplies by an exact power of two. Throws QuantityError on anything else.
 */
export function parseQuantity(text: string): number {
  const match = QUANTITY.exec(text);
  const [, sign = "", whole = "", fraction = "", suffix = ""] = match ?? [];
  if (!match || whole.length + fraction.length === 0) {
    throw new QuantityError(`${JSON.stringify(text)} is not a Kubernetes quantity (e.g. 500m, 2, 512Mi, 1G)`);
  }
  let decimal = DECIMAL_EXPONENTS[suffix];
  const binary = BINARY_EXPONENTS[suffix] ?? 0;
  if (decimal === undefined && binary === 0) {
    const exponent = EXPONENT.exec(suffix);
    if (!exponent) {
      throw new QuantityError(
        `${JSON.stringify(text)} is not a Kubernetes quantity: unknown suffix ${JSON.stringify(suffix)} (use n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei or an exponent such as e6)`,
      );
    }
    decimal = Number(exponent[1]);
  }
  const value = Number(`${sign}${whole || "0"}.${fraction || "0"}e${decimal ?? 0}`) * 2 ** binary;
  if (!Number.isFinite(value)) {
    throw new QuantityError(`${JSON.stringify(text)} is too large a quantity`);
  }
  return value;
}
