import { readFileSync } from "node:fs";
import type { Redis } from "ioredis";

// Each transition is one Lua file; lib.lua holds what they share and is prepended to each.
export const SCRIPT_NAMES = [
  "submit",
  "claim",
  "start",
  "progress",
  "complete",
  "fail",
  "requeue",
  "renew",
  "reap",
  "prune",
  "webhook",
] as const;
export type ScriptName = (typeof SCRIPT_NAMES)[number];

const dir = new URL("./lua/", import.meta.url);
let sources: Map<ScriptName, string> | undefined;

function loadSources(): Map<ScriptName, string> {
  if (!sources) {
    const lib = readFileSync(new URL("lib.lua", dir), "utf8");
    sources = new Map(
      SCRIPT_NAMES.map((name) => [name, `${lib}\n${readFileSync(new URL(`${name}.lua`, dir), "utf8")}`]),
    );
  }
  return sources;
}

/** Registers every script as a command on the connection (EVALSHA, falling back to EVAL). */
export function defineScripts(redis: Redis): void {
  for (const [name, lua] of loadSources()) {
    redis.defineCommand(`media_${name}`, { numberOfKeys: 1, lua });
  }
}

export type ScriptRunner = (
  name: ScriptName,
  key: string,
  ...args: Array<string | number>
) => Promise<unknown>;

export function scriptRunner(redis: Redis): ScriptRunner {
  return (name, key, ...args) =>
    (redis as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>)[`media_${name}`]!(
      key,
      ...args,
    );
}
