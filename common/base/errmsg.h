/* errmsg.h - the one-line error convention of the common library.
 *
 * Functions that can fail take (char *err, size_t errlen) and, on failure,
 * leave one line there saying what, where and why, set errno and return -1.
 */
#ifndef IOSTAGE_ERRMSG_H
#define IOSTAGE_ERRMSG_H

#include <stddef.h>

/* Format the message into ERR (if ERR and ERRLEN), set errno to ERRNUM,
 * return -1: `return errmsg_fail(err, errlen, EINVAL, "...", ...);` */
int errmsg_fail(char *err, size_t errlen, int errnum, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif /* IOSTAGE_ERRMSG_H */
