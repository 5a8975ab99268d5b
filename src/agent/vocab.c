/* vocab.c -- the names an emulated agent uses: well-known tags, params, Java-like method
 * names, thread names, SQL statements, URLs. Everything is derived from small tables and
 * an index, so a name never needs to be stored: the generator keeps only the index. */
#include "agent_internal.h"

#include <stdio.h>

static const char *const well_known[GEN_WK_COUNT] = {
    [WK_CALL_INFO] = "call.info",
    [WK_PROFILER_TITLE] = "profiler.title",
    [WK_CALL_RED] = "call.red",
    [WK_COMMON_STARTED] = "common.started",
    [WK_NODE_NAME] = "node.name",
    [WK_JAVA_THREAD] = "java.thread",
    [WK_TIME_CPU] = "time.cpu",
    [WK_TIME_WAIT] = "time.wait",
    [WK_MEMORY_ALLOCATED] = "memory.allocated",
    [WK_LOG_GENERATED] = "log.generated",
    [WK_LOG_WRITTEN] = "log.written",
    [WK_IO_NET_READ] = "io.net.read",
    [WK_IO_NET_WRITTEN] = "io.net.written",
    [WK_SQL] = "sql",
    [WK_BINDS] = "binds",
    [WK_WEB_URL] = "web.url",
    [WK_WEB_METHOD] = "web.method",
    [WK_WEB_REMOTE_ADDR] = "web.remote.addr",
    [WK_REQUEST_ID] = "request.id",
    [WK_TIME_QUEUE_WAIT] = "time.queue.wait",
    [WK_JMS_DESTINATION] = "jms.destination",
    [WK_JOB_NAME] = "job.name",
    [WK_EXCEPTION] = "exception",
    [WK_CALL_IDLE] = "call.idle",
};

const char *vocab_well_known(int wk) { return well_known[wk]; }

/* Indexed params (index = 1) are the ones whose values go into calls records. */
const vocab_param vocab_params[] = {
    {WK_PROFILER_TITLE, 1, 0, 1000, ""}, {WK_CALL_RED, 1, 0, 500, ""},
    {WK_CALL_IDLE, 1, 0, 700, ""},       {WK_COMMON_STARTED, 0, 0, 1000, ""},
    {WK_NODE_NAME, 0, 0, 1000, ""},      {WK_JAVA_THREAD, 0, 0, 1000, ""},
    {WK_SQL, 0, 1, 100, "sql"},          {WK_BINDS, 0, 1, 100, ""},
    {WK_WEB_URL, 1, 0, 1000, ""},        {WK_WEB_METHOD, 1, 0, 1000, ""},
    {WK_WEB_REMOTE_ADDR, 1, 0, 1000, ""}, {WK_REQUEST_ID, 1, 1, 100, ""},
    {WK_JMS_DESTINATION, 1, 0, 1000, ""}, {WK_JOB_NAME, 1, 0, 1000, ""},
    {WK_EXCEPTION, 0, 1, 100, ""},
};
const size_t vocab_nparams = CP_ARRAY_LEN(vocab_params);

static const char *const nouns[] = {
    "Order",   "Customer", "Invoice",  "Payment",  "Account",  "Product",      "Cart",     "Shipment",
    "Stock",   "Price",    "Quote",    "Ticket",   "User",     "Session",      "Report",   "Contract",
    "Address", "Plan",     "Catalog",  "Discount", "Tariff",   "Notification", "Document", "Device",
};
#define NNOUNS ((uint32_t)CP_ARRAY_LEN(nouns))

static const char *const verbs[] = {"get",   "find",  "save",    "update", "delete",    "load",  "process", "validate",
                                    "check", "build", "send",    "handle", "calculate", "fetch", "apply",   "resolve"};
static const char *const layers[] = {"Service", "Repository", "Client", "Mapper", "Validator", "Cache", "Facade"};
static const char *const returns[] = {"void", "java.lang.String", "java.util.List", "boolean",
                                      "int",  "long",             "java.util.Optional", "java.lang.Object"};
