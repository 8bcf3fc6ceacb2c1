/*
 * cl_conf.c: the key table, value parsers and cohort_conf_* calls.
 *
 * Each key has a kind (how its text parses), a range for numbers, its
 * default as text (Kafka's default, parsed like a user's value so the two
 * can never disagree) and the field it writes. Error messages follow
 * Kafka's ConfigException wording: "Invalid value X for configuration K:
 * reason".
 */
#include "client/cl_conf.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "client/cl_producer.h"
#include "common/ch_compression.h"

enum {
	K_INT,         /* int32_t, [min, max] */
	K_LONG,        /* int64_t, [min, max] */
	K_BOOL,        /* bool */
	K_STRING,      /* char *, "" allowed */
	K_NSTRING,     /* char *, NULL by default (group.id, group.instance.id) */
	K_SERVERS,     /* bootstrap.servers */
	K_ASSIGNORS,   /* partition.assignment.strategy */
	K_RESET,       /* auto.offset.reset */
	K_ISOLATION,   /* isolation.level */
	K_PROTOCOL,    /* group.protocol */
	K_SECURITY,    /* security.protocol */
	K_ACKS,        /* acks */
	K_CODEC,       /* compression.type */
	K_PARTITIONER, /* partitioner (librdkafka's names) */
	K_PASSWORD,    /* K_NSTRING that cohort_conf_get shows as "[hidden]" (Java's PASSWORD) */
	K_TLS_PROTOS,  /* ssl.enabled.protocols */
};

typedef struct kdef {
	const char *name;
	int kind;
	int64_t min, max;
	const char *dflt; /* NULL: no default (null) */
	size_t off;
} kdef;

#define F(field) offsetof(struct cohort_conf, field)
#define INT(lo) K_INT, (lo), INT32_MAX
#define LONG(lo) K_LONG, (lo), INT64_MAX

/* ConsumerConfig's definitions (Kafka 4.4): name, type and validator,
 * default. */
