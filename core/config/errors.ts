/** A configuration that cannot be used: the message names the setting, what is wrong and where. */
export class ConfigError extends Error {
  override name = "ConfigError";
}
