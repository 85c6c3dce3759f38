import { Value } from "../typebox.js";
import { KubernetesConfig, LimitsConfig } from "../config/schema.js";

// What the job schemas take from the configuration. The API builds its route schemas from these
// when it starts, so that validation (ajv) and the OpenAPI document say the same limits.

export interface SchemaBounds {
  /** Largest width or height a job may ask for (limits.max_output_dimension). */
  maxOutputDimension: number;
  /** Largest per-job timeout_seconds (limits.max_timeout_seconds). */
  maxTimeoutSeconds: number;
  /** Largest per-job `resources` (kubernetes.max_resources), as Kubernetes quantities. */
  maxResources: { cpu: string; memory: string };
  /** The configured AI providers by name (analyze's `provider` must name one). */
  aiProviders: readonly string[];
}

const limitDefaults = Value.Default(LimitsConfig, {}) as {
  max_output_dimension: number;
  max_timeout_seconds: number;
};
const kubernetesDefaults = Value.Default(KubernetesConfig, {}) as {
  max_resources: { cpu: string; memory: string };
};

/** The bounds of a configuration with every default: what the static schemas (and types) use. */
export const DEFAULT_BOUNDS: SchemaBounds = {
  maxOutputDimension: limitDefaults.max_output_dimension,
  maxTimeoutSeconds: limitDefaults.max_timeout_seconds,
  maxResources: { ...kubernetesDefaults.max_resources },
  aiProviders: [],
};

interface BoundedConfig {
  limits: { maxOutputDimension: number; maxTimeoutSeconds: number };
  kubernetes: { maxResources: { cpu: string; memory: string } };
  ai: { providers: Record<string, unknown> };
}

const boundsOfConfig = new WeakMap<BoundedConfig, SchemaBounds>();

/** The bounds of a loaded configuration (one object per configuration, so schemas built from it are shared). */
export function schemaBounds(config: BoundedConfig): SchemaBounds {
  let bounds = boundsOfConfig.get(config);
  if (!bounds) {
    bounds = {
      maxOutputDimension: config.limits.maxOutputDimension,
      maxTimeoutSeconds: config.limits.maxTimeoutSeconds,
      maxResources: { ...config.kubernetes.maxResources },
      aiProviders: Object.keys(config.ai.providers).sort(),
    };
    boundsOfConfig.set(config, bounds);
  }
  return bounds;
}

/**
 * `build` made once per bounds: every submit route and every batch entry type asks for the same
 * schemas when the API starts.
 */
export function perBounds<T extends object>(build: (bounds: SchemaBounds) => T): (bounds: SchemaBounds) => T {
  const built = new WeakMap<SchemaBounds, T>();
  return (bounds) => {
    let value = built.get(bounds);
    if (!value) {
      value = build(bounds);
      built.set(bounds, value);
    }
    return value;
  };
}

export {
  ERROR_MESSAGE,
  decimalAtMost,
  integerRange,
  quantityPattern,
  type ErrorMessage,
} from "./patterns.js";
