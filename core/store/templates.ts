import type { Template, TemplateBody } from "../jobs/templates.js";
import { replies, StoreBase } from "./base.js";
import { idempotencyClient } from "./keys.js";

/** What storing a template did: its new version, and whether the name stood for no template before. */
export interface TemplateStored {
  version: number;
  created: boolean;
}

/** How many templates a client may have, and how many versions of each are kept. */
export interface TemplateLimits {
  perClient: number;
  versions: number;
}

/**
 * Clients' templates (lua/template.lua writes them): each client's own, by name, its newest versions
 * kept until the template is deleted. `owner` is the client's name, undefined without authentication.
 */
export abstract class Templates extends StoreBase {
  /**
   * Stores `body` as the template's next version, dropping the oldest beyond `limits.versions`; or,
   * for a name the client does not have when it has `limits.perClient` templates already, stores
   * nothing and answers how many it has.
   */
  async putTemplate(
    owner: string | undefined,
    name: string,
    body: TemplateBody,
    limits: TemplateLimits,
  ): Promise<TemplateStored | { refused: number }> {
    const [version, created] = (await this.script(
      "template",
      "put",
      idempotencyClient(owner),
      name,
      JSON.stringify(body),
      String(limits.perClient),
      String(limits.versions),
    )) as [number, number];
    if (Number(version) === 0) return { refused: Number(created) };
    return { version: Number(version), created: Number(created) === 1 };
  }

  /** Deletes the template and its versions: the version it stood for, or undefined when there was none. */
  async deleteTemplate(owner: string | undefined, name: string): Promise<number | undefined> {
    const version = Number(await this.script("template", "delete", idempotencyClient(owner), name));
    return version > 0 ? version : undefined;
  }

  /** A client's template: its current version, or `version`; undefined when there is none. */
  async storedTemplate(
    owner: string | undefined,
    name: string,
    version?: number,
  ): Promise<Template | undefined> {
    const key = this.keys.template(owner, name);
    const current = await this.redis.hget(key, "current");
    if (current === null) return undefined;
    const wanted = version ?? Number(current);
    if (wanted > Number(current)) return undefined;
    const [body, at] = await this.redis.hmget(key, String(wanted), `${wanted}:at`);
    return body ? decodeTemplate(name, wanted, body, at ?? null) : undefined;
  }

  /** A client's templates at their current versions, in name order. */
  async storedTemplates(owner: string | undefined): Promise<Template[]> {
    const names = await this.redis.zrange(this.keys.templates(owner), 0, -1);
    if (names.length === 0) return [];
    const read = this.redis.multi();
    for (const name of names) read.hget(this.keys.template(owner, name), "current");
    const versions = (await replies(read, "templates")) as Array<string | null>;
    const bodies = this.redis.multi();
    names.forEach((name, i) => {
      const v = versions[i] ?? "0";
      bodies.hmget(this.keys.template(owner, name), v, `${v}:at`);
    });
    const rows = (await replies(bodies, "templates")) as Array<[string | null, string | null]>;
    return names.flatMap((name, i) => {
      const [body, at] = rows[i]!;
      return body ? [decodeTemplate(name, Number(versions[i]), body, at)] : [];
    });
  }
}

function decodeTemplate(name: string, version: number, body: string, at: string | null): Template {
  return {
    name,
    version,
    source: "api",
    ...(JSON.parse(body) as TemplateBody),
    ...(at ? { created_at: at } : {}),
  };
}
