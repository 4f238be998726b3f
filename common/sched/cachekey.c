/* cachekey.c - the names of cache entries (see cachekey.h). */
#include <stdio.h>

#include <xxhash.h>

#include "common/config/conf.h"
#include "common/sched/cachekey.h"

/* K of the text "PREFIX:SRC" (a source longer than any path the config
 * allows is cut, as it always was: such a source is refused earlier). */
static void key_of(const char *prefix, const char *src,
		   char ret[CACHEKEY_LEN + 1])
{
	static const char hex[] = "0123456789abcdef";
	char buf[CONF_PATH_MAX + 32];
	XXH128_canonical_t c;
	XXH128_hash_t h;
	int n;
	size_t i;

	n = snprintf(buf, sizeof(buf), "%s:%s", prefix, src ? src : "");
	if (n < 0)
		n = 0;
	if ((size_t)n >= sizeof(buf))
		n = (int)sizeof(buf) - 1;
	h = XXH3_128bits(buf, (size_t)n);
	XXH128_canonicalFromHash(&c, h);
	for (i = 0; i < sizeof(c.digest); i++) {
		ret[2 * i] = hex[c.digest[i] >> 4];
		ret[2 * i + 1] = hex[c.digest[i] & 15];
	}
	ret[CACHEKEY_LEN] = '\0';
}

void cachekey_user(uid_t uid, const char *src, char ret[CACHEKEY_LEN + 1])
{
	char prefix[16];

	snprintf(prefix, sizeof(prefix), "%u", (unsigned)uid);
	key_of(prefix, src, ret);
}

void cachekey_public(const char *src, char ret[CACHEKEY_LEN + 1])
{
	key_of("public", src, ret);
}

void cachekey_part(const char *key, char ret[CACHEKEY_LEN + 1])
{
	key_of("part", key, ret);
}
