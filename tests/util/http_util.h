/* http_util.h -- a tiny blocking HTTP/1.1 client for the tests of the query API.
 *
 * One request per connection (Connection: close) to 127.0.0.1:port; the response body is
 * read by Content-Length, chunked transfer coding or up to EOF. The functions do not use
 * cmocka (they may run on several threads at once): they return 0, or -1 on a transport
 * failure (connect, timeout, malformed response), and the callers assert. Only
 * http_get_json() fails the test itself (main thread only). */
#ifndef CP_HTTP_UTIL_H
#define CP_HTTP_UTIL_H

#include "common/cp_common.h"

#include <jansson.h>
#include <stddef.h>

#define HTTP_UTIL_TIMEOUT_MS 60000 /* per request; only a failure waits this long */

/* Any method. extra_headers: NULL or "Name: value\r\n..." lines. body/headers (either
 * may be NULL) are reset and get the response body and raw header block (status line
 * and headers, without the blank line). */
int http_request(int port, const char *method, const char *path, const char *extra_headers, const void *data,
                 size_t n, int *status, cp_buf *body, cp_buf *headers);
int http_get(int port, const char *path, int *status, cp_buf *body, cp_buf *headers);
int http_post(int port, const char *path, const char *content_type, const void *data, size_t n, int *status,
              cp_buf *body, cp_buf *headers);
/* Sends raw bytes, shuts the sending side down and reads everything until the server
 * closes (for malformed or cut requests). */
int http_raw(int port, const void *req, size_t n, cp_buf *response);

/* The value of a header (name case-insensitive) copied into out; 1 if present. */
int http_header(const cp_buf *headers, const char *name, char *out, size_t outlen);

/* GET that must answer want_status with a JSON body; returns it parsed (json_decref it).
 * Fails the test otherwise. */
json_t *http_get_json(int port, const char *path, int want_status);


#endif
