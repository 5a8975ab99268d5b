/* proc_util.c -- a helper program run with its output kept (shared by the browser tests:
 * ui_browser_test and oidc_test run node the same way). */
#include "proc_util.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

int under_ci(void)
{
    const char *ci = getenv("CI");
    return ci && *ci && strcmp(ci, "false") != 0 && strcmp(ci, "0") != 0;
}

const char *browser_tools_missing(void)
{
    char pw[1200];
    snprintf(pw, sizeof pw, "%s/tests/tools/node_modules/playwright-core", CP_SOURCE_DIR);
    return !in_path("node")                        ? "node is not on PATH (scripts/node-tools.sh installs it)"
           : access(pw, R_OK) != 0                 ? "tests/tools/node_modules/playwright-core is missing "
                                                     "(run scripts/node-tools.sh)"
           : access("/usr/bin/chromium", X_OK) != 0 ? "/usr/bin/chromium is missing (scripts/setup.sh installs chromium)"
                                                    : NULL;
}

void require_tools(const char *test, const char *what, const char *missing)
{
    if (!missing) return;
    if (under_ci()) {
        printf("%s: FAIL: %s; CI is set, so %s may not be skipped\n", test, missing, what);
        exit(1);
    }
    printf("%s: SKIP: %s\n", test, missing);
    exit(77);
}

/* environ without the names extra sets, then extra; the array is malloc'ed, its strings not. */
static char **merged_env(const char *const *extra)
{
    size_t nenv = 0, nextra = 0;
    while (environ[nenv]) nenv++;
    while (extra[nextra]) nextra++;
    char **envp = calloc(nenv + nextra + 1, sizeof *envp);
    size_t k = 0;
    for (size_t i = 0; i < nenv; i++) { /* ours win over inherited values of the same name */
        int shadowed = 0;
        for (size_t j = 0; j < nextra && !shadowed; j++) {
            size_t n = (size_t)(strchr(extra[j], '=') - extra[j]) + 1;
            shadowed = !strncmp(environ[i], extra[j], n);
        }
        if (!shadowed) envp[k++] = environ[i];
    }
    for (size_t j = 0; j < nextra; j++) envp[k++] = (char *)extra[j];
    envp[k] = NULL;
    return envp;
}

int run_with_env(const char *const *argv, const char *const *extra, cp_buf *out, int timeout_ms)
{
    char **envp = merged_env(extra);
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    fflush(stdout);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(fds[1], 1);
        dup2(fds[1], 2);
        close(fds[0]);
        close(fds[1]);
        execvpe(argv[0], (char *const *)argv, envp);
        fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    close(fds[1]);
    free(envp);
    int64_t deadline = cp_now_ms() + timeout_ms;
    char buf[4096];
    for (;;) {
        int64_t left = deadline - cp_now_ms();
        if (left <= 0) {
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
            close(fds[0]);
            fail_msg("%s did not finish within %d s", argv[1] ? argv[1] : argv[0], timeout_ms / 1000);
        }
        struct pollfd p = {fds[0], POLLIN, 0};
        if (poll(&p, 1, left > 1000 ? 1000 : (int)left) <= 0) continue; /* EINTR or nothing yet */
        ssize_t n = read(fds[0], buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        fwrite(buf, 1, (size_t)n, stdout);
        fflush(stdout);
        cp_buf_append(out, buf, (size_t)n);
    }
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
