/* fuzz_outbox.c - an outbox entry left on disk (common/telemetry/outbox.c),
 * read by iostaged's forwarder after a restart: the file 5.node1.json holds the
 * input; outbox_list then outbox_read (which checks it) must give an entry or
 * refuse it (EINVAL: quarantined), and an entry it gives must pass
 * outbox_entry_check and write back with outbox_put. */
#include "tests/fuzz/fuzz.h"

#include <fcntl.h>

#include "common/telemetry/outbox.h"

static struct outbox *ob;
static char dir[CONF_PATH_MAX];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char err[CONF_ERR_MAX];

	(void)argc;
	(void)argv;
	snprintf(dir, sizeof(dir), "%s/outbox", fuzz_scratch());
	if (outbox_open(dir, &ob, NULL, err, sizeof(err)) < 0) {
		fprintf(stderr, "fuzz: %s\n", err);
		exit(2);
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[CONF_ERR_MAX], path[CONF_PATH_MAX + 32];
	struct outbox_item *items = NULL;
	size_t n = 0;
	int fd;

	snprintf(path, sizeof(path), "%s/5.node1.json", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, data, size) != (ssize_t)size)
		abort();
	close(fd);
	if (outbox_list(ob, &items, &n, err, sizeof(err)) < 0)
		abort();
	for (size_t i = 0; i < n; i++) {
		cJSON *e = outbox_read(ob, &items[i], err, sizeof(err));

		if (!e) {
			if (errno != EINVAL && errno != ENOENT)
				abort();
			continue;
		}
		if (outbox_entry_check(e, err, sizeof(err)) < 0 ||
		    (outbox_put(ob, e, err, sizeof(err)) < 0 &&
		     errno != EMSGSIZE)) {
			fprintf(stderr, "an entry outbox_read gave: %s\n", err);
			abort();
		}
		cJSON_Delete(e);
	}
	free(items);
	unlink(path);
	return 0;
}
