import { useEffect, useState } from 'preact/hooks';
import { Api, ApiError, type Caller } from './api.js';
import { Explorer } from './components/explorer.js';
import { SignIn } from './components/sign-in.js';

/** The token lives for the browser tab only, never in a URL or in localStorage. */
const TOKEN_KEY = 'berth.token';

type Session = { state: 'signed-out' } | { state: 'checking' } | { state: 'signed-in'; api: Api; caller: Caller };

export function App() {
  const [session, setSession] = useState<Session>(() =>
    sessionStorage.getItem(TOKEN_KEY) ? { state: 'checking' } : { state: 'signed-out' },
  );
  const [error, setError] = useState<string>();

  const signIn = async (token: string): Promise<void> => {
    const api = new Api(token);
    try {
      const caller = await api.caller();
      sessionStorage.setItem(TOKEN_KEY, token);
      setError(undefined);
      setSession({ state: 'signed-in', api, caller });
    } catch (e) {
      sessionStorage.removeItem(TOKEN_KEY);
      setError(
        e instanceof ApiError && e.status === 401 ? 'That token was not accepted.' : String((e as Error).message),
      );
      setSession({ state: 'signed-out' });
    }
  };

  useEffect(() => {
    const saved = sessionStorage.getItem(TOKEN_KEY);
    if (saved) void signIn(saved);
  }, []);

  const signOut = () => {
    sessionStorage.removeItem(TOKEN_KEY);
    setSession({ state: 'signed-out' });
  };

  if (session.state === 'checking') return <p class="loading">Signing in…</p>;
  if (session.state === 'signed-out') return <SignIn onSubmit={signIn} error={error} />;
  return <Explorer api={session.api} caller={session.caller} onSignOut={signOut} />;
}
