/* tptp_schema.c -- the TPTP message table (foreign-formats.md §2.3, §2.4): for each
 * message id its XML element name and its attributes, in file order, with their types. */
#include "tptp_internal.h"

#include <string.h>

#define S CP_TPTP_STRING
#define L CP_TPTP_LONG
#define I CP_TPTP_INT
#define B CP_TPTP_BYTE

static const cp_tptp_attr_def a_encoding[] = {{"name", S}};
static const cp_tptp_attr_def a_frequency[] = {{"ticksPerSecond", L}};
static const cp_tptp_attr_def a_node[] = {
    {"nodeId", S}, {"hostname", S}, {"ipaddress", S}, {"timezone", I}, {"time", L}};
static const cp_tptp_attr_def a_process_create[] = {
    {"processId", S}, {"name", S}, {"pid", I}, {"nodeIdRef", S}, {"time", L}, {"executable", S}};
static const cp_tptp_attr_def a_agent_create[] = {
    {"agentId", S}, {"processIdRef", S}, {"agentName", S}, {"agentType", S},
    {"time", L},    {"agentParameters", S}, {"version", S}};
static const cp_tptp_attr_def a_agent_destroy[] = {{"agentIdRef", S}, {"time", L}};
static const cp_tptp_attr_def a_trace_start[] = {
    {"traceId", S}, {"agentIdRef", S}, {"time", L}, {"collationValue", S}};
static const cp_tptp_attr_def a_trace_end[] = {{"traceIdRef", S}, {"time", L}, {"collationValue", S}};
static const cp_tptp_attr_def a_filter[] = {
    {"traceIdRef", S},    {"pattern", S},     {"genericPattern", S},      {"mode", S},
    {"methodPattern", S}, {"methodGenericPattern", S}, {"methodMode", S}};
static const cp_tptp_attr_def a_option[] = {{"traceIdRef", S}, {"key", S}, {"value", S}};
static const cp_tptp_attr_def a_thread_start[] = {
    {"transientThreadId", L}, {"threadId", L},   {"time", L},       {"groupName", S},
    {"parentName", S},        {"transientObjIdRef", L}, {"objIdRef", L}, {"threadName", S},
    {"collationValue", S},    {"traceIdRef", S}};
static const cp_tptp_attr_def a_thread_end[] = {
    {"transientThreadIdRef", L}, {"threadIdRef", L}, {"time", L}, {"collationValue", S}, {"traceIdRef", S}};
static const cp_tptp_attr_def a_class_def[] = {
    {"transientThreadIdRef", L}, {"threadIdRef", L},  {"time", L},          {"numInterfaces", I},
    {"interfaceNames", S},       {"transientClassId", L}, {"classId", L},   {"sourceName", S},
    {"classLoader", S},          {"superclass", S},   {"transientObjIdRef", L}, {"objIdRef", L},
    {"name", S},                 {"access", S},       {"numStaticFields", I}, {"numMethods", I},
    {"numInstanceFields", I},    {"collationValue", S}, {"traceIdRef", S}};
static const cp_tptp_attr_def a_method_def[] = {
    {"name", S},          {"signature", S},       {"isNative", B},        {"isAbstract", B},
    {"isStatic", B},      {"isSynchronized", B},  {"exceptions", S},      {"startLineNumber", L},
    {"endLineNumber", L}, {"signatureNotation", S}, {"transientClassIdRef", L}, {"classIdRef", L},
    {"methodId", L},      {"collationValue", S},  {"traceIdRef", S}};
static const cp_tptp_attr_def a_obj_alloc[] = {
    {"transientThreadIdRef", L}, {"threadIdRef", L}, {"time", L},       {"isArray", B},
    {"transientObjId", L},       {"objId", L},       {"size", L},       {"lineNumber", L},
    {"methodIdRef", L},          {"transientClassIdRef", L}, {"classIdRef", L}, {"contextData", S},
    {"collationValue", S},       {"traceIdRef", S}};
