/* authz.c - AdminGroup membership (see authz.h). */
#define _GNU_SOURCE
#include <grp.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>

#include "ctld/authz.h"

#define AUTHZ_GROUPS_MAX 1024 /* supplementary groups looked at */

bool authz_read_all(uid_t uid, gid_t gid, const char *admin_group)
{
	struct group gr, *gres = NULL;
	struct passwd pw, *pres = NULL;
	char gbuf[16384], pbuf[16384];
	gid_t groups[AUTHZ_GROUPS_MAX];
	int n = AUTHZ_GROUPS_MAX;

	if (uid == 0)
		return true;
	if (!admin_group || !admin_group[0])
		return false;
	if (getgrnam_r(admin_group, &gr, gbuf, sizeof(gbuf), &gres) || !gres)
		return false;
	if (gid == gr.gr_gid)
		return true;
	/* The credential carries the primary group only: the supplementary
	 * ones are the user's in the group database. */
	if (getpwuid_r(uid, &pw, pbuf, sizeof(pbuf), &pres) || !pres)
		return false;
	if (pw.pw_gid == gr.gr_gid)
		return true;
	if (getgrouplist(pw.pw_name, pw.pw_gid, groups, &n) < 0)
		n = AUTHZ_GROUPS_MAX; /* too many: look at the first ones */
	for (int i = 0; i < n; i++)
		if (groups[i] == gr.gr_gid)
			return true;
	return false;
}
