/* stage_plan.c - the stager's decisions (see stage_plan.h): whose entry,
 * hit, check or build, linking from the previous version, the worker's
 * command line. No I/O, no locks: stage.c acts on what these return.
 */
#include <stdio.h>
#include <string.h>

#include "daemon/staging/stage_plan.h"

size_t stage_plan_owners(const struct stage_account *pub, uid_t uid, gid_t gid,
			 const char *user, const char *path,
			 struct stage_owner ret[2])
{
	size_t n = 0;

	/* PublicUser's own jobs (and root's, which would be pointless) stay
	 * per user: the builder must not be the requester. */
	if (pub && pub->ok && uid != pub->uid && uid != 0) {
		ret[n] = (struct stage_owner){
			.uid = pub->uid,
			.gid = pub->gid,
			.user = pub->name,
			.public = true,
		};
		cache_key_public(path, ret[n].key);
		n++;
	}
	ret[n] = (struct stage_owner){
		.uid = uid,
		.gid = gid,
		.user = user,
		.public = false,
	};
	cache_key(uid, path, ret[n].key);
	return n + 1;
}

enum stage_verdict stage_plan_current(const struct cache_version *cur,
				      enum profile_verify want,
				      int64_t started_ns, time_t now,
				      unsigned cache_ttl, char *how,
				      size_t howlen)
{
	/* Proved by a walk that began after this request: the single
	 * flight's answer is ours too. */
	if (cur->verified_ns > started_ns) {
		snprintf(how, howlen,
			 "verified %ld s ago by a concurrent request",
			 (long)(now - cur->verified));
		return STAGE_HIT;
	}
	if (want == PROFILE_VERIFY_NONE &&
	    now - cur->verified < (time_t)cache_ttl) {
		snprintf(how, howlen,
			 "verify=none, verified %ld s ago (CacheTTL %u s)",
			 (long)(now - cur->verified), cache_ttl);
		return STAGE_HIT;
	}
	/* A manifest without content hashes cannot prove a checksum. */
	if (want == PROFILE_VERIFY_CHECKSUM &&
	    cur->verify != PROFILE_VERIFY_CHECKSUM)
		return STAGE_BUILD;
	return STAGE_CHECK;
}

enum profile_verify stage_plan_worker_verify(enum profile_verify want)
{
	return want == PROFILE_VERIFY_CHECKSUM ? PROFILE_VERIFY_CHECKSUM
					       : PROFILE_VERIFY_STAT;
}

bool stage_plan_link_previous(const struct cache_version *cur,
			      enum profile_verify want)
{
	return cur &&
	       !(stage_plan_worker_verify(want) == PROFILE_VERIFY_CHECKSUM &&
		 cur->verify != PROFILE_VERIFY_CHECKSUM);
}

size_t stage_plan_argv(const struct stage_task *task, bool rate, char **argv)
{
	size_t n = 0;

	argv[n++] = "iostaged";
	argv[n++] = "--stage-worker";
	argv[n++] = "--verify";
	argv[n++] = task->verify == PROFILE_VERIFY_CHECKSUM ? "checksum"
							    : "stat";
	if (task->owner->public)
		argv[n++] = "--public";
	if (task->mode == STAGE_WORKER_CHECK) {
		argv[n++] = "--check";
		argv[n++] = "--manifest-in";
		argv[n++] = "3";
	} else {
		bool peers = task->peers && task->peers[0];

		if (task->previous) {
			argv[n++] = "--previous";
			argv[n++] = (char *)task->previous;
			argv[n++] = "--manifest-in";
			argv[n++] = "3";
		}
		if (peers) {
			/* a fill by parts: PREVIOUS is this node's part */
			argv[n++] = "--peers";
			argv[n++] = (char *)task->peers;
		} else if (!task->previous && task->peer && task->peer_entry) {
			argv[n++] = "--peer";
			argv[n++] = (char *)task->peer;
			argv[n++] = "--peer-entry";
			argv[n++] = (char *)task->peer_entry;
		}
		if ((peers || (!task->previous && task->peer)) &&
		    task->munge_socket && task->munge_socket[0]) {
			argv[n++] = "--munge-socket";
			argv[n++] = (char *)task->munge_socket;
		}
		if (peers && task->peer_job) {
			argv[n++] = "--peer-job";
			argv[n++] = (char *)task->peer_job;
		}
		argv[n++] = "--manifest-out";
		argv[n++] = "4";
	}
	if (rate) {
		argv[n++] = "--rate-fd";
		argv[n++] = "5";
	}
	if (task->spread_plan && task->spread_self) {
		argv[n++] = "--spread";
		argv[n++] = (char *)task->spread_plan;
		argv[n++] = "--spread-self";
		argv[n++] = (char *)task->spread_self;
		if (task->listing_out >= 0) {
			argv[n++] = "--listing-out";
			argv[n++] = "6";
		}
		if (task->mode == STAGE_WORKER_BUILD && task->part_budget) {
			argv[n++] = "--part-budget";
			argv[n++] = (char *)task->part_budget;
		}
	}
	argv[n++] = (char *)task->src;
	argv[n++] = (char *)task->dstdir;
	argv[n] = NULL;
	return n;
}
