// The store's scripts read as text, without Redis: the events each one records on the events stream
// and the KEYS it reads, its own and those of the lib.lua functions it calls (and that they call),
// are what its header says (`Emits:`, `KEYS`). A script that starts recording an event, or reading
// a key family, through a lib.lua function it calls fails here until its header says so.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { STORE_EVENT_NAMES } from "../../core/store/events.js";
import { declaredKeys, LIB_PARTS, SCRIPT_NAMES } from "../../core/store/scripts.js";

const source = (name: string) =>
  readFileSync(new URL(`../../core/store/lua/${name}.lua`, import.meta.url), "utf8");

/** Lua code without its comments (no string in lua/ holds "--"). */
const code = (lua: string) => lua.replace(/--\[\[[\s\S]*?\]\]/g, "").replace(/--[^\n]*/g, "");

const header = (lua: string) => /^--\[\[([\s\S]*?)\]\]/.exec(lua)?.[1] ?? "";

/** What code does itself: the events its record() calls name, the families of K it reads, the lib.lua functions it calls. */
interface Reach {
  events: Set<string>;
  keys: Set<string>;
  calls: Set<string>;
}

function direct(body: string, lib: ReadonlySet<string>): Reach {
  const events = new Set<string>();
  for (const [call, event] of body.matchAll(/(?<![\w.:])record\(([^,]*),/g)) {
    const names = [...event!.matchAll(/'([^']*)'/g)].map((m) => m[1]!);
    assert.ok(names.length > 0, `${call} names its event as a literal, which a header can be held to`);
    for (const name of names) events.add(name);
  }
  const keys = new Set([...body.matchAll(/\bK\.(\w+)/g)].map((m) => m[1]!));
  const calls = new Set(
    [...body.matchAll(/(?<![\w.:])(\w+)\(/g)].map((m) => m[1]!).filter((f) => lib.has(f)),
  );
  return { events, keys, calls };
}

/** lib.lua's functions by name, each with the code of its body: from its definition to the `end` that opens a line. */
function libBodies(): Map<string, string> {
  const bodies = new Map<string, string>();
  const defined = /^(?:local function (\w+)|(\w+) = function)\([^\n]*\n([\s\S]*?)^end\b/gm;
  const lib = LIB_PARTS.map((part) => code(source(part))).join("\n");
  for (const m of lib.matchAll(defined)) bodies.set(m[1] ?? m[2]!, m[3]!);
  return bodies;
}

const bodies = libBodies();
const LIB = new Map([...bodies].map(([name, body]) => [name, direct(body, new Set(bodies.keys()))]));

/** What code does with every lib.lua function it calls, and those they call, followed to the end. */
function transitively(own: Reach): Reach {
  const all: Reach = { events: new Set(own.events), keys: new Set(own.keys), calls: new Set() };
  const todo = [...own.calls];
  for (let name = todo.pop(); name !== undefined; name = todo.pop()) {
    if (all.calls.has(name)) continue;
    all.calls.add(name);
    const f = LIB.get(name)!;
    for (const event of f.events) all.events.add(event);
    for (const key of f.keys) all.keys.add(key);
    todo.push(...f.calls);
  }
  return all;
}

const ofScript = (name: string) => transitively(direct(code(source(name)), new Set(LIB.keys())));

/** The text of a header's `Emits:` section, up to a blank line; undefined when it has none. */
const emitsSection = (text: string) => /^[ \t]*Emits:([^\n]*(?:\n[ \t]*\S[^\n]*)*)/m.exec(text)?.[1];

/** The event names a text mentions, each once, sorted. */
const eventsIn = (text: string) => [...new Set(text.match(/\b(?:job|batch)\.[a-z_]+/g) ?? [])].sort();

test("every script's header names the events it records, through lib.lua's functions too", () => {
  for (const name of SCRIPT_NAMES) {
    const section = emitsSection(header(source(name)));
    assert.ok(
      section !== undefined,
      `${name}.lua's header has an Emits: section ("Emits: nothing" when none)`,
    );
    const declared = eventsIn(section);
    for (const event of declared) {
      assert.ok(
        (STORE_EVENT_NAMES as readonly string[]).includes(event),
        `${name}.lua: ${event} is no event`,
      );
    }
    const reach = ofScript(name);
    assert.deepEqual(
      declared,
      [...reach.events].sort(),
      `${name}.lua records ${[...reach.events].sort().join(", ") || "nothing"} (calling lib.lua's ` +
        `${[...reach.calls].sort().join(", ") || "nothing"}); its header names ${declared.join(", ") || "nothing"}`,
    );
  }
});

test("lib.lua's header names the events of each of its functions that records any, its callees' included", () => {
  const section = emitsSection(header(source("lib")));
  assert.ok(section !== undefined, "lib.lua's header has an Emits: section");
  // Rows "<function>  <events>", as the KEYS table: a row's continuation lines are indented further.
  const rows = new Map<string, string>();
  let last: string | undefined;
  for (const line of section.split("\n")) {
    const row = /^ {8}(\w+)\s+(.*)$/.exec(line);
    if (row) rows.set((last = row[1]!), row[2]!);
    else if (last !== undefined && /^ {9,}\S/.test(line)) rows.set(last, `${rows.get(last)} ${line.trim()}`);
  }
  const emitting = [...LIB].filter(([, own]) => transitively(own).events.size > 0).map(([name]) => name);
  assert.deepEqual([...rows.keys()].sort(), emitting.sort(), "a row for each function that records events");
  for (const [name, text] of rows) {
    assert.deepEqual(eventsIn(text), [...transitively(LIB.get(name)!).events].sort(), `lib.lua ${name}`);
  }
});

test("every script declares exactly the KEYS it reads, through lib.lua's functions too", () => {
  for (const name of SCRIPT_NAMES) {
    const lua = source(name);
    const reach = ofScript(name);
    assert.deepEqual(
      [...declaredKeys(name, lua)].sort(),
      [...reach.keys].sort(),
      `${name}.lua reads these families (calling lib.lua's ${[...reach.calls].sort().join(", ") || "nothing"})`,
    );
  }
});

test("the reading follows lib.lua's functions as Lua calls them", () => {
  // The functions a script may call are all found, the late-bound one (cancel_job) too.
  for (const name of ["record", "finalize_batch", "fail_job", "cancel_job", "requeue_job", "search_index"]) {
    assert.ok(LIB.has(name), `lib.lua ${name} is read`);
  }
  assert.deepEqual([...LIB.get("finalize_batch")!.events], ["batch.completed"]);
  const reach = transitively(
    direct("local outcome = requeue_job(id, 'why', 3, false)\n", new Set(LIB.keys())),
  );
  assert.deepEqual([...reach.events].sort(), [
    "batch.completed",
    "job.cancelled",
    "job.failed",
    "job.requeued",
  ]);
  assert.throws(() => direct("record(event, { job_id = id })\n", new Set()), /names its event as a literal/);
});
