/* temporary until serve/raw land */
#include "cli/cp_cli.h"
#include <stdio.h>
int cp_cli_serve(int argc, char **argv) { (void)argc; (void)argv; fprintf(stderr, "not yet\n"); return 2; }
int cp_cli_raw(int argc, char **argv) { (void)argc; (void)argv; fprintf(stderr, "not yet\n"); return 2; }
int cp_cli_decode(int argc, char **argv) { (void)argc; (void)argv; fprintf(stderr, "not yet\n"); return 2; }
