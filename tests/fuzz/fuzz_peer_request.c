/* fuzz_peer_request.c - one connection to iostaged's node-to-node
 * listener (daemon/cluster/peer.c, peer_ops.c, peer_fetch.c): the line,
 * the envelope, the MUNGE credential's payload (munged replaced by
 * munge_standin.h, given to the channel as its decoder: root, a user,
 * nobody, expired, replayed or invalid) and every peer op (peer_ping,
 * stage_state, telemetry_part, part_put, history_get, prestage,
 * cache_report, fetch_open) against the modules started in the scratch
 * directory as in fuzz_agent_request. The rest of the input after the
 * first line is what a fetch session reads: the cache holds one
 * published version of the user's (uid 1000, the stand-in's "u"),
 * FUZZ_ENTRY below, with files, a symlink and a fifo in its data and
 * chunks of files too large for one node beside it (common/fs/
 * partchunks.h: "big" chunk 0 of 64 bytes, "sub/b" chunk 1 of 100, a
 * symlink as "a" chunk 0), so fetch_open is served and the session's
 * lines reach real files and chunks. What
 * a session sends is read and dropped by a thread, so it never blocks.
 * The connection goes through peer_serve_fd (daemon/cluster/peer.h) of a
 * channel made but not listening. */
#include "tests/fuzz/fuzz.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/fs/copyengine.h"
#include "common/fs/manifest.h"
#include "common/fs/partchunks.h"
#include "common/history/history.h"
#include "common/net/peerserve.h"
#include "daemon/agent_life.h"
#include "daemon/cluster/parts.h"
#include "daemon/cluster/peer.h"
#include "daemon/jobs.h"
#include "daemon/staging/cache.h"
#include "daemon/staging/drain.h"
#include "daemon/staging/stage.h"
#include "daemon/staging/tiers.h"
#include "daemon/telemetry/telemetry.h"
#include "tests/fuzz/munge_standin.h"

/* The entry served: the user's (uid 1000) key of FUZZ_SRC, version 1 on
 * tier nvme; the seeds name it (corpus/peer_request/fetch*). */
#define FUZZ_UID 1000
#define FUZZ_SRC "/pfs/fuzz"

static struct conf conf;
static struct agent agent;

static int chown_user(const char *path, const struct stat *st, int flag,
		      struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return lchown(path, FUZZ_UID, FUZZ_UID);
}

/* DIR/NAME with LEN bytes. */
static void put(const char *dir, const char *name, size_t len)
{
	char path[512];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || ftruncate(fd, (off_t)len) < 0)
		abort();
	close(fd);
}

/* Chunk INDEX of REL, LEN bytes (0: a symlink out), in the chunks
 * directory CHUNKS. */
static void put_chunk(const char *chunks, const char *rel, uint64_t index,
		      size_t len)
{
	char name[PARTCHUNK_NAME_MAX], path[512];

	partchunk_name(rel, strlen(rel), index, name);
	if (len) {
		put(chunks, name, len);
		return;
	}
	snprintf(path, sizeof(path), "%s/%s", chunks, name);
	if (symlink("/etc/passwd", path) < 0)
		abort();
}

/* Version 1 of the user's entry: a small tree copied by the copy engine
 * (its manifest is the real one), then made the user's as a worker
 * would have left it, with what a user could add: a symlink out, a
 * fifo. Only root can give it away; as anyone else fetch_open finds
 * nothing, and only its refusals are fuzzed. */
