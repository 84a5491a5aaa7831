import { useEffect, useState } from 'preact/hooks';
import { Api, type SignInMethod } from '../api.js';

interface Props {
  onToken: (token: string) => Promise<void>;
  onPassword: (email: string, password: string) => Promise<void>;
  error?: string;
}

/** Where a sign-in at an issuer lands afterwards: the page the person asked for (the sign-in page itself: logs). */
function returnTo(): string {
  const here = `${location.pathname}${location.search}`;
  return location.pathname.startsWith('/ui/sign-in') ? '/ui/logs' : here;
}

/**
 * The ways this deployment offers to sign in: a button per identity provider, an email and password form when
 * EMAIL_PASSWORD is offered, and an API token to paste as an advanced option. With `?organizationId=` in the URL
 * (where a refusal points), only the ways that organization permits.
 */
export function SignIn({ onToken, onPassword, error }: Props) {
  const [methods, setMethods] = useState<SignInMethod[]>();
  const [busy, setBusy] = useState(false);
  const [token, setToken] = useState('');
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const organizationId = new URLSearchParams(location.search).get('organizationId') ?? undefined;

  useEffect(() => {
    const controller = new AbortController();
    new Api(null).methods(organizationId, controller.signal).then(setMethods, () => setMethods([]));
    return () => controller.abort();
  }, [organizationId]);

  const external = (methods ?? []).filter((m) => m.kind === 'oidc');
  const passwordOffered = (methods ?? []).some((m) => m.kind === 'password');
  const submit = (work: () => Promise<void>) => async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    await work();
    setBusy(false);
  };

  return (
    <main class="sign-in">
      <h1>Berth logs</h1>
      {organizationId !== undefined && <p class="hint">The ways organization {organizationId} permits to sign in:</p>}
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {external.length > 0 && (
        <ul class="providers" aria-label="Sign in with">
          {external.map((m) => (
            <li key={m.provider}>
              <a class="button" href={`${m.signInUrl}?returnTo=${encodeURIComponent(returnTo())}`}>
                Sign in with {m.displayName}
              </a>
            </li>
          ))}
        </ul>
      )}
      {passwordOffered && (
        <form aria-label="Sign in with email and password" onSubmit={submit(() => onPassword(email.trim(), password))}>
          <label for="email">Email</label>
          <input
            id="email"
            name="email"
            type="email"
            autocomplete="username"
            value={email}
            onInput={(e) => setEmail(e.currentTarget.value)}
          />
          <label for="password">Password</label>
          <input
            id="password"
            name="password"
            type="password"
            autocomplete="current-password"
            value={password}
            onInput={(e) => setPassword(e.currentTarget.value)}
          />
          <button type="submit" disabled={busy || email.trim() === '' || password === ''}>
            {busy ? 'Signing in…' : 'Sign in'}
          </button>
        </form>
      )}
      {methods !== undefined && external.length === 0 && !passwordOffered && (
        <p class="hint">No way to sign in is offered here{organizationId ? ' for this organization' : ''}.</p>
      )}
      {/* Rendered once the ways are known, open when there is no other: later renders leave its state alone. */}
      {methods !== undefined && (
        <details class="advanced" open={methods.length === 0}>
          <summary>Use an API token instead</summary>
          <form
            onSubmit={submit(async () => {
              if (token.trim() !== '') await onToken(token.trim());
            })}
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
              Use token
            </button>
            <p class="hint">A pasted token is kept for this tab only.</p>
          </form>
        </details>
      )}
    </main>
  );
}
