/* convert.c -- `cloudprof convert IN OUT`: a TPTP trace from one form to the other
 * (.trcbin <-> .trcxml, by extension). IN streams through the decoder into the encoder
 * 64 KiB at a time, so memory stays bounded whatever the file's size; OUT is written as
 * OUT.tmp and renamed only once everything converted, so a failure never leaves a
 * partial OUT. */
#include "cli/cp_cli.h"
#include "common/cp_fsutil.h"
#include "streams/cp_tptp.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define CONVERT_CHUNK 65536

static const char usage_text[] =
    "usage: cloudprof convert IN OUT\n"
    "\n"
    "Converts a TPTP trace between its binary form (.trcbin) and its XML form (.trcxml);\n"
    "each file's form comes from its extension. Every attribute is kept; unknown binary\n"
    "messages become <unknown id= size=/> in XML (their bytes are not kept) and are\n"
    "dropped when writing .trcbin. OUT is written whole or not at all (via OUT.tmp).\n"
    "Prints 'convert: N messages, U unknown skipped' on stderr.\n"
    "\n"
    "  --help            this text\n"
    "\n"
    "Exit status: 0 converted, 1 bad input or I/O error, 2 bad usage.\n";

typedef struct conv {
    cp_tptp_enc enc;
    cp_buf out;
    int fd;
    int enc_status;       /* the encoder refused a message */
    uint64_t enc_offset;  /* ... at this input offset */
    int io_errno;         /* writing OUT.tmp failed */
} conv;

/* 1 and the form when path ends in .trcbin / .trcxml (any case), else 0. */
static int form_of(const char *path, cp_tptp_form *form)
{
    size_t n = strlen(path);
    if (n < 7) return 0;
    if (!strcasecmp(path + n - 7, ".trcbin")) *form = CP_TPTP_BIN;
    else if (!strcasecmp(path + n - 7, ".trcxml")) *form = CP_TPTP_XML;
    else return 0;
    return 1;
}

static int flush(conv *c)
{
    if (c->out.len && cp_write_all(c->fd, c->out.data, c->out.len) != CP_OK) {
        c->io_errno = errno;
        return CP_EIO;
    }
    cp_buf_reset(&c->out);
    return CP_OK;
}

static int on_msg(void *ud, const cp_tptp_msg *m)
{
    conv *c = ud;
    int st = cp_tptp_enc_msg(&c->enc, m, &c->out);
    if (st != CP_OK) {
        c->enc_status = st;
        c->enc_offset = m->offset;
        return 1;
    }
    return c->out.len >= CONVERT_CHUNK && flush(c) != CP_OK;
}

/* Reads IN to the end through the decoder: CP_OK or the failing status (reported). */
static int pump(int in, cp_tptp_dec *d, conv *c, const char *inpath)
{
    uint8_t *chunk = malloc(CONVERT_CHUNK);
    if (!chunk) {
        fprintf(stderr, "cloudprof convert: out of memory\n");
        return CP_ENOMEM;
    }
    int st = CP_OK;
    for (;;) {
        ssize_t n = read(in, chunk, CONVERT_CHUNK);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            fprintf(stderr, "cloudprof convert: cannot read %s: %s\n", inpath, strerror(errno));
            st = CP_EIO;
            break;
        }
        st = n == 0 ? cp_tptp_dec_finish(d) : cp_tptp_dec_feed(d, chunk, (size_t)n);
        if (st != CP_OK || n == 0) break;
    }
    free(chunk);
    if (st == CP_EABORT && c->enc_status)
        fprintf(stderr, "cloudprof convert: the message at offset %llu of %s cannot be written: %s\n",
                (unsigned long long)c->enc_offset, inpath, c->enc.err);
    else if (st == CP_EABORT && c->io_errno)
        fprintf(stderr, "cloudprof convert: cannot write: %s\n", strerror(c->io_errno));
    else if (st != CP_OK && st != CP_EIO)
        fprintf(stderr, "cloudprof convert: %s: %s\n", inpath, cp_tptp_dec_error(d));
    return st;
}

/* Converts IN into the open tmp file; returns the exit status. */
static int convert(const char *inpath, cp_tptp_form fin, cp_tptp_form fout, int out_fd)
{
    int in = open(inpath, O_RDONLY | O_CLOEXEC);
    if (in < 0) {
        fprintf(stderr, "cloudprof convert: cannot open %s: %s\n", inpath, strerror(errno));
        return 1;
    }
    conv c = {.fd = out_fd};
    cp_buf_init(&c.out);
    cp_tptp_enc_init(&c.enc, fout);
    cp_tptp_sink sink = {.ud = &c, .on_msg = on_msg};
    cp_tptp_dec *d = cp_tptp_dec_new(fin, NULL, &sink);
    int st = d ? cp_tptp_enc_begin(&c.enc, &c.out) : CP_ENOMEM;
    if (st != CP_OK) fprintf(stderr, "cloudprof convert: out of memory\n");
    if (st == CP_OK) st = pump(in, d, &c, inpath);
    if (st == CP_OK) st = cp_tptp_enc_end(&c.enc, &c.out);
    if (st == CP_OK && (flush(&c) != CP_OK || fsync(out_fd) != 0)) {
        fprintf(stderr, "cloudprof convert: cannot write: %s\n", strerror(c.io_errno ? c.io_errno : errno));
        st = CP_EIO;
    }
    if (st == CP_OK)
        fprintf(stderr, "convert: %llu messages, %llu unknown skipped\n",
                (unsigned long long)cp_tptp_dec_messages(d), (unsigned long long)cp_tptp_dec_unknown(d));
    cp_tptp_dec_free(d);
    cp_buf_free(&c.out);
    close(in);
    return st == CP_OK ? 0 : 1;
}

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "cloudprof convert: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n\n%s", usage_text);
    return 2;
}

int cp_cli_convert(int argc, char **argv)
{
    const char *paths[2] = {NULL, NULL};
    int npaths = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(usage_text, stdout);
            return 0;
        }
        if (argv[i][0] == '-' && argv[i][1]) return usage_error("unknown option '%s'", argv[i]);
        if (npaths == 2) return usage_error("unexpected argument '%s'", argv[i]);
        paths[npaths++] = argv[i];
    }
    if (npaths < 2) return usage_error("%s", "needs IN and OUT");
    cp_tptp_form fin, fout;
    if (!form_of(paths[0], &fin)) return usage_error("IN '%s' must end in .trcbin or .trcxml", paths[0]);
    if (!form_of(paths[1], &fout)) return usage_error("OUT '%s' must end in .trcbin or .trcxml", paths[1]);

    size_t n = strlen(paths[1]);
    char *tmp = malloc(n + 5);
    if (!tmp) return 1;
    memcpy(tmp, paths[1], n);
    memcpy(tmp + n, ".tmp", 5);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        fprintf(stderr, "cloudprof convert: cannot create %s: %s\n", tmp, strerror(errno));
        free(tmp);
        return 1;
    }
    int rc = convert(paths[0], fin, fout, fd);
    if (close(fd) != 0 && rc == 0) {
        fprintf(stderr, "cloudprof convert: cannot write %s: %s\n", tmp, strerror(errno));
        rc = 1;
    }
    if (rc == 0 && rename(tmp, paths[1]) != 0) {
        fprintf(stderr, "cloudprof convert: cannot rename %s to %s: %s\n", tmp, paths[1], strerror(errno));
        rc = 1;
    }
    if (rc != 0) unlink(tmp);
    free(tmp);
    return rc;
}