static void publish_entry(void)
{
	struct copyengine_opts o = { .private_top = true };
	char src[256], path[512], err[CONF_ERR_MAX], key[CACHE_KEY_LEN + 1];
	struct cache_meta meta = { .src = FUZZ_SRC,
				   .uid = FUZZ_UID,
				   .user = "fuzz",
				   .bytes = 300,
				   .files = 2,
				   .verify = PROFILE_VERIFY_STAT };
	struct copyengine *ce = NULL;
	struct manifest *m = NULL;
	struct cache_build b;
	int bfd;

	if (geteuid() != 0)
		return;
	fuzz_mkdir(src, sizeof(src), "src", 0755);
	fuzz_mkdir(path, sizeof(path), "src/sub", 0755);
	put(src, "a", 100);
	put(src, "sub/b", 200);
	cache_key(FUZZ_UID, FUZZ_SRC, key);
	if (cache_build_begin(agent.cache, 0, key, 1, FUZZ_UID, FUZZ_UID, &b,
			      err, sizeof(err)) < 0 ||
	    copyengine_walk(src, &o, &ce, err, sizeof(err)) < 0 ||
	    (bfd = open(b.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 ||
	    copyengine_copy(ce, bfd, "data", NULL, err, sizeof(err)) < 0 ||
	    copyengine_manifest(ce, &m) < 0 ||
	    manifest_write(m, b.manifest_fd) < 0)
		goto fail;
	close(bfd);
	snprintf(path, sizeof(path), "%s/data/out", b.path);
	if (symlink("/etc/passwd", path) < 0)
		goto fail;
	snprintf(path, sizeof(path), "%s/data/p", b.path);
	if (mkfifo(path, 0600) < 0)
		goto fail;
	snprintf(path, sizeof(path), "%s/data", b.path);
	if (nftw(path, chown_user, 16, FTW_PHYS) < 0 ||
	    cache_build_publish(&b, &meta, err, sizeof(err)) < 0)
		goto fail;
	/* chunks beside data, the user's as a worker leaves them (made
	 * after publishing, which keeps only data) */
	snprintf(err, sizeof(err), "cannot make its chunks");
	if (cache_version_path(agent.cache, 0, key, 1, false, path,
			       sizeof(path) - 8) < 0)
		goto fail;
	strcat(path, "/" PARTCHUNKS_DIR);
	if (mkdir(path, 0755) < 0)
		goto fail;
	put_chunk(path, "big", 0, 64);
	put_chunk(path, "sub/b", 1, 100);
	put_chunk(path, "a", 0, 0);
	if (nftw(path, chown_user, 16, FTW_PHYS) < 0)
		goto fail;
	copyengine_destroy(ce);
	manifest_destroy(m);
	return;
fail:
	fprintf(stderr, "fuzz: cannot publish the entry: %s\n", err);
	exit(2);
}

/* What a fetch session sends, read and dropped until EOF. */
static void *drain_socket(void *arg)
{
	int fd = *(int *)arg;
	char buf[65536];

	while (read(fd, buf, sizeof(buf)) > 0)
		;
	return NULL;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char err[CONF_ERR_MAX];

	(void)argc;
	(void)argv;
	fuzz_conf(&conf);
	snprintf(conf.node_name, sizeof(conf.node_name), "node1");
	agent.conf = &conf;
	/* as iostaged's main() makes its agent (daemon/agent.c), without
	 * spawn_init: no worker ever starts (spawn_as_user refuses) */
	if (agent_create(&agent, 0, err, sizeof(err)) < 0 ||
	    agent_load(&agent, err, sizeof(err)) < 0)
		goto fail;
	agent.peer = peer_create(&agent);
	if (!agent.peer) {
		snprintf(err, sizeof(err), "out of memory");
		goto fail;
	}
	peer_set_decoder(agent.peer, fuzz_mauth_decode);
	publish_entry();
	history_init(&conf);
	return 0;
fail:
	fprintf(stderr, "fuzz: %s\n", err);
	exit(2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	pthread_t drain;
	int sv[2];
	cJSON *reply;

	if (size > 128 * 1024)
		return 0; /* the socket buffer: the writer must not block */
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		abort();
	if (size && write(sv[1], data, size) != (ssize_t)size)
		abort();
	shutdown(sv[1], SHUT_WR);
	if (pthread_create(&drain, NULL, drain_socket, &sv[1]) != 0)
		abort();
	reply = peer_serve_fd(agent.peer, sv[0]);
	/* every request gets {"ok":...}, or a session answered it */
	if (!reply || (reply != PEERSERVE_TAKEN &&
		       !cJSON_IsBool(cJSON_GetObjectItem(reply, "ok"))))
		abort();
	if (reply != PEERSERVE_TAKEN)
		cJSON_Delete(reply);
	close(sv[0]);
	pthread_join(drain, NULL);
	close(sv[1]);
	return 0;
}
