/* libiostage.c - phase markers and process identity for applications
 * (shim/iostage.h), also used by `iostage phase`.
 *
 * The daemon's socket is $IOSTAGE_SOCKET (the SPANK plugin sets it in the
 * job's tasks), else the SocketPath of $IOSTAGE_CONF or of the default
 * iostage.conf. A preloaded I/O shim that defines iostage_shim_phase() is
 * told about each marker, looked up at run time so that libiostage works
 * with or without it.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include <cJSON.h>
#include <pmix.h>

#include "common/config/conf.h"
#include "common/config/profile.h"
#include "common/net/proto.h"
#include "common/telemetry/telrec.h"
#include "shim/iostage.h"
#include "shim/slurmstep.h"

#define LIBIOSTAGE_TIMEOUT_MS 2000

static pthread_mutex_t id_lock = PTHREAD_MUTEX_INITIALIZER;
static struct iostage_identity cached;
static int have_cached;
/* Whether cached.step names a step (its 0 also means "unknown"). */
static int cached_step_known;

/* A process that forks while another of its threads holds id_lock (a
 * DataLoader forking workers while a thread marks a phase) would leave
 * the child a lock nobody unlocks: take it across fork() so that the
 * child starts with it free. */
static void fork_prepare(void)
{
	pthread_mutex_lock(&id_lock);
}

static void fork_release(void)
{
	pthread_mutex_unlock(&id_lock);
}

__attribute__((constructor)) static void libiostage_init(void)
{
	pthread_atfork(fork_prepare, fork_release, fork_release);
}

/* An unsigned decimal environment variable, or DFLT. */
static int64_t env_num(const char *name, int64_t dflt)
{
	const char *v = getenv(name);
	char *end;
	long long n;

	if (!v || !*v)
		return dflt;
	errno = 0;
	n = strtoll(v, &end, 10);
	if (errno || *end || n < 0)
		return dflt;
	return n;
}

/* Rank, local rank and host from the PMIx server; 0 or -1. */
static int from_pmix(struct iostage_identity *id)
{
	pmix_proc_t me, wild;
	pmix_value_t *val = NULL;

	if (PMIx_Init(&me, NULL, 0) != PMIX_SUCCESS)
		return -1;
	id->rank = me.rank;
	PMIX_LOAD_PROCID(&wild, me.nspace, me.rank);
	if (PMIx_Get(&wild, PMIX_LOCAL_RANK, NULL, 0, &val) == PMIX_SUCCESS &&
	    val) {
		if (val->type == PMIX_UINT16)
			id->local_rank = val->data.uint16;
		PMIX_VALUE_RELEASE(val);
		val = NULL;
	}
	if (PMIx_Get(&wild, PMIX_HOSTNAME, NULL, 0, &val) == PMIX_SUCCESS &&
	    val) {
		if (val->type == PMIX_STRING && val->data.string)
			snprintf(id->node, sizeof(id->node), "%s",
				 val->data.string);
		PMIX_VALUE_RELEASE(val);
	}
	snprintf(id->source, sizeof(id->source), "pmix");
	/* Reference counted: an MPI library's own PMIx_Init stays valid. */
	PMIx_Finalize(NULL, 0);
	return 0;
}

int iostage_identity(struct iostage_identity *ret)
{
	struct iostage_identity id;
	const char *node;
	long long step;

	if (!ret) {
		errno = EINVAL;
		return -1;
	}
	pthread_mutex_lock(&id_lock);
	if (have_cached) {
		*ret = cached;
		pthread_mutex_unlock(&id_lock);
		return 0;
	}
	memset(&id, 0, sizeof(id));
	id.job = (uint32_t)env_num("SLURM_JOB_ID", 0);
	if (!id.job || env_num("SLURM_JOB_ID", 0) > UINT32_MAX) {
		pthread_mutex_unlock(&id_lock);
		errno = ENOENT;
		return -1;
	}
	step = slurmstep_from_env(getenv("SLURM_JOB_ID"),
				  getenv("IOSTAGE_STEP"),
				  getenv("SLURM_STEP_ID"),
				  getenv("ENVIRONMENT"));
	id.step = step >= 0 ? (uint32_t)step : 0;
	cached_step_known = step >= 0;
	id.rank = env_num("SLURM_PROCID", -1);
	id.local_rank = env_num("SLURM_LOCALID", -1);
	node = getenv("SLURMD_NODENAME");
	snprintf(id.node, sizeof(id.node), "%s", node ? node : "");
	snprintf(id.source, sizeof(id.source), "slurm");
	if (getenv("PMIX_NAMESPACE")) {
		struct iostage_identity p = id;

		if (from_pmix(&p) == 0)
			id = p;
	}
	if (!id.node[0])
		gethostname(id.node, sizeof(id.node) - 1);
	cached = id;
	have_cached = 1;
	*ret = id;
	pthread_mutex_unlock(&id_lock);
	return 0;
}

static void socket_path(char *buf, size_t len)
{
	const char *s = getenv("IOSTAGE_SOCKET");
	const char *conf_path = getenv("IOSTAGE_CONF");
	char err[CONF_ERR_MAX];
	struct conf *conf;

	if (s && *s) {
		snprintf(buf, len, "%s", s);
		return;
	}
	conf = malloc(sizeof(*conf));
	if (conf) {
		conf_set_defaults(conf);
		if (conf_load(conf_path ? conf_path : IOSTAGE_CONF_PATH, conf,
			      err, sizeof(err)) < 0)
			conf_set_defaults(conf);
		snprintf(buf, len, "%s", conf->socket_path);
		free(conf);
		return;
	}
	snprintf(buf, len, "/run/iostage/iostaged.sock");
}

