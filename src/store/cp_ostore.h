/* cp_ostore.h -- object stores: where the cold tier's files live (storage.md "Cold tier").
 *
 * One interface, two implementations:
 *   - a local directory (the embedded default): key "a/b/c.parquet" is <root>/a/b/c.parquet,
 *     written to a temporary name, fsynced, renamed, parent directory fsynced;
 *   - S3 (`s3://bucket/prefix`): libcurl with CURLOPT_AWS_SIGV4, path-style URLs
 *     (<endpoint>/<bucket>/<prefix>/<key>), x-amz-content-sha256 = the body's SHA-256,
 *     multipart upload above a threshold, retries with exponential backoff on
 *     connection errors, 5xx and 429 (never on 4xx).
 *
 * Keys are relative ("2026/01/02/13/ns/cloud_profiler_10ms.parquet"): [A-Za-z0-9._-/],
 * no empty component, no "." or "..", at most 1024 bytes; anything else is CP_EINVAL.
 * Every function is thread-safe (the HTTP threads read cold files while the compactor
 * writes): an S3 store uses one curl handle per call or per thread.
 * Functions return CP_OK, CP_ENOTFOUND (no such key) or a negative status with the
 * reason in err (the server's answer included, e.g. "PUT ...: 403 SignatureDoesNotMatch").
 */
#ifndef CP_OSTORE_H
#define CP_OSTORE_H

#include "common/cp_common.h"

#include <stddef.h>
#include <stdint.h>

#define CP_OSTORE_MAX_KEY 1024

typedef struct cp_ostore_config {
    const char *url;             /* a directory path, or s3://bucket[/prefix] */
    /* S3 only */
    const char *endpoint;        /* http(s)://host:port (required for s3://) */
    const char *region;          /* default "us-east-1" */
    const char *access_key;      /* may contain ':' (Swift tempauth "test:tester") */
    const char *secret_key;
    uint64_t multipart_threshold;/* objects above this use multipart (default 64 MiB) */
    uint64_t part_size;          /* default 16 MiB, at least 5 MiB */
    int retries;                 /* attempts after the first (default 4) */
    int backoff_ms;              /* first retry delay, doubled each time (default 200) */
    long timeout_s;              /* per request, 0 = none (default 300); connect 10 s */
    int list_page;               /* keys per ListObjectsV2 request, 1..1000 (0: 1000) */
} cp_ostore_config;

/* One listed object. */
typedef struct cp_ostore_item {
    const char *key;             /* relative to the store's root/prefix */
    uint64_t size;
} cp_ostore_item;

typedef struct cp_ostore cp_ostore;

typedef struct cp_ostore_ops {
    const char *name;            /* "dir" | "s3" */
    /* Uploads the local file at path under key (replacing it): atomic for readers. */
    int (*put_file)(cp_ostore *s, const char *key, const char *path, char *err, size_t errlen);
    /* put_file that may consume the local file (NULL: not offered): a directory store on
     * the same file system renames it into place. Call through cp_ostore_put_file_move. */
    int (*put_file_move)(cp_ostore *s, const char *key, const char *path, char *err, size_t errlen);
    /* Uploads n bytes from memory. */
    int (*put)(cp_ostore *s, const char *key, const void *p, size_t n, char *err, size_t errlen);
    /* Streams an object of unknown size from a reader callback (heap dumps): read(ud,
     * dst, cap) returns bytes read, 0 at the end, < 0 to abort (nothing is left behind
     * under key then). Multipart in S3, tmp + rename in a directory. */
    int (*put_stream)(cp_ostore *s, const char *key, long (*read)(void *ud, void *dst, size_t cap), void *ud,
                      char *err, size_t errlen);
    /* Size of an object (HEAD). */
    int (*size)(cp_ostore *s, const char *key, uint64_t *size, char *err, size_t errlen);
    /* Reads exactly n bytes at offset (Range GET). CP_ECORRUPT if the object is shorter. */
    int (*read)(cp_ostore *s, const char *key, void *dst, size_t n, uint64_t offset, char *err, size_t errlen);
    /* Downloads a whole object into the local file path (tmp + rename). */
    int (*get_file)(cp_ostore *s, const char *key, const char *path, char *err, size_t errlen);
    /* fn(item) for every object whose key starts with prefix, in key order; fn returns
     * non-zero to stop. */
    int (*list)(cp_ostore *s, const char *prefix, int (*fn)(void *ud, const cp_ostore_item *it), void *ud,
                char *err, size_t errlen);
    /* Deletes an object; deleting a missing key is CP_OK. */
    int (*del)(cp_ostore *s, const char *key, char *err, size_t errlen);
    /* "file:///root/key" or "s3://bucket/prefix/key" (for s3_files.remote_storage_path). */
    int (*url)(cp_ostore *s, const char *key, cp_buf *out);
    void (*close)(cp_ostore *s);
} cp_ostore_ops;

struct cp_ostore {
    const cp_ostore_ops *ops;
};

/* Opens the store cfg->url names. A directory is created if missing. S3: the bucket is
 * created if missing (PUT bucket; "already owned" is fine). */
int cp_ostore_open(const cp_ostore_config *cfg, cp_ostore **out, char *err, size_t errlen);
/* 1 if the key is acceptable (see above). */
int cp_ostore_key_ok(const char *key);

/* put_file where the local file may be gone afterwards (moved into the store); the caller
 * removes path itself if it is still there. */
static inline int cp_ostore_put_file_move(cp_ostore *s, const char *key, const char *path, char *err, size_t errlen)
{
    return s->ops->put_file_move ? s->ops->put_file_move(s, key, path, err, errlen)
                                 : s->ops->put_file(s, key, path, err, errlen);
}

static inline void cp_ostore_close(cp_ostore *s)
{
    if (s) s->ops->close(s);
}

#endif