static const kdef keys[] = {
	{"bootstrap.servers", K_SERVERS, 0, 0, "", F(bootstrap)},
	{"client.id", K_STRING, 0, 0, "", F(client_id)},
	{"client.rack", K_STRING, 0, 0, "", F(client_rack)},
	{"group.id", K_NSTRING, 0, 0, NULL, F(group_id)},
	{"group.instance.id", K_NSTRING, 0, 0, NULL, F(group_instance_id)},
	{"group.protocol", K_PROTOCOL, 0, 0, "classic", F(group_protocol_consumer)},
	{"group.remote.assignor", K_NSTRING, 0, 0, NULL, F(group_remote_assignor)},
	{"partition.assignment.strategy", K_ASSIGNORS, 0, 0, "range,cooperative-sticky",
	 F(assignors)},
	{"session.timeout.ms", K_INT, INT32_MIN, INT32_MAX, "45000", F(session_timeout_ms)},
	{"heartbeat.interval.ms", K_INT, INT32_MIN, INT32_MAX, "3000", F(heartbeat_interval_ms)},
	{"max.poll.interval.ms", INT(1), "300000", F(max_poll_interval_ms)},
	{"enable.auto.commit", K_BOOL, 0, 0, "true", F(enable_auto_commit)},
	{"auto.commit.interval.ms", INT(0), "5000", F(auto_commit_interval_ms)},
	{"auto.offset.reset", K_RESET, 0, 0, "latest", F(auto_offset_reset)},
	{"fetch.min.bytes", INT(0), "1", F(fetch_min_bytes)},
	{"fetch.max.wait.ms", INT(0), "500", F(fetch_max_wait_ms)},
	{"fetch.max.bytes", INT(0), "52428800", F(fetch_max_bytes)},
	{"max.partition.fetch.bytes", INT(0), "1048576", F(max_partition_fetch_bytes)},
	{"max.poll.records", INT(1), "500", F(max_poll_records)},
	{"isolation.level", K_ISOLATION, 0, 0, "read_uncommitted", 0},
	{"check.crcs", K_BOOL, 0, 0, "true", F(check_crcs)},
	{"metadata.max.age.ms", LONG(0), "300000", F(metadata_max_age_ms)},
	{"request.timeout.ms", INT(0), "30000", F(request_timeout_ms)},
	{"default.api.timeout.ms", INT(0), "60000", F(default_api_timeout_ms)},
	{"retry.backoff.ms", LONG(0), "100", F(retry_backoff_ms)},
	{"retry.backoff.max.ms", LONG(0), "1000", F(retry_backoff_max_ms)},
	{"reconnect.backoff.ms", LONG(0), "50", F(reconnect_backoff_ms)},
	{"reconnect.backoff.max.ms", LONG(0), "1000", F(reconnect_backoff_max_ms)},
	{"socket.connection.setup.timeout.ms", LONG(0), "10000",
	 F(socket_connection_setup_timeout_ms)},
	{"socket.connection.setup.timeout.max.ms", LONG(0), "30000",
	 F(socket_connection_setup_timeout_max_ms)},
	{"connections.max.idle.ms", K_LONG, INT64_MIN, INT64_MAX, "540000",
	 F(connections_max_idle_ms)},
	{"allow.auto.create.topics", K_BOOL, 0, 0, "true", F(allow_auto_create_topics)},
	{"exclude.internal.topics", K_BOOL, 0, 0, "true", F(exclude_internal_topics)},
	{"security.protocol", K_SECURITY, 0, 0, "PLAINTEXT", F(security_protocol)},
	/* SslConfigs and SaslConfigs (Kafka 4.4); librdkafka's names as aliases */
	{"ssl.truststore.location", K_NSTRING, 0, 0, NULL, F(sec[CL_SEC_TRUSTSTORE_LOCATION])},
	{"ssl.ca.location", K_NSTRING, 0, 0, NULL, F(sec[CL_SEC_TRUSTSTORE_LOCATION])},
	{"ssl.truststore.type", K_STRING, 0, 0, "JKS", F(sec[CL_SEC_TRUSTSTORE_TYPE])},
	{"ssl.keystore.location", K_NSTRING, 0, 0, NULL, F(sec[CL_SEC_KEYSTORE_LOCATION])},
	{"ssl.keystore.type", K_STRING, 0, 0, "JKS", F(sec[CL_SEC_KEYSTORE_TYPE])},
	{"ssl.key.password", K_PASSWORD, 0, 0, NULL, F(sec[CL_SEC_KEY_PASSWORD])},
	{"ssl.certificate.location", K_NSTRING, 0, 0, NULL, F(sec[CL_SEC_CERT_LOCATION])},
	{"ssl.key.location", K_NSTRING, 0, 0, NULL, F(sec[CL_SEC_KEY_LOCATION])},
	{"ssl.endpoint.identification.algorithm", K_STRING, 0, 0, "https",
	 F(sec[CL_SEC_ENDPOINT_ID])},
	{"ssl.enabled.protocols", K_TLS_PROTOS, 0, 0, "TLSv1.2,TLSv1.3", F(ssl_protocols)},
	{"sasl.mechanism", K_STRING, 0, 0, "GSSAPI", F(sec[CL_SEC_SASL_MECHANISM])},
	{"sasl.mechanisms", K_STRING, 0, 0, "GSSAPI", F(sec[CL_SEC_SASL_MECHANISM])},
	{"sasl.jaas.config", K_PASSWORD, 0, 0, NULL, F(sec[CL_SEC_SASL_JAAS])},
	{"sasl.username", K_NSTRING, 0, 0, NULL, F(sec[CL_SEC_SASL_USERNAME])},
	{"sasl.password", K_PASSWORD, 0, 0, NULL, F(sec[CL_SEC_SASL_PASSWORD])},
	/* ProducerConfig (Kafka 4.4) */
	{"acks", K_ACKS, 0, 0, "all", F(acks)},
	{"linger.ms", LONG(0), "5", F(linger_ms)},
	{"batch.size", INT(0), "16384", F(batch_size)},
	{"compression.type", K_CODEC, 0, 0, "none", F(compression)},
	{"enable.idempotence", K_BOOL, 0, 0, "true", F(enable_idempotence)},
	{"partitioner", K_PARTITIONER, 0, 0, "murmur2_random", F(partitioner)},
	{"buffer.memory", LONG(0), "33554432", F(buffer_memory)},
	{"max.block.ms", LONG(0), "60000", F(max_block_ms)},
	{"delivery.timeout.ms", INT(0), "120000", F(delivery_timeout_ms)},
	{"max.in.flight.requests.per.connection", INT(1), "5", F(max_in_flight)},
	{"retries", INT(0), "2147483647", F(retries)},
	{"max.request.size", INT(0), "1048576", F(max_request_size)},
};
_Static_assert(sizeof(keys) / sizeof(keys[0]) <= 64, "cohort_conf.user_set has 64 bits");

