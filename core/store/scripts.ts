import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import type { ChainableCommander, Redis } from "ioredis";
import { isKeyFamily, type KeyFamily, type Keys } from "./keys.js";

// Each transition is one Lua file, and so is the lists' read (list.lua, which writes nothing);
// lib.lua and lib_ending.lua hold what they share and are prepended to each, in that order.
export const SCRIPT_NAMES = [
  "submit",
  "claim",
  "pool",
  "pool_claim",
  "start",
  "progress",
  "partial",
  "complete",
  "fail",
  "cancel",
  "requeue",
  "renew",
  "waiting",
  "reap",
  "prune",
  "webhook",
  "idempotency",
  "list",
  "preview",
  "template",
] as const;
export type ScriptName = (typeof SCRIPT_NAMES)[number];

/** The shared functions, in the order they are prepended (a part uses those before it). */
export const LIB_PARTS = ["lib", "lib_ending"] as const;

interface Script {
  /** The key families the script takes, in KEYS order (its header's `KEYS` line). */
  keys: KeyFamily[];
  lua: string;
}

const dir = new URL("./lua/", import.meta.url);
let scripts: Map<ScriptName, Script> | undefined;

function loadScripts(): Map<ScriptName, Script> {
  if (!scripts) {
    const lib = LIB_PARTS.map((part) => readFileSync(new URL(`${part}.lua`, dir), "utf8")).join("\n");
    scripts = new Map(
      SCRIPT_NAMES.map((name) => {
        const source = readFileSync(new URL(`${name}.lua`, dir), "utf8");
        const keys = declaredKeys(name, source);
        return [name, { keys, lua: `${binding(name, keys)}\n${lib}\n${source}` }];
      }),
    );
  }
  return scripts;
}

/**
 * The families a script declares in its opening `--[[ ... ]]` header: the words of its `KEYS` line
 * and of the lines that continue it (up to a blank line or the next section), in KEYS order. Each
 * family is described once, in keys.ts. The header is what the store passes: a family that does not
 * exist, or one named twice, stops the store from loading.
 */
export function declaredKeys(name: string, source: string): KeyFamily[] {
  const header = /^--\[\[([\s\S]*?)\]\]/.exec(source)?.[1];
  if (header === undefined) throw new Error(`lua/${name}.lua does not open with a --[[ ]] header`);
  const block =
    /^\s*KEYS\s+([^\n]*(?:\n[ \t]+(?!ARGV|Output|Emits|Errors)[^\s][^\n]*)*)/m.exec(header)?.[1] ?? "";
  const keys: KeyFamily[] = [];
  for (const family of block.split(/\s+/).filter(Boolean)) {
    if (!isKeyFamily(family)) throw new Error(`lua/${name}.lua: KEYS ${family} is no key family`);
    if (keys.includes(family)) throw new Error(`lua/${name}.lua: KEYS ${family} is named twice`);
    keys.push(family);
  }
  return keys;
}

/**
 * `K`, the script's KEYS by family name, put in front of lib.lua: the shared functions and the
 * script use K.job, K.pending, ...; reading a family the script did not declare is an error.
 */
function binding(name: string, keys: KeyFamily[]): string {
  const fields = keys.map((family, i) => `${family} = KEYS[${i + 1}]`).join(", ");
  return (
    `local K = setmetatable({ ${fields} }, { __index = function(_, family) ` +
    `error('${name}.lua declares no KEYS ' .. tostring(family)) end })`
  );
}

/**
 * The SHA1 a script runs by (EVALSHA): what names it in redis-cli MONITOR, SLOWLOG and SCRIPT
 * EXISTS.
 */
export function scriptSha(name: ScriptName): string {
  return createHash("sha1").update(loadScripts().get(name)!.lua).digest("hex");
}

/** Registers every script as a command on the connection (EVALSHA, falling back to EVAL). */
export function defineScripts(redis: Redis): void {
  for (const [name, { keys, lua }] of loadScripts()) {
    redis.defineCommand(`media_${name}`, { numberOfKeys: keys.length, lua });
  }
}

/** An argument of a script (ARGV). */
export type ScriptArg = string | number | Buffer;

/**
 * Runs scripts with the KEYS each declares, built from the store's Keys; `args` are its ARGV. The one
 * place a script is called by its command (`media_<name>`), on the connection or in a pipeline.
 */
export interface ScriptRunner {
  (name: ScriptName, ...args: ScriptArg[]): Promise<unknown>;
  /** Queues the call in a pipeline (or MULTI) beside other commands: its exec() answers it. */
  queue(pipeline: ChainableCommander, name: ScriptName, ...args: ScriptArg[]): void;
}

export function scriptRunner(redis: Redis, keys: Keys): ScriptRunner {
  const keysOf = new Map(
    [...loadScripts()].map(([name, script]) => [name, script.keys.map((family) => keys.families[family])]),
  );
  const call = (on: Redis | ChainableCommander, name: ScriptName, args: ScriptArg[]): unknown =>
    (on as unknown as Record<string, (...a: unknown[]) => unknown>)[`media_${name}`]!(
      ...keysOf.get(name)!,
      ...args,
    );
  return Object.assign(
    (name: ScriptName, ...args: ScriptArg[]) => call(redis, name, args) as Promise<unknown>,
    {
      queue(pipeline: ChainableCommander, name: ScriptName, ...args: ScriptArg[]) {
        call(pipeline, name, args);
      },
    },
  );
}
