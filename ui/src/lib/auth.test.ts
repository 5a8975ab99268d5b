import { describe, expect, it } from 'vitest';
import { badgeText, badgeTitle, loginUrl, wantsOidcLogin, type Me } from './auth';

const me = (over: Partial<Me>): Me => ({ user: 'alice', role: 'viewer', namespaces: ['team-a'], auth: 'basic', logout: null, ...over });

describe('auth', () => {
  it('builds the login URL back to the current screen', () => {
    expect(loginUrl('/calls?from=now-1h&service=a%2Fb')).toBe('/auth/login?return=%2Fcalls%3Ffrom%3Dnow-1h%26service%3Da%252Fb');
    expect(loginUrl('//evil.example/x')).toBe('/auth/login?return=%2F');
    expect(loginUrl('https://evil.example/')).toBe('/auth/login?return=%2F');
  });
  it('shows a badge only with a login', () => {
    expect(badgeText(null)).toBeNull();
    expect(badgeText(me({ auth: 'none', user: null, role: 'admin', namespaces: '*' }))).toBeNull();
    expect(badgeText(me({}))).toBe('alice · viewer');
    expect(badgeTitle(me({}))).toContain('team-a');
    expect(badgeTitle(me({ namespaces: '*' }))).toContain('every namespace');
    expect(badgeTitle(me({ namespaces: [] }))).toContain('no namespace');
  });
  it('goes to the login on a 401 of the oidc mode only', () => {
    expect(wantsOidcLogin(401, { code: 'unauthenticated', auth: 'oidc' })).toBe(true);
    expect(wantsOidcLogin(401, { code: 'unauthenticated', auth: 'basic' })).toBe(false);
    expect(wantsOidcLogin(403, { auth: 'oidc' })).toBe(false);
    expect(wantsOidcLogin(401, null)).toBe(false);
  });
});
