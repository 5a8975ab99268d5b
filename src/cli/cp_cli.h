/* cp_cli.h -- the cloudprof subcommands. Each takes argc/argv after the subcommand name
 * (argv[0] is the subcommand) and returns the process exit status. */
#ifndef CP_CLI_H
#define CP_CLI_H

#define CP_VERSION_STRING "0.1.0"

int cp_cli_serve(int argc, char **argv);
int cp_cli_decode(int argc, char **argv);
int cp_cli_raw(int argc, char **argv);
int cp_cli_convert(int argc, char **argv);
int cp_cli_emulate(int argc, char **argv);
int cp_cli_compact(int argc, char **argv);
int cp_cli_import(int argc, char **argv);
int cp_cli_export(int argc, char **argv);

#endif
