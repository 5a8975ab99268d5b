/* system.c -- "hide system/proxy calls" (ui.md §3.6): which calls are the server's own
 * housekeeping rather than work anyone asked for. Pure; evaluated per row inside the
 * query like the search, so paging stays exact.
 *
 * A call is a system call when its method is on the idle list, when it carries the
 * agent's idle marker (`call.idle`) or the reactive "absorbed" marker (`async.absorbed`,
 * meaningful only under its caller), or when its method or `web.url` contains one of the
 * probe / socket-read markers. The proxy rule of §3.6 (keep only `proxy.to` calls in a
 * pod whose dictionary defines it) needs per-pod dictionary knowledge and is not applied. */
#include "query/cp_query.h"

#include <string.h>

const char *const cp_system_idle_default[] = {
    /* schedulers: Quartz's main loop, misfire and cluster managers */
    "org.quartz.core.QuartzSchedulerThread.run",
    "JobStoreSupport$MisfireHandler.run",
    "JobStoreSupport$ClusterManager.run",
    /* LDAP connection reader, JMS AQ receive, Ant stream pumps */
    "com.sun.jndi.ldap.Connection.run",
    "oracle.jms.AQjmsConsumer.receive",
    "org.apache.tools.ant.taskdefs.StreamPumper.run",
    /* cluster messaging, recovery and node managers */
    "org.jgroups.protocols.TP$",
    "org.jgroups.util.TimeScheduler",
    "com.arjuna.ats.internal.arjuna.recovery.PeriodicRecovery.run",
    "weblogic.nodemanager.",
    /* messaging bridges and socket listeners */
    "org.apache.activemq.network.DemandForwardingBridgeSupport",
    "java.net.ServerSocket.accept",
    "sun.nio.ch.ServerSocketChannelImpl.accept",
};
const size_t cp_system_idle_default_count = sizeof cp_system_idle_default / sizeof cp_system_idle_default[0];

/* Markers found in the method or web.url (lowercase: compared case-insensitively). */
static const char *const url_markers[] = {
    "socketinputstream.read", "/actuator/ready", "/actuator/health", "/actuator/metrics",
    "/actuator/prometheus", "/probes/live", "/probes/ready",
};
#define N_URL_MARKERS (sizeof url_markers / sizeof url_markers[0])

static int has_marker(const char *s, size_t n)
{
    for (size_t i = 0; i < N_URL_MARKERS; i++)
        if (cp_ci_contains(s, n, url_markers[i], strlen(url_markers[i]))) return 1;
    return 0;
}

static int name_is(const char *name, size_t nlen, const char *want)
{
    return nlen == strlen(want) && memcmp(name, want, nlen) == 0;
}

static int param_hides(void *ud, const char *name, size_t nlen, const char *val, size_t vlen)
{
    (void)ud;
    if (name_is(name, nlen, "call.idle") || name_is(name, nlen, "async.absorbed")) return 1;
    return name_is(name, nlen, "web.url") && has_marker(val, vlen);
}

static int name_hides(void *ud, const char *name, size_t nlen)
{
    (void)ud;
    return name_is(name, nlen, "call.idle") || name_is(name, nlen, "async.absorbed");
}

static int method_hides(const char *m, size_t n, const char *const *idle, size_t nidle)
{
    for (size_t i = 0; i < nidle; i++)
        if (idle[i][0] && memmem(m, n, idle[i], strlen(idle[i]))) return 1;
    return has_marker(m, n);
}

static int params_hide(const cp_call_view *v)
{
    if (!v->params_json || v->params_json_len == 0) return 0;
    /* Parsing the params costs an allocation; most rows have none of the names or
     * markers anywhere in their text, and those need no parse. */
    const char *j = v->params_json;
    size_t n = v->params_json_len;
    if (!memmem(j, n, "call.idle", 9) && !memmem(j, n, "async.absorbed", 14) && !has_marker(j, n)) return 0;
    return cp_params_walk(j, n, name_hides, param_hides, NULL) > 0;
}

int cp_system_call(const cp_call_view *v, const char *const *idle, size_t nidle)
{
    const char *m = v->method ? v->method : "";
    return method_hides(m, v->method_len, idle, nidle) || params_hide(v);
}

void cp_system_memo_clear(cp_system_memo *m) { memset(m, 0, sizeof *m); }

int cp_system_call_memo(cp_system_memo *memo, const cp_call_view *v, const char *const *idle, size_t nidle)
{
    const char *m = v->method ? v->method : "";
    uint64_t h = cp_mix64(cp_fnv64(CP_FNV_SEED, m, v->method_len) ^ (uint64_t)v->method_len) | 1u;
    size_t slot = (size_t)(h >> 1) & (CP_SYSTEM_MEMO_SLOTS - 1);
    int hides;
    if (memo->key[slot] == h) {
        hides = memo->val[slot] & 1;
    } else {
        hides = method_hides(m, v->method_len, idle, nidle);
        memo->key[slot] = h;
        memo->val[slot] = (uint8_t)hides;
    }
    return hides || params_hide(v);
}
