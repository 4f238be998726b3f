/* cachekey.h - the names of cache entries (docs/STAGING.md).
 *
 * K = 32 hex digits: xxh3-128 of "UID:SOURCE" for a per-user entry, of
 * "public:SOURCE" for a public one. iostaged names its entries with it;
 * iostagectld computes the same K to find which nodes hold the dataset a
 * job asks for (ctld/sched/placement.c), so the two must never differ.
 */
#ifndef IOSTAGE_CACHEKEY_H
#define IOSTAGE_CACHEKEY_H

#include <sys/types.h>

#define CACHEKEY_LEN 32 /* hex digits */

/* K of UID's own entry of SRC into ret (CACHEKEY_LEN digits and a NUL). */
void cachekey_user(uid_t uid, const char *src, char ret[CACHEKEY_LEN + 1]);

/* K of the public entry of SRC, the same for every user. */
void cachekey_public(const char *src, char ret[CACHEKEY_LEN + 1]);

/* K of a node's part of a spread dataset whose whole copy would be entry
 * KEY (either of the above): its own entry, so that a node's part and a
 * whole copy of the same source never share versions, and the same on
 * every node, so that nodes and iostagectld name a part alike. */
void cachekey_part(const char *key, char ret[CACHEKEY_LEN + 1]);

#endif /* IOSTAGE_CACHEKEY_H */
