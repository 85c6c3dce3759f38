// The template commands: templates list, get, put, delete (docs/cli.md). Each returns its exit code.
import { readFile } from "node:fs/promises";
import { parse as parseYaml } from "yaml";
import type { Template } from "../core/jobs/templates.js";
import type { ApiClient } from "./api.js";
import { EXIT, UsageError } from "./errors.js";
import { table, type Output } from "./output.js";

const templatePath = (name: string) => `/templates/${encodeURIComponent(name)}`;

export async function list(api: ApiClient, out: Output): Promise<number> {
  const { templates } = await api.json<{ templates: Template[] }>("GET", "/templates");
  if (out.json) out.printJson({ templates });
  else if (templates.length === 0) out.note("no templates");
  else {
    out.print(
      table(
        out.out,
        ["NAME", "TYPE", "VERSION", "SOURCE", "DESCRIPTION"],
        templates.map((t) => [t.name, t.type, t.version, t.source, t.description ?? ""]),
      ),
    );
  }
  return EXIT.ok;
}

export async function get(api: ApiClient, out: Output, name: string, version?: number): Promise<number> {
  const template = await api.json<Template>("GET", templatePath(name), {
    ...(version !== undefined ? { query: { version: String(version) } } : {}),
  });
  // The template is data to reuse (put reads it back): JSON either way, indented for a person.
  out.print(out.json ? JSON.stringify(template) : JSON.stringify(template, null, 2));
  return EXIT.ok;
}

/** PUT a template from a JSON or YAML file (- for stdin): what `templates get` prints is accepted back. */
export async function put(api: ApiClient, out: Output, name: string, file: string): Promise<number> {
  let text: string;
  try {
    text = file === "-" ? await readStdin() : await readFile(file, "utf8");
  } catch (err) {
    throw new UsageError(`cannot read ${file}: ${(err as Error).message}`);
  }
  let body: unknown;
  try {
    body = parseYaml(text);
  } catch (err) {
    throw new UsageError(`${file} is neither JSON nor YAML: ${(err as Error).message}`);
  }
  if (body === null || typeof body !== "object" || Array.isArray(body)) {
    throw new UsageError(`${file} must hold one template: an object with type and parameters`);
  }
  // What GET answers besides the template itself is not part of a PUT.
  const {
    name: _name,
    version: _version,
    source: _source,
    created_at: _at,
    ...template
  } = body as Record<string, unknown>;
  const stored = await api.json<Template>("PUT", templatePath(name), { body: template });
  if (out.json) out.printJson(stored);
  else out.print(`template ${stored.name} version ${stored.version}`);
  return EXIT.ok;
}

export async function remove(api: ApiClient, out: Output, name: string): Promise<number> {
  const deleted = await api.json<{ name: string; version: number }>("DELETE", templatePath(name));
  if (out.json) out.printJson(deleted);
  else out.print(`template ${deleted.name} deleted (it was at version ${deleted.version})`);
  return EXIT.ok;
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}
