/* proc_util.h -- running a helper program (node with a browser script, say) from a test,
 * and deciding whether a missing tool may skip a test. */
#ifndef CP_PROC_UTIL_H
#define CP_PROC_UTIL_H

#include "testutil.h"

/* 1 under CI (CI set and not "false"/"0"): there, a test whose tools are missing fails
 * instead of skipping. */
int under_ci(void);
/* Why a browser test cannot run: node not on PATH, tests/tools/node_modules/playwright-core
 * or Debian's /usr/bin/chromium missing; NULL when all are there. */
const char *browser_tools_missing(void);
/* Returns when missing is NULL. Otherwise prints "<test>: SKIP: <missing>" and exits 77,
 * or under CI, where what (e.g. "the browser test") may not be skipped, fails (exit 1). */
void require_tools(const char *test, const char *what, const char *missing);

/* Runs argv (argv[0] looked up on PATH) with environ plus extra ("K=V", NULL-terminated;
 * extra wins over an inherited value of the same name), its stdout and stderr copied to
 * ours and appended to out. Returns the exit status (128 + signal); kills it after
 * timeout_ms and fails the test. */
int run_with_env(const char *const *argv, const char *const *extra, cp_buf *out, int timeout_ms);

#endif
