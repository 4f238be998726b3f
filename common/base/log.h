/* log.h - one logger for every iostage program.
 *
 * Foreground programs log to stderr; the daemon switches to syslog once it
 * has detached. Every message carries the program's prefix ("iostaged: ").
 * Library code in common/ does not log: it returns errors to its caller.
 */
#ifndef IOSTAGE_LOG_H
#define IOSTAGE_LOG_H

#include <stdbool.h>

enum log_level {
	LOG_LEVEL_ERROR = 0,
	LOG_LEVEL_WARNING,
	LOG_LEVEL_INFO,
	LOG_LEVEL_DEBUG,
};

/* Set the prefix (copied, at most 31 chars), the destination and the most
 * verbose level printed. May be called again (e.g. after daemonizing). */
void log_init(const char *prefix, bool to_syslog, enum log_level max_level);

/* OpenBSD convention: the plain forms append ": strerror(errno)", the
 * x-forms do not. errno is preserved across every call. */
void log_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_errorx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_warning(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_warningx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif /* IOSTAGE_LOG_H */