/* The entry of keys[] named exactly name (case-sensitive), or NULL for an unknown key. */
static const kdef *
find_key(const char *name)
{
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (strcmp(keys[i].name, name) == 0)
			return &keys[i];
	return NULL;
}

/* Kafka trims values before parsing them (ConfigDef.parseType). */
static void
trim(const char *s, const char **b, size_t *n)
{
	const char *e = s + strlen(s);
	while (*s && isspace((unsigned char)*s))
		s++;
	while (e > s && isspace((unsigned char)e[-1]))
		e--;
	*b = s;
	*n = (size_t)(e - s);
}

/* Parses s[0..n) as a whole base-10 integer into *out; false on empty, over 31 bytes,
 * surrounding spaces, trailing junk, a doubled sign or overflow. */
static bool
parse_i64(const char *s, size_t n, int64_t *out)
{
	char tmp[32];
	if (n == 0 || n >= sizeof(tmp))
		return false;
	memcpy(tmp, s, n);
	tmp[n] = 0;
	if (tmp[0] == '+' && (tmp[1] == '-' || tmp[1] == '+'))
		return false;
	char *end;
	errno = 0;
	long long v = strtoll(tmp, &end, 10);
	if (errno || *end || isspace((unsigned char)tmp[0]))
		return false;
	*out = v;
	return true;
}

/* A list item of host:port, as ClientUtils.parseAndValidateAddresses reads
 * it ("[::1]:9092" for IPv6). */
static bool
parse_addr(const char *s, size_t n, cl_addr *out)
{
	const char *colon = NULL;
	for (size_t i = n; i > 0; i--)
		if (s[i - 1] == ':') {
			colon = s + i - 1;
			break;
		}
	if (!colon || colon == s || (size_t)(colon - s) == n - 1)
		return false;
	const char *h = s;
	size_t hn = (size_t)(colon - s);
	if (h[0] == '[') {
		if (hn < 3 || h[hn - 1] != ']')
			return false;
		h++, hn -= 2;
	} else if (memchr(h, ':', hn)) {
		return false;
	}
	int64_t port;
	if (!parse_i64(colon + 1, (size_t)(s + n - colon - 1), &port) || port < 0 || port > 65535)
		return false;
	for (size_t i = 0; i < hn; i++)
		if (isspace((unsigned char)h[i]))
			return false;
	out->host = strndup(h, hn);
	out->port = (int)port;
	return out->host != NULL;
}

/* Frees the n hosts of a and the array itself (a may be NULL when n is 0). */
static void
free_addrs(cl_addr *a, int n)
{
	for (int i = 0; i < n; i++)
		free(a[i].host);
	free(a);
}

/* Java class names of the client-side assignors, and Kafka's protocol
 * names, both accepted. */
static int
assignor_by_name(const char *s, size_t n)
{
	static const struct {
		const char *name;
		ch_assign_kind kind;
	} names[] = {
		{"org.apache.kafka.clients.consumer.RangeAssignor", CH_ASSIGN_RANGE},
		{"org.apache.kafka.clients.consumer.RoundRobinAssignor", CH_ASSIGN_ROUNDROBIN},
		{"org.apache.kafka.clients.consumer.StickyAssignor", CH_ASSIGN_STICKY},
		{"org.apache.kafka.clients.consumer.CooperativeStickyAssignor",
		 CH_ASSIGN_COOPERATIVE_STICKY},
		{"range", CH_ASSIGN_RANGE},
		{"roundrobin", CH_ASSIGN_ROUNDROBIN},
		{"sticky", CH_ASSIGN_STICKY},
		{"cooperative-sticky", CH_ASSIGN_COOPERATIVE_STICKY},
	};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strlen(names[i].name) == n && memcmp(names[i].name, s, n) == 0)
			return (int)names[i].kind;
	return -1;
}

