/* jobname.c - the job name sbatch will give a job (see jobname.h). */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/base/smallfile.h"
#include "common/config/jobname.h"

/* Copy the option value at P (up to whitespace or a quote pair) to buf. */
static bool take_value(const char *p, char *buf, size_t buflen)
{
	size_t n = 0;
	char quote = 0;

	while (*p == ' ' || *p == '\t' || *p == '=')
		p++;
	if (*p == '"' || *p == '\'')
		quote = *p++;
	while (*p && *p != '\n' && n + 1 < buflen &&
	       (quote ? *p != quote : !isspace((unsigned char)*p)))
		buf[n++] = *p++;
	buf[n] = '\0';
	return n > 0;
}

bool jobname_from_script_text(const char *text, char *buf, size_t buflen)
{
	const char *line = text;
	bool found = false;
	char val[JOBNAME_MAX];

	if (!text || !buf || !buflen)
		return false;
	for (; line && *line;
	     line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
		const char *p = line;

		while (*p == ' ' || *p == '\t')
			p++;
		if (*p == '\n' || *p == '\r')
			continue;
		if (*p != '#')
			break; /* sbatch stops at the first command */
		if (strncmp(p, "#SBATCH", 7) != 0)
			continue;
		p += 7;
		while (*p == ' ' || *p == '\t')
			p++;
		if (strncmp(p, "--job-name", 10) == 0 &&
		    (p[10] == '=' || p[10] == ' ' || p[10] == '\t'))
			p += 10;
		else if (strncmp(p, "-J", 2) == 0)
			p += 2;
		else
			continue;
		if (take_value(p, val, sizeof(val))) {
			snprintf(buf, buflen, "%s", val);
			found = true;
		}
	}
	return found;
}

int jobname_from_script(const char *script, char *buf, size_t buflen)
{
	const char *base = strrchr(script, '/');
	char reason[256], *text;

	snprintf(buf, buflen, "%s", base ? base + 1 : script);
	text = smallfile_read(script, JOBNAME_SCRIPT_MAX, reason,
			      sizeof(reason));
	if (!text)
		return -1;
	jobname_from_script_text(text, buf, buflen);
	free(text);
	return 0;
}

/* Is PATH a readable file starting with "#!" (a batch script)? */
static bool is_script(const char *path)
{
	char head[2];
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	bool yes;

	if (fd < 0)
		return false;
	yes = read(fd, head, 2) == 2 && head[0] == '#' && head[1] == '!';
	close(fd);
	return yes;
}

void jobname_from_argv(int argc, char *const *argv, char *name, size_t namelen,
		       char *script, size_t scriptlen, bool *ret_wrap)
{
	name[0] = '\0';
	script[0] = '\0';
	*ret_wrap = false;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "-J") || !strcmp(a, "--job-name")) {
			if (i + 1 < argc)
				snprintf(name, namelen, "%s", argv[++i]);
		} else if (!strncmp(a, "--job-name=", 11)) {
			snprintf(name, namelen, "%s", a + 11);
		} else if (!strncmp(a, "-J", 2)) {
			snprintf(name, namelen, "%s", a + 2);
		} else if (!strcmp(a, "--wrap") || !strncmp(a, "--wrap=", 7)) {
			*ret_wrap = true;
		} else if (a[0] != '-' && is_script(a)) {
			snprintf(script, scriptlen, "%s", a);
			break; /* what follows are the script's arguments */
		}
	}
}