static const cp_tptp_attr_def a_method_entry[] = {
    {"transientThreadIdRef", L}, {"threadIdRef", L}, {"time", L},           {"methodIdRef", L},
    {"ticket", I},               {"transientObjIdRef", L}, {"classIdRef", L}, {"threadCpuTime", L},
    {"sequenceCounter", L},      {"stackDepth", L},  {"collationValue", S}, {"traceIdRef", S}};
/* sequenceCounter is a string here (the seed's table; spec §2.4 keeps it) */
static const cp_tptp_attr_def a_method_exit[] = {
    {"transientThreadIdRef", L}, {"threadIdRef", L},   {"time", L},       {"ticket", I},
    {"threadCpuTime", L},        {"methodIdRef", L},   {"transientObjIdRef", L}, {"objIdRef", L},
    {"transientClassIdRef", L},  {"classIdRef", L},    {"sequenceCounter", S}, {"collationValue", S},
    {"traceIdRef", S}};
static const cp_tptp_attr_def a_thread_event[] = { /* gcStart, runtimeInitDone, runtimeShutdown */
    {"transientThreadIdRef", L}, {"threadIdRef", L}, {"time", L}, {"collationValue", S}, {"traceIdRef", S}};
static const cp_tptp_attr_def a_obj_free[] = {
    {"transientThreadIdRef", L}, {"threadIdRef", L}, {"time", L},      {"transientObjIdRef", L},
    {"objIdRef", L},             {"objAge", L},      {"sequenceCounter", L}, {"stackDepth", L},
    {"collationValue", S},       {"traceIdRef", S}};
static const cp_tptp_attr_def a_gc_finish[] = {
    {"transientThreadIdRef", L}, {"threadIdRef", L}, {"time", L},          {"totalObjSpace", L},
    {"usedObjSpace", L},         {"usedObjects", L}, {"collationValue", S}, {"traceIdRef", S}};
static const cp_tptp_attr_def a_mon_wait[] = { /* monWait, monWaited */
    {"threadIdRef", L}, {"time", L}, {"objIdRef", L}, {"timeout", L}, {"stackDepth", I},
    {"stackMethods", CP_TPTP_STRINGS}, {"stackLines", CP_TPTP_LONGS}};
static const cp_tptp_attr_def a_mon_enter[] = {
    {"threadIdRef", L}, {"time", L}, {"objIdRef", L}, {"threadOwner", L}, {"stackDepth", I},
    {"stackMethods", CP_TPTP_STRINGS}, {"stackLines", CP_TPTP_LONGS}};
static const cp_tptp_attr_def a_mon_entered[] = {
    {"threadIdRef", L}, {"time", L}, {"objIdRef", L}, {"stackDepth", I},
    {"stackMethods", CP_TPTP_STRINGS}, {"stackLines", CP_TPTP_LONGS}};
static const cp_tptp_attr_def a_agg_entry[] = {
    {"threadIdRef", L}, {"methodIdRef", L}, {"baseTime", L}, {"minTime", L},
    {"maxTime", L},     {"baseCPUTime", L}, {"numCalls", L}};
static const cp_tptp_attr_def a_agg_exit[] = {{"threadIdRef", L}, {"methodIdRef", L}};
static const cp_tptp_attr_def a_heap_dump_def[] = {{"heapDumpId", L}, {"time", L}, {"name", S}, {"basetime", L}};
static const cp_tptp_attr_def a_gc_root[] = {{"classIdRef", L}, {"objIdRef", L}, {"type", S}};
static const cp_tptp_attr_def a_obj_reference[] = {{"sourceId", L}, {"targetId", L}, {"heapDumpIdRef", L}};
static const cp_tptp_attr_def a_custom[] = {{"body", S}};

#undef S
#undef L
#undef I
#undef B

#define DEF(id, el, a) {id, el, CP_ARRAY_LEN(a), a}

