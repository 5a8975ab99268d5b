/* replay_util.h -- replays the agent side of a recorded conversation (protocol.md §6.2)
 * to a live server and checks every byte the server answers.
 *
 * The capture's RCV_DATA commands carry the handles of the collector that was recorded;
 * the replay substitutes the handles the server under test returns, so a RCV_DATA is
 * only sent once the reply to its INIT has arrived (as the real agent does).
 *
 * Checks made while replaying (any violation fails the test):
 *  - the handshake reply equals the capture's 8 bytes;
 *  - every INIT reply has a non-null handle, unique on the connection, and its 20 bytes
 *    after the handle (rotation period, rotation size, sequence id) equal the capture's;
 *  - exactly one ack byte, 0x00, per RCV_DATA and per 0x11, nothing unsolicited; the
 *    total equals the capture's ack count;
 *  - at the end the server closes the connection without sending anything more (after
 *    the capture's CLOSE, or after the replay shuts its sending side down). */
#ifndef CP_REPLAY_UTIL_H
#define CP_REPLAY_UTIL_H

#include "testutil.h"

#include <jansson.h>

typedef struct replay_capture {
    const char *name;
    cp_buf client;      /* the agent's bytes (or the concatenated conversation) */
    cp_buf server;      /* the collector's bytes; empty for a concatenated capture */
    int concatenated;
    const char *ns;     /* namespace and pod of its handshake */
    const char *pod;
} replay_capture;

/* conversations/parser.test.protocol (both directions concatenated). */
void replay_capture_parser_test(replay_capture *c);
/* conversations/agent-v2/{client-to-server,server-to-client}.bin. */
void replay_capture_agent_v2(replay_capture *c);
void replay_capture_free(replay_capture *c);
/* Fixture file holding the whole stream `stream` of the capture (relative path). */
const char *replay_capture_stream_fixture(const replay_capture *c, const char *stream);

typedef struct replay_opts {
    /* 0: like the agent: one write per command, the handshake and INIT replies read
     *    synchronously, all pending acks drained after each 0x11 and before each INIT.
     * 1: the byte sequence cut at random boundaries (writes of 1..max_write bytes),
     *    commands pipelined, replies read concurrently. */
    int random_cuts;
    uint64_t seed;
    size_t max_write;    /* default 3000 */
    /* > 0: stop after the Nth 0x11 and all acks up to it; the connection stays open
     * (replay_result.fd) and nothing after that 0x11 is sent. */
    int stop_after_flush;
} replay_opts;

typedef struct replay_stream {
    char name[64];
    uint8_t capture_handle[16];
    uint8_t server_handle[16];
    int open;                /* the server's INIT reply has arrived */
    int32_t seq;             /* the server's sequence id: the stored file index is seq + 1 */
    uint64_t sent;           /* payload bytes sent on this handle */
} replay_stream;

typedef struct replay_result {
    int fd;                  /* open connection after a stop_after_flush replay, else -1 */
    size_t acks;             /* ack bytes received (each checked to be 0x00) */
    size_t capture_acks;     /* ack bytes in the capture for the replayed commands */
    size_t commands;         /* commands sent */
    size_t flushes;          /* 0x11 sent */
    size_t nstreams;
    replay_stream streams[16];
} replay_result;

void replay_run(int port, const replay_capture *c, const replay_opts *o, replay_result *r);

/* The calls records of the capture's calls stream: the calls a server stores from it. */
size_t replay_capture_calls(const replay_capture *c);
/* Polls GET path (an /api/v1/calls query) on the HTTP port of server s until its "calls"
 * array has want entries (the server stores the last calls as the connection ends), for up
 * to TEST_WAIT_MS; returns that answer (json_decref it). Fails the test with the server's
 * log otherwise. */
struct test_server;
json_t *replay_wait_calls(const struct test_server *s, const char *path, size_t want);
const replay_stream *replay_find_stream(const replay_result *r, const char *name);

#endif