/* Calls fn for each trimmed, non-empty comma-separated item (Kafka's LIST
 * type drops empty items only at the end: "a,,b" is an error there; here
 * every empty item is an error, which Kafka's validators end up saying). */
typedef bool (*item_fn)(const char *s, size_t n, void *ud);
/* Returns the number of items, or -1 when an item is empty or fn returns false
 * (what fn already added stays in ud for the caller to free). */
static int
each_item(const char *s, size_t n, item_fn fn, void *ud)
{
	int count = 0;
	size_t i = 0;
	while (i <= n) {
		size_t j = i;
		while (j < n && s[j] != ',')
			j++;
		const char *b = s + i;
		size_t len = j - i;
		while (len && isspace((unsigned char)*b))
			b++, len--;
		while (len && isspace((unsigned char)b[len - 1]))
			len--;
		if (len == 0) {
			if (j == n && count > 0 && i == n)
				break; /* trailing comma */
			return -1;
		}
		if (!fn(b, len, ud))
			return -1;
		count++;
		i = j + 1;
	}
	return count;
}

typedef struct servers_acc {
	cl_addr *a;
	int n;
	bool oom;
} servers_acc;

/* item_fn for bootstrap.servers: appends host:port to the servers_acc ud; false on a bad
 * address, or on no memory with acc->oom set. */
static bool
add_server(const char *s, size_t n, void *ud)
{
	servers_acc *acc = ud;
	cl_addr *na = realloc(acc->a, sizeof(*na) * (size_t)(acc->n + 1));
	if (!na) {
		acc->oom = true;
		return false;
	}
	acc->a = na;
	if (!parse_addr(s, n, &acc->a[acc->n]))
		return false;
	acc->n++;
	return true;
}

typedef struct assignors_acc {
	ch_assign_kind k[4];
	int n;
	bool dup;
} assignors_acc;

/* item_fn for partition.assignment.strategy: appends the assignor to the assignors_acc ud;
 * false on an unknown name, or on a repeated one with acc->dup set. */
static bool
add_assignor(const char *s, size_t n, void *ud)
{
	assignors_acc *acc = ud;
	int k = assignor_by_name(s, n);
	if (k < 0)
		return false;
	for (int i = 0; i < acc->n; i++)
		if ((int)acc->k[i] == k) {
			acc->dup = true;
			return false;
		}
	acc->k[acc->n++] = (ch_assign_kind)k;
	return true;
}

/* item_fn for ssl.enabled.protocols: ORs CL_TLS_V1_2 / CL_TLS_V1_3 into the unsigned ud;
 * false on any other protocol (SSLv3, TLSv1, TLSv1.1: OpenSSL's floor here is 1.2). */
static bool
add_tls_protocol(const char *s, size_t n, void *ud)
{
	unsigned *mask = ud;
	if (n == 7 && memcmp(s, "TLSv1.2", 7) == 0)
		*mask |= CL_TLS_V1_2;
	else if (n == 7 && memcmp(s, "TLSv1.3", 7) == 0)
		*mask |= CL_TLS_V1_3;
	else
		return false;
	return true;
}

/* group.instance.id as JoinGroupRequest.validateGroupInstanceId checks it. */
static const char *
instance_id_problem(const char *s, size_t n)
{
	if (n == 0)
		return "Group instance id must be non-empty string";
	if (n > 249)
		return "Group instance id can't be longer than 249 characters";
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '.' && s[i] != '_' && s[i] != '-')
			return "Group instance id contains illegal characters: only ASCII "
			       "alphanumerics, '.', '_' and '-' are allowed";
	return NULL;
}

static const char *const codec_names[] = {"none", "gzip", "snappy", "lz4", "zstd"};

