// provider.mjs -- a real OpenID provider on loopback for tests/integration/oidc_test.c (issue 17).
//
// It is `oidc-provider` (an OpenID-certified implementation; tests/tools/node_modules, installed by
// scripts/node-tools.sh) with a small configuration:
//   * client `cloudprof-ui` (secret CP_OIDC_UI_SECRET): authorization code + PKCE (S256), a
//     confidential "native" client so that its loopback redirect URI http://127.0.0.1/auth/callback
//     (and post-logout URI http://127.0.0.1/) match whatever port cloudprof listens on (RFC 8252 7.3);
//   * client `cloudprof-cli` (secret CP_OIDC_CLI_SECRET): client credentials; its access tokens are
//     JWTs (resource indicators) for the resource `urn:cloudprof:api` with audience CP_OIDC_AUDIENCE
//     (default `cloudprof-api`) carrying groups CP_OIDC_CLI_GROUPS (default `viewer,team-a`);
//   * two users, any password (the provider's development login page): `alice` in groups team-a and
//     viewer, `bob` in groups team-b and viewer. Their ID tokens carry preferred_username, email and
//     groups (scope profile).
//
// Test endpoints beside the provider's own:
//   POST /test/rotate           a new signing key (listed first in the JWKS, the old one kept after
//                               it): tokens issued from now on name the new kid. Answers {"kid":...}.
//   GET  /test/mint?kind=K      a token forged with `jose` for the audience, ready to be sent as a
//                               bearer: good (valid, signed with the provider's current key), expired,
//                               notyet (nbf an hour ahead), otherkey (a key the provider never
//                               published, with the kid of the current one), none (alg none),
//                               hs256 (HMAC keyed with the provider's public key: the key confusion),
//                               wrongaud, wrongiss, tampered (a good token whose payload was changed
//                               to other groups after signing), noexp. Optional &groups=a,b&sub=X.
//   GET  /test/keys             {"kids":[...]} of the JWKS.
//
// Prints one line `{"port":N,"issuer":"http://127.0.0.1:N"}` on stdout when it listens, then runs
// until its stdin closes or it gets SIGTERM. Env: CP_OIDC_PORT (default 0 = any free port).
import http from 'node:http';
import crypto from 'node:crypto';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

// the test-only packages live in tests/tools/node_modules (or CP_TOOLS_DIR): ESM ignores NODE_PATH
const toolsDir = process.env.CP_TOOLS_DIR || resolve(dirname(fileURLToPath(import.meta.url)), '../tools');
const req = createRequire(join(toolsDir, 'package.json'));
const { default: Provider } = await import(pathToFileURL(req.resolve('oidc-provider')).href);
const jose = await import(pathToFileURL(req.resolve('jose')).href);

const AUDIENCE = process.env.CP_OIDC_AUDIENCE || 'cloudprof-api';
const RESOURCE = 'urn:cloudprof:api';
const UI_SECRET = process.env.CP_OIDC_UI_SECRET || 'ui-secret-0123456789';
const CLI_SECRET = process.env.CP_OIDC_CLI_SECRET || 'cli-secret-0123456789';
const CLI_GROUPS = (process.env.CP_OIDC_CLI_GROUPS || 'viewer,team-a').split(',').filter(Boolean);

const USERS = {
  alice: { email: 'alice@example.test', groups: ['team-a', 'viewer'] },
  bob: { email: 'bob@example.test', groups: ['team-b', 'viewer'] },
};

const log = (...a) => console.error('provider:', ...a);
// stdout carries the one line with the port (the harness may stop reading it): the provider's own
// messages go to stderr
console.log = console.info = console.warn = (...a) => console.error(...a);

async function newKey(n) {
  const { privateKey } = await jose.generateKeyPair('RS256', { extractable: true, modulusLength: 2048 });
  const jwk = await jose.exportJWK(privateKey);
  jwk.kid = `k${n}-${crypto.randomBytes(4).toString('hex')}`;
  jwk.alg = 'RS256';
  jwk.use = 'sig';
  return jwk;
}

let keys = [await newKey(1)];
let issuer = null;
let provider = null;

