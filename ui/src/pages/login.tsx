import { useEffect, useRef, useState } from "preact/hooks";
import { signIn } from "../api.js";
import { Notice } from "../components.js";

/** The login view: the API key, typed once, kept in sessionStorage until the browser session ends. */
export function LoginPage(props: { notice?: string | undefined }) {
  const [key, setKey] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const input = useRef<HTMLInputElement>(null);
  useEffect(() => input.current?.focus(), []);

  const submit = async (event: Event) => {
    event.preventDefault();
    const value = key.trim();
    if (!value) {
      setError("Enter an API key.");
      input.current?.focus();
      return;
    }
    setBusy(true);
    setError(await signIn(value));
    setBusy(false);
    input.current?.focus();
  };

  return (
    <main id="main" tabIndex={-1} class="login">
      <h1>Sign in to media-service</h1>
      {props.notice && <Notice>{props.notice}</Notice>}
      <form onSubmit={(e) => void submit(e)} noValidate>
        <label for="api-key">API key</label>
        <input
          ref={input}
          id="api-key"
          name="api-key"
          type="password"
          autocomplete="current-password"
          spellcheck={false}
          value={key}
          onInput={(e) => setKey(e.currentTarget.value)}
          aria-describedby="api-key-help"
          aria-invalid={error ? true : undefined}
          aria-errormessage={error ? "api-key-error" : undefined}
        />
        <p id="api-key-help" class="help">
          The key is sent as <code>X-API-Key</code> with each request and kept in this browser tab until it is
          closed.
        </p>
        {error && (
          <p id="api-key-error" class="field-error" role="alert">
            {error}
          </p>
        )}
        <button type="submit" class="primary" disabled={busy}>
          {busy ? "Checking…" : "Sign in"}
        </button>
      </form>
    </main>
  );
}
