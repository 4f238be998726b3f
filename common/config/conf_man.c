/* conf_man.c - the key summary of iostage.conf(5), written from the key
 * table (conf_keys.h): each key, its default, the values it takes, who
 * reads it and its line of help.
 *
 * The page's prose (KEYS) says what each key is for at length and is
 * written by hand; the summary between the marks is this file's, so the
 * defaults and bounds the page shows are the parser's. `make man` splices
 * it in (scripts/confman.c); check_conf fails when the committed page
 * differs from what it would write.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/config/conf_keys.h"

/* TEXT as roff running text: backslashes escaped, a line never starting
 * with a control character. */
static int man_text(FILE *f, const char *text)
{
	if ((text[0] == '.' || text[0] == '\'') && fputs("\\&", f) == EOF)
		return -1;
	for (const char *p = text; *p; p++)
		if ((*p == '\\' ? fputs("\\e", f) : fputc(*p, f)) == EOF)
			return -1;
	return 0;
}

/* Defaults that are install paths: the man page's source names a plain
 * `make install`'s, which make install rewrites to the install's own
 * (INSTALL_SUBST), whatever prefix this build was made for. Here, not in
 * the key table, so that no program carries a path of another install
 * (tests/install/test_install.sh looks). */
static const struct {
	const char *key, *doc;
} install_paths[] = {
	{ "ProfileDir", "/etc/slurm/iostage.d" },
	{ "TraceLibrary", "/usr/local/lib/iostage/libiostage-preload.so" },
	{ "ViewProgram", "/usr/local/libexec/iostage/iostage-view" },
	{ "LocalReadLibrary",
	  "/usr/local/lib/iostage/libiostage-localread.so" },
};

static const char *default_doc(const struct conf_key *k)
{
	for (size_t i = 0; i < sizeof(install_paths) / sizeof(install_paths[0]);
	     i++)
		if (!strcmp(k->name, install_paths[i].key))
			return install_paths[i].doc;
	return k->def_doc ? k->def_doc : k->def ? k->def : "none";
}

/* One entry: ".TP", the key, its help, then "Default: D. Values: V. Read
 * by: S." WHERE is " (on a Tier line)" for a Tier attribute. */
static int man_key(FILE *f, const struct conf_key *k, const char *where)
{
	char values[512], scope[64];
	const char *def = default_doc(k);

	conf_key_values(k, values, sizeof(values));
	conf_scope_names(k->scope, scope, sizeof(scope));
	if (fprintf(f, ".TP\n.B %s%s\n", k->name, where) < 0 ||
	    man_text(f, k->help) < 0 || fputs(".\nDefault: ", f) == EOF ||
	    man_text(f, def) < 0 || fputs(". Values: ", f) == EOF ||
	    man_text(f, values) < 0 ||
	    fprintf(f, ". Read by: %s.\n", scope) < 0)
		return -1;
	return 0;
}

int conf_man_write(FILE *f)
{
	if (fputs(CONF_MAN_BEGIN ": written by `make man` from "
				 "common/config/conf_keys.c; change the table, "
				 "not these lines\n"
				 ".SH KEY SUMMARY\n"
				 "Every key with its default, the values it "
				 "takes and who reads it:\n"
				 ".I node\n"
				 "(iostaged, the Prolog and Epilog),\n"
				 ".I service\n"
				 "(iostagectld),\n"
				 ".I user\n"
				 "(the SPANK plugin and\n"
				 ".BR iostage (1)).\n",
		  f) == EOF)
		return -1;
	for (size_t i = 0; i < conf_nkeys; i++) {
		if (man_key(f, &conf_keys[i], "") < 0)
			return -1;
		if (conf_keys[i].type != CONF_T_LINE)
			continue;
		/* A line key's attributes follow it. */
		for (size_t a = 0; a < conf_ntier_attrs; a++)
			if (man_key(f, &conf_tier_attrs[a],
				    " (on a Tier line)") < 0)
				return -1;
	}
	return fputs(CONF_MAN_END "\n", f) == EOF ? -1 : 0;
}

/* The start of the line of PAGE that begins with MARK, from FROM on. */
static const char *man_find_line(const char *page, const char *from,
				 const char *mark)
{
	for (const char *p = from; (p = strstr(p, mark)); p++)
		if (p == page || p[-1] == '\n')
			return p;
	return NULL;
}

int conf_man_splice(const char *page, char **ret_page)
{
	const char *begin, *end;
	char *out = NULL;
	size_t outlen = 0;
	FILE *f;
	int saved;

	if (!page || !ret_page) {
		errno = EINVAL;
		return -1;
	}
	begin = man_find_line(page, page, CONF_MAN_BEGIN);
	end = begin ? man_find_line(page, begin, CONF_MAN_END) : NULL;
	if (!end) {
		errno = EINVAL;
		return -1;
	}
	end += strcspn(end, "\n");
	if (*end)
		end++;
	f = open_memstream(&out, &outlen);
	if (!f)
		return -1;
	if (fwrite(page, 1, (size_t)(begin - page), f) !=
		(size_t)(begin - page) ||
	    conf_man_write(f) < 0 || fputs(end, f) == EOF) {
		saved = errno;
		fclose(f);
		free(out);
		errno = saved ? saved : EIO;
		return -1;
	}
	if (fclose(f) == EOF) {
		saved = errno;
		free(out);
		errno = saved;
		return -1;
	}
	*ret_page = out;
	return 0;
}
