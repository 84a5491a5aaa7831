import { useEffect, useState } from 'preact/hooks';
import { Api, ApiError, type Caller } from './api.js';
import { Explorer } from './components/explorer.js';
import { SignIn } from './components/sign-in.js';

/** A pasted token lives for the browser tab only, never in a URL or in localStorage. */
const TOKEN_KEY = 'berth.token';

type Session = { state: 'signed-out' } | { state: 'checking' } | { state: 'signed-in'; api: Api; caller: Caller };

/** Why a sign-in at an issuer came back refused (`/ui/sign-in?error=…`), in words. */
const FAILURES: Record<string, string> = {
  'unknown-identity':
    'That account is not linked to anyone here. Ask an administrator of your organization to link it.',
  failed: 'The sign-in did not complete. Try again.',
};

export function App() {
  const [session, setSession] = useState<Session>({ state: 'checking' });
  const [error, setError] = useState<string | undefined>(() => {
    const reason = new URLSearchParams(location.search).get('error');
    return reason === null ? undefined : (FAILURES[reason] ?? FAILURES.failed);
  });

  /** Signed in when the API knows the caller: by the pasted token, else by the session cookie. */
  const enter = async (api: Api, quiet = false): Promise<boolean> => {
    try {
      const caller = await api.caller();
      if (caller.session !== undefined && caller.organizations.length === 0) {
        // Signed in, but no organization of this person permits the way they did: nothing to show.
        await api.signOut().catch(() => undefined);
        setError(`None of your organizations permits signing in with ${caller.session.provider}. Sign in another way.`);
        setSession({ state: 'signed-out' });
        return false;
      }
      if (api.token !== null) sessionStorage.setItem(TOKEN_KEY, api.token);
      setError(undefined);
      setSession({ state: 'signed-in', api, caller });
      // Off the sign-in page once signed in: the explorer's own URL.
      if (location.pathname === '/ui/sign-in') history.replaceState(null, '', '/ui/logs');
      return true;
    } catch (e) {
      if (api.token !== null) sessionStorage.removeItem(TOKEN_KEY);
      if (!quiet) {
        setError(
          e instanceof ApiError && e.status === 401 ? 'That token was not accepted.' : String((e as Error).message),
        );
      }
      setSession({ state: 'signed-out' });
      return false;
    }
  };

  useEffect(() => {
    const saved = sessionStorage.getItem(TOKEN_KEY);
    if (saved !== null) {
      void enter(new Api(saved));
      return;
    }
    // Asked first, so a page without a session shows the sign-in page without a refused request.
    const api = new Api(null);
    api.hasSession().then(
      (live) => (live ? void enter(api, true) : setSession({ state: 'signed-out' })),
      () => setSession({ state: 'signed-out' }),
    );
  }, []);

  const signOut = async () => {
    if (session.state === 'signed-in' && session.api.token === null) {
      await session.api.signOut().catch(() => undefined);
    }
    sessionStorage.removeItem(TOKEN_KEY);
    setSession({ state: 'signed-out' });
  };

  if (session.state === 'checking') return <p class="loading">Signing in…</p>;
  if (session.state === 'signed-out') {
    return (
      <SignIn
        onToken={(token) => enter(new Api(token)).then(() => undefined)}
        onPassword={async (email, password) => {
          const api = new Api(null);
          try {
            await api.passwordSignIn(email, password);
          } catch (e) {
            setError(
              e instanceof ApiError && e.status === 401
                ? 'The email or the password is wrong.'
                : String((e as Error).message),
            );
            return;
          }
          await enter(api);
        }}
        error={error}
      />
    );
  }
  return <Explorer api={session.api} caller={session.caller} onSignOut={() => void signOut()} />;
}
