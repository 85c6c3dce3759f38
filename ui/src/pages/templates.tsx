import { useEffect, useState } from "preact/hooks";
import { api } from "../api.js";
import { Loading, Notice } from "../components.js";
import { formatDateTime, typeLabel } from "../format.js";
import type { Template } from "../types.js";

/** The templates the key can use: the configuration's and its own, with their current version. */
export function TemplatesPage() {
  const [templates, setTemplates] = useState<Template[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    api<{ templates: Template[] }>("/templates")
      .then((list) => setTemplates(list.templates))
      .catch((err: Error) => setError(err.message));
  }, []);

  return (
    <main id="main" tabIndex={-1}>
      <div class="page-head">
        <h1>Templates</h1>
      </div>
      <p class="subtle">
        Named recipes of jobs: submit one with <code>template</code> (and what varies) on its type's route.
        Yours are stored with <code>PUT /api/v1/templates/&lt;name&gt;</code> or{" "}
        <code>media-service templates put</code>; the configuration's are read-only.
      </p>
      {error && <Notice kind="error">{error}</Notice>}
      {!error && templates === null && <Loading what="templates" />}
      {templates && templates.length === 0 && <p>No templates yet.</p>}
      {templates && templates.length > 0 && (
        <div class="table-scroll">
          <table class="jobs" data-testid="templates-table">
            <caption class="visually-hidden">Templates, by name</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Type</th>
                <th scope="col">Version</th>
                <th scope="col">Source</th>
                <th scope="col">Overridable</th>
                <th scope="col">Stored</th>
              </tr>
            </thead>
            <tbody>
              {templates.map((t) => (
                <tr key={t.name}>
                  <th scope="row" class="mono" title={t.description}>
                    {t.name}
                  </th>
                  <td>{typeLabel(t.type)}</td>
                  <td>{t.version}</td>
                  <td>{t.source === "config" ? "configuration" : "API"}</td>
                  <td class="mono">{(t.overridable ?? []).join(", ") || "—"}</td>
                  <td>{t.created_at ? formatDateTime(t.created_at) : "—"}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </main>
  );
}
