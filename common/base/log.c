/* log.c - stderr or syslog logging with a program prefix. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>

#include "common/base/log.h"

static char log_prefix[32] = "iostage";
static bool log_to_syslog;
static enum log_level log_max = LOG_LEVEL_INFO;

void log_init(const char *prefix, bool to_syslog, enum log_level max_level)
{
	if (prefix)
		snprintf(log_prefix, sizeof(log_prefix), "%s", prefix);
	if (log_to_syslog && !to_syslog)
		closelog();
	log_to_syslog = to_syslog;
	log_max = max_level;
	if (to_syslog)
		openlog(log_prefix, LOG_PID | LOG_NDELAY, LOG_DAEMON);
}

static int syslog_priority(enum log_level level)
{
	switch (level) {
	case LOG_LEVEL_ERROR:
		return LOG_ERR;
	case LOG_LEVEL_WARNING:
		return LOG_WARNING;
	case LOG_LEVEL_INFO:
		return LOG_INFO;
	case LOG_LEVEL_DEBUG:
		return LOG_DEBUG;
	}
	return LOG_INFO;
}

/* One formatted line; with_errno appends ": strerror(saved errno)". */
static void log_emit(enum log_level level, int with_errno, const char *fmt,
		     va_list ap)
{
	int saved_errno = errno;
	char msg[2048];
	size_t len;

	if (level > log_max) {
		errno = saved_errno;
		return;
	}
	vsnprintf(msg, sizeof(msg), fmt, ap);
	len = strlen(msg);
	if (with_errno && len < sizeof(msg))
		snprintf(msg + len, sizeof(msg) - len, ": %s",
			 strerror(saved_errno));
	if (log_to_syslog)
		syslog(syslog_priority(level), "%s", msg);
	else
		fprintf(stderr, "%s: %s%s\n", log_prefix,
			level == LOG_LEVEL_ERROR     ? "error: "
			: level == LOG_LEVEL_WARNING ? "warning: "
						     : "",
			msg);
	errno = saved_errno;
}

#define LOG_FUNC(fn, level, with_errno)                                        \
	void fn(const char *fmt, ...)                                          \
	{                                                                      \
		va_list ap;                                                    \
		va_start(ap, fmt);                                             \
		log_emit(level, with_errno, fmt, ap);                          \
		va_end(ap);                                                    \
	}

LOG_FUNC(log_error, LOG_LEVEL_ERROR, 1)
LOG_FUNC(log_errorx, LOG_LEVEL_ERROR, 0)
LOG_FUNC(log_warning, LOG_LEVEL_WARNING, 1)
LOG_FUNC(log_warningx, LOG_LEVEL_WARNING, 0)
LOG_FUNC(log_info, LOG_LEVEL_INFO, 0)
LOG_FUNC(log_debug, LOG_LEVEL_DEBUG, 0)

#ifdef IOSTAGE_SANITIZE_LOG
/* SANITIZE=1 builds (make check-sanitize): every report, of every program
 * and of every process it starts (iostaged's workers get a clean
 * environment, slurmd the plugin), goes to a file of its own in one
 * directory, which tests/sanitize.sh checks is empty at the end. log.o is
 * in every program and in the plugin. ASAN_OPTIONS/UBSAN_OPTIONS in the
 * environment still override these. */
const char *__asan_default_options(void);
const char *__ubsan_default_options(void);

const char *__asan_default_options(void)
{
	/* verify_asan_link_order=0: a traced job runs our programs (iostage
	 * phase) under LD_PRELOAD of the shim, which is not sanitized. */
	return "log_path=" IOSTAGE_SANITIZE_LOG
	       "/asan:detect_leaks=1:verify_asan_link_order=0:"
	       "print_suppressions=0";
}

/* Leaks that are not ours: libpmix keeps a few strings of its
 * initialization for the process's life (iostage phase in a PMIx job). */
const char *__lsan_default_suppressions(void);

const char *__lsan_default_suppressions(void)
{
	return "leak:libpmix.so\n";
}

const char *__ubsan_default_options(void)
{
	return "log_path=" IOSTAGE_SANITIZE_LOG "/ubsan:print_stacktrace=1";
}
#endif