#define BAD(...) (cl_errstr(errstr, esz, __VA_ARGS__), COHORT_ERR__BAD_CONF)
#define FIELD(T) ((T *)((char *)conf + k->off))

/* Parse text for key k and store it. The conf is untouched on error. */
static cohort_err
set_value(cohort_conf *conf, const kdef *k, const char *text, char *errstr, size_t esz)
{
	const char *v;
	size_t n;
	if (!text) {
		if (k->dflt)
			return set_value(conf, k, k->dflt, errstr, esz);
		free(*FIELD(char *));
		*FIELD(char *) = NULL;
		return COHORT_OK;
	}
	trim(text, &v, &n);
	switch (k->kind) {
	case K_INT:
	case K_LONG: {
		int64_t x;
		const char *type = k->kind == K_INT ? "INT" : "LONG";
		if (!parse_i64(v, n, &x) || (k->kind == K_INT && (x < INT32_MIN || x > INT32_MAX)))
			return BAD("Invalid value %s for configuration %s: Not a number of type %s",
				   text, k->name, type);
		if (x < k->min)
			return BAD("Invalid value %s for configuration %s: Value must be at least "
				   "%" PRId64,
				   text, k->name, k->min);
		if (x > k->max)
			return BAD("Invalid value %s for configuration %s: Value must be no more "
				   "than %" PRId64,
				   text, k->name, k->max);
		if (k->kind == K_INT)
			*FIELD(int32_t) = (int32_t)x;
		else
			*FIELD(int64_t) = x;
		return COHORT_OK;
	}
	case K_BOOL:
		if (n == 4 && strncasecmp(v, "true", 4) == 0)
			*FIELD(bool) = true;
		else if (n == 5 && strncasecmp(v, "false", 5) == 0)
			*FIELD(bool) = false;
		else
			return BAD("Invalid value %s for configuration %s: Expected value to be "
				   "either true or false",
				   text, k->name);
		return COHORT_OK;
	case K_STRING:
	case K_NSTRING:
	case K_PASSWORD: {
		if (strcmp(k->name, "group.instance.id") == 0) {
			const char *why = instance_id_problem(v, n);
			if (why)
				return BAD("Invalid value %s for configuration %s: %s", text,
					   k->name, why);
		}
		/* Kafka keeps strings trimmed as well */
		char *copy = strndup(v, n);
		if (!copy)
			return COHORT_ERR__NOMEM;
		free(*FIELD(char *));
		*FIELD(char *) = copy;
		return COHORT_OK;
	}
	case K_SERVERS: {
		servers_acc acc = {0};
		/* "" is the default (no servers); a consumer refuses to start on it */
		int cnt = n == 0 ? 0 : each_item(v, n, add_server, &acc);
		if (acc.oom) {
			free_addrs(acc.a, acc.n);
			return COHORT_ERR__NOMEM;
		}
		if (cnt < 0) {
			free_addrs(acc.a, acc.n);
			return BAD("Invalid value %s for configuration %s: expected a list of "
				   "host:port (Invalid url in bootstrap.servers)",
				   text, k->name);
		}
		free_addrs(conf->bootstrap, conf->nbootstrap);
		conf->bootstrap = acc.a;
		conf->nbootstrap = acc.n;
		return COHORT_OK;
	}
	case K_ASSIGNORS: {
		assignors_acc acc = {0};
		int cnt = each_item(v, n, add_assignor, &acc);
		if (cnt <= 0)
			return BAD("Invalid value %s for configuration %s: %s", text, k->name,
				   acc.dup ? "duplicate assignor"
					   : "expected a list of range, roundrobin, sticky, "
					     "cooperative-sticky (or their Java class names)");
		memcpy(conf->assignors, acc.k, sizeof(acc.k));
		conf->nassignors = acc.n;
		return COHORT_OK;
	}
	case K_RESET:
		if (n == 6 && strncasecmp(v, "latest", n) == 0)
			conf->auto_offset_reset = CL_RESET_LATEST;
		else if (n == 8 && strncasecmp(v, "earliest", n) == 0)
			conf->auto_offset_reset = CL_RESET_EARLIEST;
		else if (n == 4 && strncasecmp(v, "none", n) == 0)
			conf->auto_offset_reset = CL_RESET_NONE;
		else if (n > 12 && strncasecmp(v, "by_duration:", 12) == 0)
			return BAD("Invalid value %s for configuration %s: by_duration is not "
				   "supported by libcohort yet",
				   text, k->name);
		else
			return BAD("Invalid value %s for configuration %s: Invalid value `%s` for "
				   "auto.offset.reset. Valid values are earliest, latest, none and "
				   "by_duration:PnDTnHnMn.nS",
				   text, k->name, text);
		return COHORT_OK;
	case K_ISOLATION:
		if (n == 16 && strncasecmp(v, "read_uncommitted", n) == 0) {
			conf->read_committed = false;
			return COHORT_OK;
		}
		if (n == 14 && strncasecmp(v, "read_committed", n) == 0) {
			conf->read_committed = true;
			return COHORT_OK;
		}
		return BAD("Invalid value %s for configuration %s: String must be one of "
			   "(case insensitive): read_uncommitted, read_committed",
			   text, k->name);
	case K_PROTOCOL:
		if (n == 7 && strncasecmp(v, "classic", n) == 0) {
			conf->group_protocol_consumer = false;
			return COHORT_OK;
		}
		if (n == 8 && strncasecmp(v, "consumer", n) == 0) {
			conf->group_protocol_consumer = true;
			return COHORT_OK;
		}
		return BAD("Invalid value %s for configuration %s: String must be one of "
			   "(case insensitive): CLASSIC, CONSUMER",
			   text, k->name);
	case K_SECURITY: {
		static const char *const names[] = {"PLAINTEXT", "SSL", "SASL_PLAINTEXT",
						    "SASL_SSL"};
		for (int i = 0; i < 4; i++)
			if (strlen(names[i]) == n && strncasecmp(v, names[i], n) == 0) {
				conf->security_protocol = (cl_security_protocol)i;
				return COHORT_OK;
			}
		return BAD("Invalid value %s for configuration %s: String must be one of "
			   "(case insensitive): PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL",
			   text, k->name);
	}
	case K_TLS_PROTOS: {
		unsigned mask = 0;
		int cnt = each_item(v, n, add_tls_protocol, &mask);
		if (cnt <= 0)
			return BAD("Invalid value %s for configuration %s: expected a list of "
				   "TLSv1.2, TLSv1.3 (libcohort speaks no older TLS)",
				   text, k->name);
		conf->ssl_protocols = mask;
		return COHORT_OK;
	}
	case K_ACKS:
		if ((n == 3 && strncasecmp(v, "all", n) == 0) ||
		    (n == 2 && memcmp(v, "-1", 2) == 0))
			conf->acks = -1;
		else if (n == 1 && (v[0] == '0' || v[0] == '1'))
			conf->acks = (int16_t)(v[0] - '0');
		else
			return BAD("Invalid value %s for configuration %s: String must be one of: "
				   "all, -1, 0, 1",
				   text, k->name);
		return COHORT_OK;
	case K_CODEC:
		for (int i = 0; i < (int)(sizeof(codec_names) / sizeof(codec_names[0])); i++)
			if (strlen(codec_names[i]) == n && memcmp(codec_names[i], v, n) == 0) {
				conf->compression = CH_COMPRESSION_NONE + i;
				return COHORT_OK;
			}
		return BAD("Invalid value %s for configuration %s: String must be one of: none, "
			   "gzip, snappy, lz4, zstd",
			   text, k->name);
	case K_PARTITIONER: {
		int p = cl_partitioner_by_name(v, n);
		if (p < 0)
			return BAD("Invalid value %s for configuration %s: String must be one of: "
				   "murmur2_random, murmur2, consistent_random, consistent, "
				   "fnv1a_random, fnv1a, random",
				   text, k->name);
		conf->partitioner = p;
		return COHORT_OK;
	}
	}
	return BAD("%s: internal error", k->name);
}

