/* testutil.h -- helpers shared by the cmocka tests. Include after cmocka.h's prerequisites. */
#ifndef CP_TESTUTIL_H
#define CP_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common/cp_common.h"

/* Absolute path of a fixture: fixture_path("streams/test-service.calls.0.protocol"). Static buffer. */
const char *fixture_path(const char *rel);
/* Reads a fixture (or any file) whole; fails the test if it cannot. */
void load_file(const char *path, cp_buf *out);
void load_fixture(const char *rel, cp_buf *out);
/* Splits text into lines (in place, '\n' -> 0); returns the count, *lines malloc'ed. */
size_t split_lines(char *text, size_t len, char ***lines);
/* Deterministic PRNG for tests (xorshift64*). */
uint64_t test_rand(uint64_t *state);
/* A fresh empty temporary directory (mkdtemp under $TMPDIR or /tmp); caller frees. */
char *make_temp_dir(const char *tag);
/* rm -rf */
void remove_tree(const char *path);

#endif