/* Sorted by id (cp_tptp_def_of searches it). */
static const cp_tptp_def defs[] = {
    DEF(CP_TPTP_ENCODING, "encoding", a_encoding),
    DEF(CP_TPTP_FREQUENCY, "frequency", a_frequency),
    DEF(CP_TPTP_NODE, "node", a_node),
    DEF(CP_TPTP_PROCESS_CREATE, "processCreate", a_process_create),
    DEF(CP_TPTP_AGENT_CREATE, "agentCreate", a_agent_create),
    DEF(CP_TPTP_AGENT_DESTROY, "agentDestroy", a_agent_destroy),
    DEF(CP_TPTP_TRACE_START, "traceStart", a_trace_start),
    DEF(CP_TPTP_TRACE_END, "traceEnd", a_trace_end),
    DEF(CP_TPTP_FILTER, "filter", a_filter),
    DEF(CP_TPTP_OPTION, "option", a_option),
    DEF(CP_TPTP_THREAD_START, "threadStart", a_thread_start),
    DEF(CP_TPTP_THREAD_END, "threadEnd", a_thread_end),
    DEF(CP_TPTP_CLASS_DEF, "classDef", a_class_def),
    DEF(CP_TPTP_METHOD_DEF, "methodDef", a_method_def),
    DEF(CP_TPTP_OBJ_ALLOC, "objAlloc", a_obj_alloc),
    DEF(CP_TPTP_METHOD_ENTRY, "methodEntry", a_method_entry),
    DEF(CP_TPTP_METHOD_EXIT, "methodExit", a_method_exit),
    DEF(CP_TPTP_GC_START, "gcStart", a_thread_event),
    DEF(CP_TPTP_OBJ_FREE, "objFree", a_obj_free),
    DEF(CP_TPTP_GC_FINISH, "gcFinish", a_gc_finish),
    DEF(CP_TPTP_RUNTIME_INIT_DONE, "runtimeInitDone", a_thread_event),
    DEF(CP_TPTP_RUNTIME_SHUTDOWN, "runtimeShutdown", a_thread_event),
    DEF(CP_TPTP_MON_WAIT, "monWait", a_mon_wait),
    DEF(CP_TPTP_MON_WAITED, "monWaited", a_mon_wait),
    DEF(CP_TPTP_MON_CONTENDED_ENTER, "monContendedEnter", a_mon_enter),
    DEF(CP_TPTP_MON_CONTENDED_ENTERED, "monContendedEntered", a_mon_entered),
    DEF(CP_TPTP_AGG_METHOD_ENTRY, "aggMethodEntry", a_agg_entry),
    DEF(CP_TPTP_AGG_METHOD_EXIT, "aggMethodExit", a_agg_exit),
    DEF(CP_TPTP_HEAP_DUMP_DEF, "heapDumpDef", a_heap_dump_def),
    DEF(CP_TPTP_GC_ROOT, "gcRoot", a_gc_root),
    DEF(CP_TPTP_OBJ_REFERENCE, "objReference", a_obj_reference),
    DEF(CP_TPTP_CUSTOM, "custom", a_custom),
};

const cp_tptp_def *cp_tptp_def_of(uint16_t id)
{
    size_t lo = 0, hi = CP_ARRAY_LEN(defs);
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (defs[mid].id == id) return &defs[mid];
        if (defs[mid].id < id) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

const cp_tptp_def *cp_tptp_def_by_element(const char *name, size_t len)
{
    for (size_t i = 0; i < CP_ARRAY_LEN(defs); i++)
        if (strlen(defs[i].element) == len && memcmp(defs[i].element, name, len) == 0) return &defs[i];
    return NULL;
}

int cp_tptp_attr_index(const cp_tptp_def *def, const char *name)
{
    for (size_t i = 0; i < def->nattrs; i++)
        if (strcmp(def->attrs[i].name, name) == 0) return (int)i;
    return -1;
}

int cp_tptp_encoding_kind(const char *name, size_t len)
{
    char norm[16];
    size_t k = 0;
    for (size_t i = 0; i < len; i++) {
        char c = name[i];
        if (c == '-' || c == '_' || c == ' ') continue;
        if (k == sizeof norm - 1) return -1;
        norm[k++] = (char)(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    }
    norm[k] = 0;
    if (!strcmp(norm, "utf8")) return 0;
    if (!strcmp(norm, "iso88591") || !strcmp(norm, "latin1") || !strcmp(norm, "l1")) return 1;
    return -1;
}