/* The canonical text of key k into b (size bytes); returns the length it
 * needs without the NUL (snprintf's contract). */
static size_t
get_value(const cohort_conf *conf, const kdef *k, char *b, size_t size)
{
	const void *f = (const char *)conf + k->off;
	switch (k->kind) {
	case K_INT:
		return (size_t)snprintf(b, size, "%" PRId32, *(const int32_t *)f);
	case K_LONG:
		return (size_t)snprintf(b, size, "%" PRId64, *(const int64_t *)f);
	case K_BOOL:
		return (size_t)snprintf(b, size, "%s", *(const bool *)f ? "true" : "false");
	case K_STRING:
	case K_NSTRING: {
		const char *s = *(char *const *)f;
		return (size_t)snprintf(b, size, "%s", s ? s : "");
	}
	case K_SERVERS: {
		size_t len = 0;
		for (int i = 0; i < conf->nbootstrap; i++) {
			const cl_addr *a = &conf->bootstrap[i];
			bool v6 = strchr(a->host, ':') != NULL;
			len += (size_t)snprintf(len < size ? b + len : NULL,
						len < size ? size - len : 0, "%s%s%s%s:%d",
						i ? "," : "", v6 ? "[" : "", a->host, v6 ? "]" : "",
						a->port);
		}
		if (size && len == 0)
			b[0] = 0;
		return len;
	}
	case K_ASSIGNORS: {
		size_t len = 0;
		for (int i = 0; i < conf->nassignors; i++)
			len += (size_t)snprintf(len < size ? b + len : NULL,
						len < size ? size - len : 0, "%s%s", i ? "," : "",
						ch_assign_name(conf->assignors[i]));
		return len;
	}
	case K_RESET: {
		static const char *names[] = {"latest", "earliest", "none"};
		return (size_t)snprintf(b, size, "%s", names[conf->auto_offset_reset]);
	}
	case K_PROTOCOL:
		return (size_t)snprintf(b, size, "%s",
					conf->group_protocol_consumer ? "consumer" : "classic");
	case K_ISOLATION:
		return (size_t)snprintf(b, size, "%s",
					conf->read_committed ? "read_committed"
							     : "read_uncommitted");
	case K_SECURITY: {
		static const char *const names[] = {"PLAINTEXT", "SSL", "SASL_PLAINTEXT",
						    "SASL_SSL"};
		return (size_t)snprintf(b, size, "%s", names[conf->security_protocol]);
	}
	case K_PASSWORD:
		return (size_t)snprintf(b, size, "%s", *(char *const *)f ? "[hidden]" : "");
	case K_TLS_PROTOS:
		return (size_t)snprintf(
			b, size, "%s%s%s", (conf->ssl_protocols & CL_TLS_V1_2) ? "TLSv1.2" : "",
			conf->ssl_protocols == (CL_TLS_V1_2 | CL_TLS_V1_3) ? "," : "",
			(conf->ssl_protocols & CL_TLS_V1_3) ? "TLSv1.3" : "");
	case K_ACKS:
		return conf->acks < 0 ? (size_t)snprintf(b, size, "all")
				      : (size_t)snprintf(b, size, "%d", conf->acks);
	case K_CODEC:
		return (size_t)snprintf(b, size, "%s", codec_names[conf->compression]);
	case K_PARTITIONER:
		return (size_t)snprintf(b, size, "%s",
					cl_partitioner_name((cl_partitioner)conf->partitioner));
	}
	return 0;
}

