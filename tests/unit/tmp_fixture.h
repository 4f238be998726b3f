/* tmp_fixture.h - a test's directory directly under /tmp removed, with
 * everything in it, by the daemons' own rmtree_at (common/fs/rmtree.h).
 * rmtree_at takes a name under a directory fd, never a path, and does
 * not cross into a mount point: so /tmp is opened and the directory
 * named under it. Static inline, as the other fixtures. */
#ifndef IOSTAGE_TESTS_TMP_FIXTURE_H
#define IOSTAGE_TESTS_TMP_FIXTURE_H

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/fs/rmtree.h"

/* PATH ("/tmp/NAME") removed: 0, or -1 with errno and one line in ERR. */
static inline int tmp_remove(const char *path, char *err, size_t errlen)
{
	int tmp, r;

	if (strncmp(path, "/tmp/", 5) != 0 || !path[5] ||
	    strchr(path + 5, '/')) {
		snprintf(err, errlen,
			 "%.160s: not a directory right under /tmp", path);
		errno = EINVAL;
		return -1;
	}
	tmp = open("/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (tmp < 0) {
		snprintf(err, errlen, "/tmp: %s", strerror(errno));
		return -1;
	}
	r = rmtree_at(tmp, path + 5, err, errlen);
	close(tmp);
	return r;
}

#endif /* IOSTAGE_TESTS_TMP_FIXTURE_H */
