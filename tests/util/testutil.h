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

/* A Java string as a malloc'ed, NUL-terminated UTF-8 copy. */
char *str16_dup(cp_str16 s);

/* Compares a params map printed like the expected fixture files ("map[19:[a b] 41:[c]]")
 * with the file's text; rows the fixture's authors anonymised (test.org) are compared by
 * parameter ids, and by value where a value was left alone. */
void assert_go_map_equal(const char *mine, const char *expected);
/* Sleeps ms milliseconds. */
void sleep_ms(long ms);

/* ---- waiting and repeating on a busy machine ------------------------------------------------
 * A test asserts on what it caused, not on what a clock allowed: it drives a fixed amount of
 * work and waits for a condition in a loop bounded by TEST_WAIT_MS (only a failing test waits
 * that long: the sanitizer build on a loaded 2-core machine can be ten times slower). */
#define TEST_WAIT_MS 60000
/* Monotonic milliseconds (for deadlines). */
int64_t test_now_ms(void);
/* 1 when the suites should repeat less: the sanitizer build (compiled with
 * CP_TEST_SANITIZED) unless CP_TEST_QUICK=0, or CP_TEST_QUICK=1 in any build. Quick runs
 * make every check, on fewer random cases, rows, splits or repetitions. */
int test_quick(void);
/* full, or quick when test_quick(). */
size_t test_scaled(size_t full, size_t quick);
/* 1 if an executable prog is found on $PATH. */
int in_path(const char *prog);

#endif