bool
cl_conf_init_defaults(cohort_conf *conf)
{
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		if (!keys[i].dflt)
			continue;
		if (set_value(conf, &keys[i], keys[i].dflt, NULL, 0) != COHORT_OK) {
			cl_conf_release(conf);
			return false;
		}
	}
	return true;
}

void
cl_conf_release(cohort_conf *conf)
{
	free_addrs(conf->bootstrap, conf->nbootstrap);
	free(conf->client_id);
	free(conf->client_rack);
	free(conf->group_id);
	free(conf->group_instance_id);
	free(conf->group_remote_assignor);
	free(conf->listener_copy);
	for (int i = 0; i < CL_SEC__N; i++)
		free(conf->sec[i]);
	memset(conf, 0, sizeof(*conf));
}

static bool
dup_str(char **dst, const char *src)
{
	*dst = src ? strdup(src) : NULL;
	return !src || *dst;
}

bool
cl_conf_copy(cohort_conf *dst, const cohort_conf *src)
{
	*dst = *src;
	dst->bootstrap = NULL;
	dst->nbootstrap = 0;
	dst->client_id = dst->client_rack = dst->group_id = dst->group_instance_id = NULL;
	dst->group_remote_assignor = NULL;
	dst->listener_copy = NULL;
	dst->cb.rebalance_listener = NULL;
	memset(dst->sec, 0, sizeof(dst->sec));
	bool ok = true;
	for (int i = 0; ok && i < CL_SEC__N; i++)
		ok = dup_str(&dst->sec[i], src->sec[i]);
	ok = ok && dup_str(&dst->client_id, src->client_id) &&
	     dup_str(&dst->client_rack, src->client_rack) &&
	     dup_str(&dst->group_id, src->group_id) &&
	     dup_str(&dst->group_instance_id, src->group_instance_id) &&
	     dup_str(&dst->group_remote_assignor, src->group_remote_assignor);
	if (ok && src->nbootstrap) {
		dst->bootstrap = calloc((size_t)src->nbootstrap, sizeof(cl_addr));
		ok = dst->bootstrap != NULL;
		for (int i = 0; ok && i < src->nbootstrap; i++) {
			dst->bootstrap[i].port = src->bootstrap[i].port;
			ok = dup_str(&dst->bootstrap[i].host, src->bootstrap[i].host);
			dst->nbootstrap = i + 1;
		}
	}
	if (!ok) {
		cl_conf_release(dst);
		return false;
	}
	return true;
}