function makeProvider() {
  const p = new Provider(issuer, {
    clients: [
      {
        client_id: 'cloudprof-ui',
        client_secret: UI_SECRET,
        application_type: 'native',
        redirect_uris: ['http://127.0.0.1/auth/callback'],
        post_logout_redirect_uris: ['http://127.0.0.1/'],
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_basic',
      },
      {
        client_id: 'cloudprof-cli',
        client_secret: CLI_SECRET,
        grant_types: ['client_credentials'],
        response_types: [],
        redirect_uris: [],
        token_endpoint_auth_method: 'client_secret_basic',
      },
    ],
    jwks: { keys },
    pkce: { required: () => true },
    conformIdTokenClaims: false, // profile claims in the ID token (cloudprof reads groups there)
    claims: {
      openid: ['sub'],
      profile: ['preferred_username', 'name', 'groups'],
      email: ['email', 'email_verified'],
    },
    scopes: ['openid', 'profile', 'email', 'offline_access'],
    features: {
      devInteractions: { enabled: true }, // the login page: any password
      clientCredentials: { enabled: true },
      rpInitiatedLogout: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => RESOURCE,
        useGrantedResource: () => true,
        getResourceServerInfo: (ctx, resource) => {
          if (resource !== RESOURCE) throw new Error(`unknown resource ${resource}`);
          return { scope: 'read', audience: AUDIENCE, accessTokenFormat: 'jwt', accessTokenTTL: 600, jwt: { sign: { alg: 'RS256' } } };
        },
      },
    },
    async findAccount(ctx, sub) {
      const u = USERS[sub];
      if (!u) return undefined;
      return {
        accountId: sub,
        async claims() {
          return { sub, preferred_username: sub, name: sub, email: u.email, email_verified: true, groups: u.groups };
        },
      };
    },
    async extraTokenClaims(ctx, token) {
      if (token.kind === 'ClientCredentials') return { groups: CLI_GROUPS };
      return undefined;
    },
    // first-party clients: no consent page
    async loadExistingGrant(ctx) {
      const grantId = ctx.oidc.result?.consent?.grantId || ctx.oidc.session.grantIdFor(ctx.oidc.client.clientId);
      if (grantId) return ctx.oidc.provider.Grant.find(grantId);
      const grant = new ctx.oidc.provider.Grant({ clientId: ctx.oidc.client.clientId, accountId: ctx.oidc.session.accountId });
      grant.addOIDCScope('openid profile email');
      grant.addOIDCClaims(['sub', 'preferred_username', 'name', 'groups', 'email', 'email_verified']);
      await grant.save();
      return grant;
    },
    cookies: { keys: ['cp-test-cookie-key-0123456789abcdef'] },
    ttl: { Session: 3600, Interaction: 3600, Grant: 3600, IdToken: 3600, AuthorizationCode: 600, ClientCredentials: 600 },
  });
  p.on('server_error', (ctx, err) => log('server_error', err));
  return p;
}

async function mint(kind, q) {
  const now = Math.floor(Date.now() / 1000);
  const claims = {
    iss: issuer,
    sub: q.get('sub') || 'forged-client',
    aud: AUDIENCE,
    iat: now,
    exp: now + 600,
    jti: crypto.randomBytes(8).toString('hex'),
    client_id: 'cloudprof-cli',
    groups: (q.get('groups') || CLI_GROUPS.join(',')).split(',').filter(Boolean),
  };
  const cur = keys[0];
  const priv = await jose.importJWK(cur, 'RS256');
  const sign = (c, key = priv, kid = cur.kid) =>
    new jose.SignJWT(c).setProtectedHeader({ alg: 'RS256', kid, typ: 'at+jwt' }).sign(key);
  switch (kind) {
    case 'good': return sign(claims);
    case 'expired': return sign({ ...claims, iat: now - 7200, exp: now - 3600 });
    case 'notyet': return sign({ ...claims, nbf: now + 3600 });
    case 'noexp': { const c = { ...claims }; delete c.exp; return sign(c); }
    case 'wrongaud': return sign({ ...claims, aud: 'some-other-api' });
    case 'wrongiss': return sign({ ...claims, iss: issuer + '/other' });
    case 'otherkey': {
      const { privateKey } = await jose.generateKeyPair('RS256', { extractable: true, modulusLength: 2048 });
      return sign(claims, privateKey, cur.kid);
    }
    case 'none': return new jose.UnsecuredJWT(claims).setIssuer(issuer).encode();
    case 'hs256': {
      // HMAC keyed with the bytes of the provider's published public key (the JWKS entry's n)
      const secret = Buffer.from(cur.n, 'base64url');
      return new jose.SignJWT(claims).setProtectedHeader({ alg: 'HS256', kid: cur.kid }).sign(secret);
    }
    case 'tampered': {
      const t = await sign(claims);
      const [h, , s] = t.split('.');
      const forged = { ...claims, groups: ['admin', 'team-b'], sub: 'mallory' };
      return `${h}.${Buffer.from(JSON.stringify(forged)).toString('base64url')}.${s}`;
    }
    default: throw new Error(`unknown kind ${kind}`);
  }
}

function send(res, status, obj) {
  const body = typeof obj === 'string' ? obj : JSON.stringify(obj);
  res.writeHead(status, { 'content-type': typeof obj === 'string' ? 'text/plain' : 'application/json' });
  res.end(body);
}

const server = http.createServer(async (req, res) => {
  const url = new URL(req.url, issuer);
  try {
    if (url.pathname === '/test/rotate' && req.method === 'POST') {
      const k = await newKey(keys.length + 1);
      keys = [k, ...keys].slice(0, 3);
      provider = makeProvider(); // same issuer, storage and port: only the keys change
      log(`rotated: signing with ${k.kid}`);
      return send(res, 200, { kid: k.kid });
    }
    if (url.pathname === '/test/keys') return send(res, 200, { kids: keys.map((k) => k.kid) });
    if (url.pathname === '/test/mint') return send(res, 200, await mint(url.searchParams.get('kind'), url.searchParams));
  } catch (e) {
    return send(res, 400, String(e && e.message || e));
  }
  provider.callback()(req, res);
});

server.listen(Number(process.env.CP_OIDC_PORT || 0), '127.0.0.1', () => {
  const { port } = server.address();
  issuer = `http://127.0.0.1:${port}`;
  provider = makeProvider();
  process.stdout.write(JSON.stringify({ port, issuer }) + '\n');
  log(`listening on ${issuer}`);
});

const stop = () => { server.close(); server.closeAllConnections?.(); process.exit(0); };
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
process.stdin.on('end', stop);
process.stdin.on('error', stop);
process.stdin.resume();
