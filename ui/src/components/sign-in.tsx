import { useState } from 'preact/hooks';

export function SignIn({ onSubmit, error }: { onSubmit: (token: string) => Promise<void>; error?: string }) {
  const [token, setToken] = useState('');
  const [busy, setBusy] = useState(false);
  return (
    <main class="sign-in">
      <h1>Berth logs</h1>
      <form
        onSubmit={async (e) => {
          e.preventDefault();
          if (token.trim() === '') return;
          setBusy(true);
          await onSubmit(token.trim());
          setBusy(false);
        }}
      >
        <label for="token">API token</label>
        <input
          id="token"
          name="token"
          type="password"
          autocomplete="off"
          spellcheck={false}
          placeholder="berth_…"
          value={token}
          onInput={(e) => setToken(e.currentTarget.value)}
        />
        <button type="submit" disabled={busy}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
        {error && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
        <p class="hint">
          Paste an API key, or the demo token that <code>npm start</code> prints. It is kept for this tab only.
        </p>
      </form>
    </main>
  );
}
