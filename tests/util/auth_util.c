/* auth_util.c -- the --auth basic test helpers (auth_util.h). */
#include "auth_util.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <crypt.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void auth_write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

void auth_hash_line(cp_buf *out, const char *user, const char *password)
{
    char salt[CRYPT_GENSALT_OUTPUT_SIZE];
    assert_non_null(crypt_gensalt_rn("$2b$", 4, NULL, 0, salt, sizeof salt));
    struct crypt_data *cd = calloc(1, sizeof *cd);
    assert_non_null(cd);
    const char *h = crypt_r(password, salt, cd);
    assert_non_null(h);
    cp_buf_printf(out, "%s:%s\n", user, h);
    free(cd);
}

void auth_header(const char *user, const char *token, char *out, size_t outlen)
{
    out[0] = 0;
    if (!user) return;
    if (!strcmp(user, "token")) {
        snprintf(out, outlen, "Authorization: Bearer %s\r\n", token);
        return;
    }
    char plain[256];
    int n = snprintf(plain, sizeof plain, "%s:%s-pw", user, user);
    assert_true(n > 0 && (size_t)n < sizeof plain);
    unsigned char b64[400];
    EVP_EncodeBlock(b64, (const unsigned char *)plain, n);
    snprintf(out, outlen, "Authorization: Basic %s\r\n", b64);
}

void auth_files(const char *dir, const char *const *users, const char *groups, const char *token, char *users_path,
                char *groups_path, char *token_path, size_t cap)
{
    snprintf(users_path, cap, "%s/htpasswd", dir);
    snprintf(groups_path, cap, "%s/groups", dir);
    snprintf(token_path, cap, "%s/token", dir);
    cp_buf u;
    cp_buf_init(&u);
    for (size_t i = 0; users[i]; i++) {
        char pw[256];
        snprintf(pw, sizeof pw, "%s-pw", users[i]);
        auth_hash_line(&u, users[i], pw);
    }
    cp_buf_putc(&u, 0);
    auth_write_text(users_path, (const char *)u.data);
    cp_buf_free(&u);
    auth_write_text(groups_path, groups);
    char t[512];
    snprintf(t, sizeof t, "%s\n", token);
    auth_write_text(token_path, t);
}
