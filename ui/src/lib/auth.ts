// auth.ts -- who is logged in (GET /api/v1/me, docs/API.md "Login") and what the UI does
// without a login: with --auth oidc it goes to the server's login page and comes back to
// the same screen; with basic the browser asks for the password itself (the server's
// WWW-Authenticate: Basic); with none there is nothing to show.

export interface Me {
  user: string | null;
  role: string;                  // viewer, operator, admin (none: a user without a role)
  namespaces: string[] | '*';
  auth: 'none' | 'basic' | 'oidc';
  logout: string | null;         // where "Log out" goes (oidc), else null
}

/** The login page that brings the browser back to `current` (a path with its query). */
export function loginUrl(current: string): string {
  const back = current.startsWith('/') && !current.startsWith('//') ? current : '/';
  return `/auth/login?return=${encodeURIComponent(back)}`;
}

/** The badge's text, or null when there is no login to show. */
export function badgeText(me: Me | null): string | null {
  if (!me || me.auth === 'none' || !me.user) return null;
  return `${me.user} · ${me.role}`;
}

/** The badge's tooltip: the namespaces the user sees. */
export function badgeTitle(me: Me): string {
  const ns = me.namespaces === '*' ? 'every namespace' : me.namespaces.length ? me.namespaces.join(', ') : 'no namespace';
  return `Logged in as ${me.user} (${me.role}); sees ${ns}`;
}

/** 1 when a 401 answer means "go to the OIDC login" (its JSON says auth "oidc"). */
export function wantsOidcLogin(status: number, body: Record<string, unknown> | null | undefined): boolean {
  return status === 401 && !!body && body.auth === 'oidc';
}

let redirecting = false;

/** Sends the browser to the login page (once, whatever number of requests failed). */
export function goLogin(): void {
  if (redirecting || typeof window === 'undefined') return;
  redirecting = true;
  window.location.assign(loginUrl(window.location.pathname + window.location.search));
}
