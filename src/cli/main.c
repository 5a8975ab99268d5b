/* main.c -- the cloudprof binary: dispatches to a subcommand. */
#include "cli/cp_cli.h"
#include "store/cp_catalog.h"

#include <stdio.h>
#include <string.h>

static const struct {
    const char *name;
    int (*run)(int, char **);
    const char *help;
} commands[] = {
    {"serve", cp_cli_serve, "run the collector (agents on :1715, query API on :8080)"},
    {"decode", cp_cli_decode, "decode a stream file or a conversation capture to JSON Lines"},
    {"raw", cp_cli_raw, "print a stored stream file byte-identical to what the agent sent"},
    {"import", cp_cli_import, "import TPTP (.trcbin, .trcxml) and CBOR raw traces as calls"},
    {"export", cp_cli_export, "write calls as a TPTP trace (.trcbin or .trcxml)"},
    {"convert", cp_cli_convert, "convert a TPTP trace between .trcbin and .trcxml"},
    {"compact", cp_cli_compact, "compact closed hot windows into Parquet files in the cold store"},
    {"emulate", cp_cli_emulate, "emulate profiler agents streaming to a collector (load test)"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: cloudprof COMMAND [options]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].help);
    fprintf(f, "\n'cloudprof COMMAND --help' describes each command's options.\n");
}

int main(int argc, char **argv)
{
    cp_catalog_process_init();
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
        printf("cloudprof %s\n", CP_VERSION_STRING);
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name)) return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "cloudprof: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return 2;
}
