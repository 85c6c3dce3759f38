// The configuration's templates (`templates:`): read-only templates every client sees, checked when
// the configuration loads as PUT /api/v1/templates/{name} checks a client's.
import { schemaBounds } from "../jobs/bounds.js";
import { isTemplateName, validateTemplateBody, type Template } from "../jobs/templates.js";
import { ConfigError } from "./errors.js";
import type { ConfigFile } from "./schema.js";

type Bounded = Parameters<typeof schemaBounds>[0];

/**
 * The templates of the configuration in name order, each validated by its type's schema with the
 * configuration's bounds and its type's rules; a bad one is a ConfigError naming it and its field.
 */
export function configTemplates(declared: ConfigFile["templates"], config: Bounded): Template[] {
  const bounds = schemaBounds(config);
  return Object.keys(declared)
    .sort()
    .map((name) => {
      if (!isTemplateName(name)) {
        throw new ConfigError(
          `invalid configuration: templates: ${JSON.stringify(name)} is not a template name (lower-case letters, digits, . _ -; up to 64, starting with a letter or digit)`,
        );
      }
      const { version, ...raw } = declared[name]!;
      const checked = validateTemplateBody(raw, bounds);
      if ("problem" in checked) {
        throw new ConfigError(`invalid configuration: templates.${name}: ${checked.problem}`);
      }
      return { name, version, source: "config", ...checked.body };
    });
}
