/* authz.h - who may read what on iostagectld.
 *
 * The caller's uid/gid come from the MUNGE credential (never from the
 * request). Root and the members of AdminGroup= read every user's jobs and
 * advice; everyone else reads their own; only root files records (checked
 * by the `file` op). Group membership is looked up per request through NSS,
 * so a change in the group database needs no restart.
 */
#ifndef IOSTAGE_CTLD_AUTHZ_H
#define IOSTAGE_CTLD_AUTHZ_H

#include <stdbool.h>
#include <sys/types.h>

/* May UID (primary group GID) read everyone's history? True for root, and
 * for a member of ADMIN_GROUP (NULL or "": none) by primary group or
 * supplementary membership. A group that does not exist admits nobody. */
bool authz_read_all(uid_t uid, gid_t gid, const char *admin_group);

#endif /* IOSTAGE_CTLD_AUTHZ_H */
