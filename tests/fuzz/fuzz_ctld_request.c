/* fuzz_ctld_request.c - one connection to iostagectld (ctld/service.c):
 * the request line read from the socket, the envelope {"cred":...}, the
 * MUNGE credential's payload (the request itself) and every op it
 * reaches (ping, file, history_get, history_list, recommend: file_ops.c,
 * history_ops.c, partstore.c) against a real history in the scratch
 * directory. The service is the real one, linked from
 * libiostage-ctld.a: ctld_service_serve (ctld/service.h) on one end of a
 * socket pair, as a connection thread of iostagectld runs it. No munged
 * runs here: the service is given munge_standin.h's decoder in its
 * context (struct ctld_serve_ctx), so what is fuzzed is what the service
 * does with a payload munged vouched for.
 *
 * Placement: PlacementHold= is on, and after each request Slurm is made
 * to show what the nodes' reports want (what ctld/sched/slurmsched.c would
 * publish), so a `placement` query after a `cache_report` reaches the
 * preference, the hold and the features handed out (corpus
 * placement-report, placement-query: /pfs/x of uid 1000). */
#include "tests/fuzz/fuzz.h"

#include <sys/socket.h>
#include <time.h>

#include <cJSON.h>

#include "common/history/history.h"
#include "common/sched/dsfeature.h"
#include "ctld/sched/placement.h"
#include "ctld/service.h"
#include "tests/fuzz/history_renew.h"
#include "tests/fuzz/munge_standin.h"

static struct conf conf;
static struct ctld_serve_ctx ctx = { .conf = &conf,
				     .decode = fuzz_mauth_decode };

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_conf(&conf);
	history_init(&conf);
	placement_set_hold(10);
	return 0;
}

/* Slurm shows each reporting node's wanted features (and lingering ones),
 * built as ctld/sched/slurmsched.c's publish_node builds them. */
static void publish_wanted(void)
{
	char want[PLACEMENT_NODE_FEATURES][DSFEATURE_LEN + 1];
	const char *ptrs[PLACEMENT_NODE_FEATURES];
	size_t nn, n;
	char **names = placement_nodes(&nn), *shown;

	for (size_t i = 0; i < nn; i++) {
		n = placement_wanted(names[i], want, PLACEMENT_NODE_FEATURES,
				     time(NULL));
		for (size_t k = 0; k < n; k++)
			ptrs[k] = want[k];
		shown = dsfeature_merge(NULL, ptrs, n);
		if (shown)
			placement_set_published(names[i], shown);
		free(shown);
		free(names[i]);
	}
	free(names);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int sv[2];
	cJSON *reply;

	if (size > 128 * 1024)
		return 0; /* the socket buffer: the writer must not block */
	fuzz_history_renew(&conf);
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		abort();
	if (size && write(sv[1], data, size) != (ssize_t)size)
		abort();
	shutdown(sv[1], SHUT_WR);
	reply = ctld_service_serve(&ctx, sv[0]);
	if (!reply || !cJSON_IsBool(cJSON_GetObjectItem(reply, "ok")))
		abort(); /* every request gets {"ok":...} */
	publish_wanted();
	cJSON_Delete(reply);
	close(sv[0]);
	close(sv[1]);
	return 0;
}