bool
cl_conf_user_set(const cohort_conf *conf, const char *key)
{
	const kdef *k = find_key(key);
	return k && (conf->user_set & ((uint64_t)1 << (k - keys)));
}

/* ---- public calls ----------------------------------------------------- */

cohort_conf *
cohort_conf_new(void)
{
	cohort_conf *conf = calloc(1, sizeof(*conf));
	if (conf && !cl_conf_init_defaults(conf)) {
		free(conf);
		return NULL;
	}
	return conf;
}

void
cohort_conf_free(cohort_conf *conf)
{
	if (!conf)
		return;
	cl_conf_release(conf);
	free(conf);
}

cohort_conf *
cohort_conf_dup(const cohort_conf *conf)
{
	cohort_conf *c = calloc(1, sizeof(*c));
	if (c && !cl_conf_copy(c, conf)) {
		free(c);
		return NULL;
	}
	return c;
}

cohort_err
cohort_conf_set(cohort_conf *conf, const char *key, const char *value, char *errstr,
		size_t errstr_size)
{
	if (!conf || !key) {
		cl_errstr(errstr, errstr_size, "cohort_conf_set: NULL %s", conf ? "key" : "conf");
		return COHORT_ERR__INVALID_ARG;
	}
	const kdef *k = find_key(key);
	if (!k) {
		cl_errstr(errstr, errstr_size, "Unknown configuration key '%s'", key);
		return COHORT_ERR__BAD_CONF;
	}
	cohort_err err = set_value(conf, k, value, errstr, errstr_size);
	if (err == COHORT_OK) {
		uint64_t bit = (uint64_t)1 << (k - keys);
		if (value)
			conf->user_set |= bit;
		else
			conf->user_set &= ~bit;
	}
	return err;
}

cohort_err
cohort_conf_get(const cohort_conf *conf, const char *key, char *buf, size_t size, size_t *needed)
{
	if (!conf || !key || (!buf && size))
		return COHORT_ERR__INVALID_ARG;
	const kdef *k = find_key(key);
	if (!k)
		return COHORT_ERR__BAD_CONF;
	size_t len = get_value(conf, k, NULL, 0);
	if (needed)
		*needed = len + 1;
	if (len + 1 > size)
		return COHORT_ERR__INVALID_ARG;
	get_value(conf, k, buf, size);
	return COHORT_OK;
}
