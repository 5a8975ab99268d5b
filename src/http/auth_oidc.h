/* auth_oidc.h -- OpenID Connect for the HTTP API and the UI (issue 17, `--auth oidc`):
 * bearer JWTs validated against the issuer's JWKS, and the UI's server-side session
 * (cookie `cp_session`) with the authorization-code flow under /auth/ (login, callback, logout).
 *
 * The contract between the request hook (auth.c) and the OIDC part (auth_oidc.c): auth.c
 * calls these when cfg->auth_mode is CP_AUTH_OIDC and nothing else of the OIDC part.
 */
#ifndef CP_AUTH_OIDC_H
#define CP_AUTH_OIDC_H

#include "http/cp_auth.h"
#include "http_internal.h"

#include <stddef.h>

/* At start (mode oidc): 0, or -1 with a message in err (the server does not start). */
int http_oidc_start(cp_http *h, char *err, size_t errlen);
void http_oidc_stop(cp_http *h);
/* Bearer JWT -> identity: 0, or -1 with a reason in why (never the token). */
int http_oidc_bearer(cp_http *h, const char *token, size_t len, cp_identity *id, char *why, size_t whylen);
/* The session cookie's value -> identity: 0, or -1 (none, unknown, expired). */
int http_oidc_session(cp_http *h, const char *sid, cp_identity *id);
/* /auth/login, /auth/callback, /auth/logout: 1 when url is one of them (answer in o), else 0. */
int http_oidc_route(cp_http *h, struct MHD_Connection *conn, const char *url, const http_args *a, http_out *o);

#endif
