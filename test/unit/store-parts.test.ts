// The store's parts without Redis: JobStore holds the methods of every part (store.ts), and a name two
// parts define stops the store from loading rather than one part's method hiding the other's.
import assert from "node:assert/strict";
import { test } from "node:test";
import { composeStore, StoreBase } from "../../core/store/base.js";
import { Idempotency } from "../../core/store/idempotency.js";
import { Lists } from "../../core/store/lists.js";
import { Pool } from "../../core/store/pool.js";
import { Previews } from "../../core/store/previews.js";
import { Queues } from "../../core/store/queues.js";
import { Stats } from "../../core/store/stats.js";
import { JobStore } from "../../core/store/store.js";
import { Transitions } from "../../core/store/transitions.js";
import { Webhooks } from "../../core/store/webhooks.js";

const methods = (part: { prototype: object }) =>
  Object.getOwnPropertyNames(part.prototype).filter((name) => name !== "constructor");

test("JobStore holds the methods of every part, each once", () => {
  const seen = new Map<string, string>();
  for (const part of [Transitions, Queues, Pool, Lists, Stats, Idempotency, Webhooks, Previews]) {
    assert.ok(methods(part).length > 0, `${part.name} has methods`);
    for (const name of methods(part)) {
      assert.equal(seen.get(name), undefined, `${name} of ${part.name} is ${seen.get(name)}'s too`);
      seen.set(name, part.name);
      const own = (JobStore.prototype as unknown as Record<string, unknown>)[name];
      assert.equal(
        own,
        (part.prototype as unknown as Record<string, unknown>)[name],
        `JobStore.${name} is ${part.name}'s`,
      );
    }
  }
  assert.ok(seen.has("submit") && seen.has("claim") && seen.has("listJobs") && seen.has("history"));
});

test("a name two parts define, or a part and the base, stops the store from loading", () => {
  abstract class One extends StoreBase {
    twice(): number {
      return 1;
    }
  }
  abstract class Other extends StoreBase {
    twice(): number {
      return 2;
    }
  }
  abstract class Pinger extends StoreBase {
    override async ping(): Promise<number> {
      return 0;
    }
  }
  class First extends StoreBase {}
  assert.throws(() => composeStore(First, [One, Other]), /Other\.twice is defined by another part too/);
  class Second extends StoreBase {}
  assert.throws(() => composeStore(Second, [Pinger]), /Pinger\.ping is defined by another part too/);
});