typedef void (*shim_phase_fn)(const char *name, int begin);

int iostage_phase(const char *name, int begin, char *err, size_t errlen)
{
	char sock[CONF_SOCKET_MAX], why[CONF_ERR_MAX];
	struct iostage_identity id;
	struct timeval tv;
	shim_phase_fn shim;
	const cJSON *e;
	cJSON *req, *reply;
	int rc = -1, saved;

	if (!telrec_phase_name_ok(name)) {
		snprintf(err, errlen,
			 "'%s' is not a phase name ([A-Za-z0-9_.-], 1 to %d "
			 "characters)",
			 name ? name : "(null)", TELREC_PHASE_NAME_MAX - 1);
		errno = EINVAL;
		return -1;
	}
	if (iostage_identity(&id) < 0) {
		snprintf(err, errlen, "not in a Slurm job (no SLURM_JOB_ID)");
		errno = ENOENT;
		return -1;
	}
	/* The preloaded shim (if any) attributes this process's calls. */
	*(void **)&shim = dlsym(RTLD_DEFAULT, "iostage_shim_phase");
	if (shim)
		shim(name, begin);
	gettimeofday(&tv, NULL);
	req = cJSON_CreateObject();
	if (!req) {
		snprintf(err, errlen, "out of memory");
		errno = ENOMEM;
		return -1;
	}
	cJSON_AddStringToObject(req, "op", "phase");
	cJSON_AddNumberToObject(req, "job", id.job);
	cJSON_AddStringToObject(req, "name", name);
	cJSON_AddStringToObject(req, "event", begin ? "begin" : "end");
	cJSON_AddNumberToObject(req, "ts", tv.tv_sec + tv.tv_usec / 1e6);
	/* Unknown (not 0) when the environment names no step. */
	pthread_mutex_lock(&id_lock);
	if (cached_step_known)
		cJSON_AddNumberToObject(req, "step", id.step);
	pthread_mutex_unlock(&id_lock);
	if (id.rank >= 0)
		cJSON_AddNumberToObject(req, "rank", (double)id.rank);
	if (id.local_rank >= 0)
		cJSON_AddNumberToObject(req, "local_rank",
					(double)id.local_rank);
	cJSON_AddStringToObject(req, "node", id.node);
	cJSON_AddStringToObject(req, "identity", id.source);
	socket_path(sock, sizeof(sock));
	reply = proto_call(sock, req, LIBIOSTAGE_TIMEOUT_MS, why, sizeof(why));
	saved = errno;
	cJSON_Delete(req);
	if (!reply) {
		snprintf(err, errlen, "%s", why);
		errno = saved ? saved : ECONNREFUSED;
		return -1;
	}
	if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(reply, "ok"))) {
		rc = 0;
	} else {
		e = cJSON_GetObjectItemCaseSensitive(reply, "error");
		snprintf(err, errlen, "%s",
			 cJSON_IsString(e) ? e->valuestring
					   : "iostaged refused the marker");
		errno = cJSON_IsString(e) &&
				strstr(e->valuestring, "permission denied")
			    ? EPERM
			    : EPROTO;
	}
	cJSON_Delete(reply);
	return rc;
}

int iostage_phase_begin(const char *name)
{
	char err[CONF_ERR_MAX];

	return iostage_phase(name, 1, err, sizeof(err));
}

int iostage_phase_end(const char *name)
{
	char err[CONF_ERR_MAX];

	return iostage_phase(name, 0, err, sizeof(err));
}

/* Is NAME a dataset or output name as --io-profile allows one? */
static int dataset_name_ok(const char *name)
{
	size_t n = strnlen(name, PROFILE_NAME_MAX);

	if (n == 0 || n >= PROFILE_NAME_MAX)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '-' || c == '_'))
			return 0;
	}
	return 1;
}

/* The value of PREFIX (NAME NULL or "") or PREFIX_<NAME> into BUF, with
 * the plugin's own rule for the variable's name (profile_env_name). */
static int job_path(const char *prefix, const char *name, char *buf,
		    size_t buflen)
{
	char var[sizeof("IOSTAGE_OUTPUT_") + PROFILE_NAME_MAX];
	char upper[PROFILE_NAME_MAX];
	const char *v;

	if (!buf || !buflen) {
		errno = EINVAL;
		return -1;
	}
	if (name && *name) {
		if (!dataset_name_ok(name)) {
			errno = EINVAL;
			return -1;
		}
		profile_env_name(name, upper, sizeof(upper));
		snprintf(var, sizeof(var), "%s_%s", prefix, upper);
	} else {
		snprintf(var, sizeof(var), "%s", prefix);
	}
	v = getenv(var);
	if (!v || !*v) {
		errno = ENOENT;
		return -1;
	}
	if (strlen(v) >= buflen) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(buf, v, strlen(v) + 1);
	return 0;
}

int iostage_data_path(const char *name, char *buf, size_t buflen)
{
	return job_path("IOSTAGE_DATA", name, buf, buflen);
}

int iostage_output_path(const char *name, char *buf, size_t buflen)
{
	return job_path("IOSTAGE_OUTPUT", name, buf, buflen);
}