static const char *const args[] = {"()", "(java.lang.String)", "(long)", "(java.lang.String,int)", "(java.util.Map)",
                                   "(java.util.UUID,boolean)"};

/* Library methods; the first VOCAB_SQL_METHODS run SQL. */
static const char *const infra[VOCAB_INFRA] = {
    "java.sql.ResultSet org.postgresql.jdbc.PgPreparedStatement.executeQuery() (PgPreparedStatement.java:134) "
    "[postgresql-42.6.0.jar]",
    "int org.postgresql.jdbc.PgPreparedStatement.executeUpdate() (PgPreparedStatement.java:152) "
    "[postgresql-42.6.0.jar]",
    "boolean org.postgresql.jdbc.PgPreparedStatement.execute() (PgPreparedStatement.java:167) [postgresql-42.6.0.jar]",
    "java.sql.Connection com.zaxxer.hikari.HikariDataSource.getConnection() (HikariDataSource.java:100) "
    "[HikariCP-4.0.3.jar]",
    "java.lang.String com.fasterxml.jackson.databind.ObjectMapper.writeValueAsString(java.lang.Object) "
    "(ObjectMapper.java:3964) [jackson-databind-2.13.5.jar]",
    "java.lang.Object com.fasterxml.jackson.databind.ObjectMapper.readValue(java.lang.String,java.lang.Class) "
    "(ObjectMapper.java:3548) [jackson-databind-2.13.5.jar]",
    "java.lang.Object org.springframework.web.client.RestTemplate.execute(java.lang.String,"
    "org.springframework.http.HttpMethod,org.springframework.web.client.RequestCallback,"
    "org.springframework.web.client.ResponseExtractor,java.lang.Object[]) (RestTemplate.java:781) "
    "[spring-web-5.3.27.jar]",
    "java.util.concurrent.Future org.springframework.kafka.core.KafkaTemplate.send(java.lang.String,java.lang.Object) "
    "(KafkaTemplate.java:406) [spring-kafka-2.9.8.jar]",
    "void org.slf4j.MDC.put(java.lang.String,java.lang.String) (MDC.java:141) [slf4j-api-1.7.36.jar]",
    "java.lang.Object java.util.concurrent.FutureTask.get() (FutureTask.java:191)",
    "int java.io.FileInputStream.read(byte[],int,int) (FileInputStream.java:276)",
    "void java.net.Socket.connect(java.net.SocketAddress,int) (Socket.java:604)",
};

static const char *const exceptions[] = {"java.lang.IllegalStateException", "java.sql.SQLTimeoutException",
                                         "java.lang.NullPointerException",
                                         "org.springframework.web.client.HttpClientErrorException"};
static const char *const http_methods[] = {"GET", "GET", "GET", "POST", "PUT", "DELETE"};

/* A fixed scramble of the method index so neighbouring indexes look unrelated. */
static uint32_t mix(uint32_t x)
{
    x ^= x >> 16;
    x *= 0x7feb352dU;
    x ^= x >> 15;
    x *= 0x846ca68bU;
    x ^= x >> 16;
    return x;
}

int vocab_root_kind(uint32_t m)
{
    uint32_t r = (m - VOCAB_INFRA) % 20; /* 60% HTTP, 25% JMS, 15% jobs */
    return r < 12 ? KIND_HTTP : r < 17 ? KIND_JMS : KIND_JOB;
}

static size_t clamp(int n) { return n < 0 ? 0 : n >= GEN_MAX_TEXT ? GEN_MAX_TEXT - 1 : (size_t)n; }

