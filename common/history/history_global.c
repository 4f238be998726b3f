/* history_global.c - the process's one history (history_init ...):
 * iostagectld's, or iostaged's own when the site runs no service; opened
 * from the configuration, read-only or disabled (with the reason kept)
 * when the database is damaged, and the retention applied from the
 * filing path at most once an hour.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "common/base/errmsg.h"
#include "common/base/log.h"
#include "common/config/conf.h"
#include "common/history/history.h"

#define HISTORY_EXPIRE_EVERY_S 3600
#define HISTORY_EXPIRE_MAX 100000 /* per pass from the filing path */

static struct history *g_history;
static const struct conf *g_conf;
static char g_why[CONF_ERR_MAX] = "not started";
static pthread_mutex_t g_expire_lock = PTHREAD_MUTEX_INITIALIZER;
static time_t g_expired_at;

const struct conf *history_conf(void)
{
	return g_conf;
}

static void history_apply_retention(void)
{
	char err[CONF_ERR_MAX];
	unsigned deleted = 0;
	time_t now = time(NULL);

	if (!g_history || history_is_read_only(g_history) ||
	    !g_conf->history_retention)
		return;
	if (pthread_mutex_trylock(&g_expire_lock) != 0)
		return; /* another thread is at it */
	if (g_expired_at && now - g_expired_at < HISTORY_EXPIRE_EVERY_S)
		goto out;
	g_expired_at = now;
	if (history_expire(g_history,
			   (double)now - (double)g_conf->history_retention,
			   HISTORY_EXPIRE_MAX, &deleted, err, sizeof(err)) < 0)
		log_warningx("%s", err);
	else if (deleted)
		log_info("history: %u job record%s older than "
			 "HistoryRetention removed",
			 deleted, deleted == 1 ? "" : "s");
out:
	pthread_mutex_unlock(&g_expire_lock);
}

void history_dir(const struct conf *conf, char *buf, size_t buflen)
{
	snprintf(buf, buflen, "%s/%s",
		 strcmp(conf->state_dir, "/") ? conf->state_dir : "",
		 HISTORY_DIR_NAME);
}

int history_make_state_dir(const struct conf *conf)
{
	char buf[CONF_PATH_MAX];

	snprintf(buf, sizeof(buf), "%s", conf->state_dir);
	for (char *p = buf + 1;; p++) {
		if (*p == '/' || !*p) {
			char c = *p;

			*p = '\0';
			if (mkdir(buf, 0755) < 0 && errno != EEXIST)
				return -1;
			*p = c;
			if (!c)
				return 0;
		}
	}
}

void history_init_remote(const struct conf *conf)
{
	g_conf = conf;
	snprintf(g_why, sizeof(g_why),
		 "kept by iostagectld at %s port %u (ControllerHost=), not on "
		 "this node",
		 conf->controller_host, conf->controller_port);
	log_info("history: %s", g_why);
}

void history_init(const struct conf *conf)
{
	char dir[CONF_PATH_MAX + 16], err[CONF_ERR_MAX];

	g_conf = conf;
	history_dir(conf, dir, sizeof(dir));
	g_history = history_open(dir, HISTORY_READ_WRITE, err, sizeof(err));
	if (!g_history) {
		char ro_err[CONF_ERR_MAX];

		/* Reading may still work where writing does not (e.g. a
		 * damaged WAL): recorded jobs stay visible. */
		g_history = history_open(dir, HISTORY_READ_ONLY, ro_err,
					 sizeof(ro_err));
		if (g_history) {
			snprintf(g_why, sizeof(g_why), "%s", err);
			log_errorx("%s; opened read-only: recorded jobs stay "
				   "readable, new ones are not filed; staging "
				   "goes on (%s --repair-history "
				   "recovers it)",
				   err, program_invocation_short_name);
			return;
		}
		snprintf(g_why, sizeof(g_why), "%s", err);
		log_errorx("history disabled: %s; staging goes on, nothing "
			   "there was changed (%s --repair-history "
			   "recovers it)",
			   err, program_invocation_short_name);
		return;
	}
	g_why[0] = '\0';
	log_info("history: %s open", dir);
	history_apply_retention();
}

void history_fini(void)
{
	history_close(g_history);
	g_history = NULL;
	snprintf(g_why, sizeof(g_why), "stopped");
}

struct history *history_db(char *why, size_t whylen)
{
	if (!g_history)
		snprintf(why, whylen, "history disabled: %s", g_why);
	return g_history;
}

int history_record_job(const cJSON *record, char *err, size_t errlen)
{
	struct history *h = history_db(err, errlen);

	if (!h)
		return -1;
	if (history_is_read_only(h))
		return errmsg_fail(err, errlen, EROFS, "history read-only: %s",
				   g_why);
	if (history_put(h, record, HISTORY_PUT_SYNC, err, errlen) < 0)
		return -1;
	history_apply_retention();
	return 0;
}
