/* confman.c - `make man`: rewrite the key summary of iostage.conf(5) from
 * the key table (common/config/conf_man.c).
 *
 *   confman docs/man/iostage.conf.5
 *
 * The page is replaced whole (a temporary file renamed over it) and only
 * when it changes; the lines between the marks are the only ones touched.
 * Exits 0 (says whether it changed the page), 1 on any error.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/smallfile.h"
#include "common/config/conf_keys.h"

#define PAGE_MAX (1024 * 1024)

int main(int argc, char **argv)
{
	char reason[256], tmp[4096];
	char *page, *out = NULL;
	FILE *f;

	if (argc != 2) {
		fprintf(stderr, "usage: confman PAGE\n");
		return 1;
	}
	page = smallfile_read(argv[1], PAGE_MAX, reason, sizeof(reason));
	if (!page) {
		fprintf(stderr, "confman: %s: %s\n", argv[1], reason);
		return 1;
	}
	if (conf_man_splice(page, &out) < 0) {
		fprintf(stderr, "confman: %s: %s\n", argv[1],
			errno == EINVAL ? "no '" CONF_MAN_BEGIN
					  "' ... '" CONF_MAN_END "' lines"
					: strerror(errno));
		return 1;
	}
	if (strcmp(page, out) == 0) {
		printf("confman: %s is up to date\n", argv[1]);
		return 0;
	}
	snprintf(tmp, sizeof(tmp), "%s.tmp", argv[1]);
	f = fopen(tmp, "w");
	if (f && fputs(out, f) == EOF) {
		fclose(f);
		f = NULL;
	}
	if (!f || fclose(f) == EOF || rename(tmp, argv[1]) < 0) {
		fprintf(stderr, "confman: %s: %s\n", tmp, strerror(errno));
		remove(tmp);
		return 1;
	}
	printf("confman: %s: key summary rewritten\n", argv[1]);
	free(page);
	free(out);
	return 0;
}