/* Entry points: a controller, listener or job class per noun. */
static size_t root_method(uint32_t m, const char *pkg, char *out)
{
    uint32_t h = mix(m), r = m - VOCAB_INFRA;
    const char *noun = nouns[r % NNOUNS];
    int line = 20 + (int)(h % 480);
    switch (vocab_root_kind(m)) {
    case KIND_HTTP:
        return clamp(snprintf(out, GEN_MAX_TEXT,
                              "org.springframework.http.ResponseEntity com.example.%s.web.%sController%u.%s%s%s "
                              "(%sController%u.java:%d) [app.jar]",
                              pkg, noun, r / NNOUNS, verbs[h % 16], noun, args[(h >> 8) % 4], noun, r / NNOUNS, line));
    case KIND_JMS:
        return clamp(snprintf(out, GEN_MAX_TEXT,
                              "void com.example.%s.messaging.%sListener%u.on%sMessage(javax.jms.Message) "
                              "(%sListener%u.java:%d) [app.jar]",
                              pkg, noun, r / NNOUNS, noun, noun, r / NNOUNS, line));
    default:
        return clamp(snprintf(out, GEN_MAX_TEXT,
                              "void com.example.%s.jobs.%sJob%u.run() (%sJob%u.java:%d) [app.jar]", pkg, noun,
                              r / NNOUNS, noun, r / NNOUNS, line));
    }
}

size_t vocab_method(uint32_t m, const char *pkg, char *out)
{
    if (m < VOCAB_INFRA) return clamp(snprintf(out, GEN_MAX_TEXT, "%s", infra[m]));
    if (m < VOCAB_INFRA + VOCAB_ROOTS) return root_method(m, pkg, out);
    uint32_t h = mix(m), r = m - VOCAB_INFRA - VOCAB_ROOTS;
    const char *noun = nouns[r % NNOUNS], *layer = layers[(r / NNOUNS) % CP_ARRAY_LEN(layers)];
    const char *noun2 = nouns[(h >> 4) % NNOUNS];
    uint32_t cls = r / (NNOUNS * (uint32_t)CP_ARRAY_LEN(layers));
    return clamp(snprintf(out, GEN_MAX_TEXT, "%s com.example.%s.%s.%s%s%u.%s%s%s (%s%s%u.java:%d) [app.jar]",
                          returns[h % CP_ARRAY_LEN(returns)], pkg, layer[0] == 'R' ? "repository" : "service", noun,
                          layer, cls, verbs[(h >> 8) % 16], noun2, args[(h >> 12) % CP_ARRAY_LEN(args)], noun, layer,
                          cls, 12 + (int)((h >> 16) % 900)));
}

size_t vocab_thread(int kind, uint32_t k, char *out)
{
    static const char *const fmt[KIND_COUNT] = {"http-nio-8080-exec-%u", "DefaultMessageListenerContainer-%u",
                                                "scheduling-%u"};
    return clamp(snprintf(out, GEN_MAX_TEXT, fmt[kind], k + 1));
}

size_t vocab_noun_lower(uint32_t i, char *out)
{
    const char *n = nouns[i % NNOUNS];
    size_t len = 0;
    for (; n[len] && len < 32; len++) out[len] = (char)(n[len] | 0x20); /* ASCII lower case */
    return len;
}

size_t vocab_statement(uint32_t i, char *out)
{
    char t[40];
    size_t n = vocab_noun_lower(i / 4, t);
    t[n] = 0;
    switch (i % 4) {
    case 0: return clamp(snprintf(out, GEN_MAX_TEXT, "select * from %ss where id = ?", t));
    case 1: return clamp(snprintf(out, GEN_MAX_TEXT, "update %ss set status = ?, updated_at = ? where id = ?", t));
    case 2:
        return clamp(snprintf(out, GEN_MAX_TEXT, "insert into %ss (id, name, status, created_at) values (?, ?, ?, ?)", t));
    default:
        return clamp(snprintf(out, GEN_MAX_TEXT,
                              "select id, status, created_at from %ss where customer_id = ? order by created_at desc "
                              "limit 50",
                              t));
    }
}

size_t vocab_url(uint32_t m, uint32_t id, char *out)
{
    char *p = out;
    *p++ = '/';
    p += vocab_noun_lower((m - VOCAB_INFRA) % NNOUNS, p);
    *p++ = 's';
    if (id) {
        *p++ = '/';
        p = t_dec(p, id);
    }
    return (size_t)(p - out);
}

const char *vocab_exception(uint32_t i) { return exceptions[i % CP_ARRAY_LEN(exceptions)]; }
const char *vocab_http_method(uint32_t i) { return http_methods[i % CP_ARRAY_LEN(http_methods)]; }
