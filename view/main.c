/* main.c - iostage-view: a spread dataset's whole tree, read-only, over
 * FUSE, for the tasks of one job on one node (docs/STAGING.md, "The
 * spread view"; iostage-view(8)).
 *
 * iostaged (root) mounts /dev/fuse (common/fs/fusemount.h) and starts
 * this program as the job's user with the fd, the dataset's listing on
 * another fd, and where each file's bytes are; it then stacks an overlay
 * of the node's part over the mount. The program mounts nothing, needs
 * no privilege, and ends when the file system is unmounted or on
 * SIGTERM. main() reads like a script: arguments, listing, sources,
 * stats, serve, and the reverse.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/config/conf_parse.h"
#include "common/fs/manifest.h"
#include "common/sched/cachekey.h"
#include "common/sched/spread.h"
#include "view/view_fuse.h"
#include "view/view_source.h"
#include "view/view_stats.h"
#include "view/view_tree.h"
#include "view/view_xattr.h"

struct args {
	int fuse_fd, listing_fd;
	const char *src, *plan, *self, *tier, *key, *local, *chunks,
	    *munge_socket, *stats;
	unsigned peer_port;
	uint32_t job;
};

static void usage(FILE *out)
{
	fprintf(out,
		"usage: iostage-view --fuse-fd N --listing-fd N --src SRC "
		"--plan SPEC --self NAME\n"
		"                    --tier TIER --key KEY --peer-port PORT "
		"--job J\n"
		"                    [--local DIR] [--chunks DIR] "
		"[--munge-socket PATH]\n"
		"                    [--stats FILE]\n"
		"\n"
		"Serves a spread dataset's whole tree read-only on a /dev/fuse "
		"fd root mounted;\n"
		"started by iostaged as the job's user (iostage-view(8)).\n"
		"\n"
		"  --fuse-fd N        the mounted /dev/fuse, inherited\n"
		"  --listing-fd N     the whole dataset's manifest, "
		"inherited\n"
		"  --src SRC          the dataset on the PFS (a directory)\n"
		"  --plan SPEC        the spread plan: NAME=WEIGHT,...\n"
		"  --self NAME        this node's name in the plan\n"
		"  --tier TIER        the tier of the parts' cache entry\n"
		"  --key KEY          the parts' cache key (32 hex digits)\n"
		"  --peer-port PORT   iostaged's PeerPort on every node\n"
		"  --job J            the job the view serves (its peer reads "
		"name it)\n"
		"  --local DIR        this node's part data directory\n"
		"  --chunks DIR       this node's part chunks directory\n"
		"  --munge-socket P   munged's socket (default: munged's "
		"own)\n"
		"  --stats FILE       where to write what was served from "
		"where\n"
		"  -h, --help         this text\n"
		"  -V, --version      print the version\n");
}

/* A decimal number 0..MAX from S (the whole string), or -1. */
static long long number(const char *s, long long max)
{
	char *end;
	long long v;

	if (!s || !*s || *s == '-' || *s == '+')
		return -1;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end || v > max)
		return -1;
	return v;
}

static bool is_key(const char *s)
{
	if (strlen(s) != CACHEKEY_LEN)
		return false;
	for (; *s; s++)
		if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
			return false;
	return true;
}

/* The arguments into *a; 0, 1 when done (help, version), or -1 with the
 * message printed. */
static int parse_args(int argc, char **argv, struct args *a)
{
	static const struct option opts[] = {
		{ "fuse-fd", required_argument, NULL, 'F' },
		{ "listing-fd", required_argument, NULL, 'L' },
		{ "src", required_argument, NULL, 's' },
		{ "plan", required_argument, NULL, 'p' },
		{ "self", required_argument, NULL, 'n' },
		{ "tier", required_argument, NULL, 't' },
		{ "key", required_argument, NULL, 'k' },
		{ "peer-port", required_argument, NULL, 'P' },
		{ "job", required_argument, NULL, 'j' },
		{ "local", required_argument, NULL, 'l' },
		{ "chunks", required_argument, NULL, 'c' },
		{ "munge-socket", required_argument, NULL, 'm' },
		{ "stats", required_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	long long v;
	int c;

	*a = (struct args){ .fuse_fd = -1, .listing_fd = -1 };
	while ((c = getopt_long(argc, argv, "hV", opts, NULL)) != -1) {
		switch (c) {
		case 'F':
		case 'L':
			v = number(optarg, INT_MAX);
			if (v < 0 || fcntl((int)v, F_GETFD) < 0) {
				fprintf(stderr,
					"iostage-view: --%s '%s': not an open "
					"file descriptor\n",
					c == 'F' ? "fuse-fd" : "listing-fd",
					optarg);
				return -1;
			}
			*(c == 'F' ? &a->fuse_fd : &a->listing_fd) = (int)v;
			break;
		case 's':
			a->src = optarg;
			break;
		case 'p':
			a->plan = optarg;
			break;
		case 'n':
			a->self = optarg;
			break;
		case 't':
			a->tier = optarg;
			break;
		case 'k':
			a->key = optarg;
			break;
		case 'P':
			v = number(optarg, 65535);
			if (v < 1) {
				fprintf(stderr,
					"iostage-view: --peer-port '%s': not "
					"a port (1..65535)\n",
					optarg);
				return -1;
			}
			a->peer_port = (unsigned)v;
			break;
		case 'j':
			v = number(optarg, UINT32_MAX);
			if (v < 1) {
				fprintf(stderr,
					"iostage-view: --job '%s': not a job "
					"id (1 or more)\n",
					optarg);
				return -1;
			}
			a->job = (uint32_t)v;
			break;
		case 'l':
			a->local = optarg;
			break;
		case 'c':
			a->chunks = optarg;
			break;
		case 'm':
			a->munge_socket = optarg;
			break;
		case 'S':
			a->stats = optarg;
			break;
		case 'h':
			usage(stdout);
			return 1;
		case 'V':
			printf("iostage-view %s\n", IOSTAGE_VERSION);
			return 1;
		default:
			usage(stderr);
			return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "iostage-view: unexpected argument '%s'\n",
			argv[optind]);
		return -1;
	}
	{
		const char *missing = a->fuse_fd < 0      ? "--fuse-fd"
				      : a->listing_fd < 0 ? "--listing-fd"
				      : !a->src           ? "--src"
				      : !a->plan          ? "--plan"
				      : !a->self          ? "--self"
				      : !a->tier          ? "--tier"
				      : !a->key           ? "--key"
				      : !a->peer_port     ? "--peer-port"
				      : !a->job           ? "--job"
							  : NULL;

		if (missing) {
			fprintf(stderr, "iostage-view: %s is required\n",
				missing);
			return -1;
		}
	}
	if (*a->src != '/') {
		fprintf(stderr,
			"iostage-view: --src '%s': not an absolute "
			"path\n",
			a->src);
		return -1;
	}
	if (!conf_is_tier_name(a->tier)) {
		fprintf(stderr,
			"iostage-view: --tier '%.64s': not a tier "
			"name\n",
			a->tier);
		return -1;
	}
	if (!is_key(a->key)) {
		fprintf(stderr,
			"iostage-view: --key '%.64s': not a cache key (%d hex "
			"digits)\n",
			a->key, CACHEKEY_LEN);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static struct spread_plan plan; /* ~20 KB */
	struct view_source_conf sc;
	struct view_xattr xattr;
	struct view_source *vs = NULL;
	struct view_stats *stats = NULL;
	struct view_tree *tree = NULL;
	struct manifest *m = NULL;
	char err[1024];
	struct args a;
	int self, r;

	r = parse_args(argc, argv, &a);
	if (r)
		return r > 0 ? 0 : 2;
	if (spread_plan_parse(a.plan, &plan, err, sizeof(err)) < 0) {
		fprintf(stderr, "iostage-view: --plan: %s\n", err);
		return 2;
	}
	self = spread_plan_find(&plan, a.self);
	if (self < 0) {
		fprintf(stderr,
			"iostage-view: --self '%.64s': not a node of the "
			"plan\n",
			a.self);
		return 2;
	}
	if (manifest_read(a.listing_fd, &m, err, sizeof(err)) < 0) {
		fprintf(stderr, "iostage-view: --listing-fd %d: %s\n",
			a.listing_fd, err);
		return 1;
	}
	close(a.listing_fd);
	if (view_tree_create(m, &tree, err, sizeof(err)) < 0) {
		fprintf(stderr, "iostage-view: --listing-fd %d: %s\n",
			a.listing_fd, err);
		return 1;
	}
	sc = (struct view_source_conf){ .src = a.src,
					.local = a.local,
					.chunks = a.chunks,
					.plan = &plan,
					.self = (unsigned)self,
					.tier = a.tier,
					.key = a.key,
					.peer_port = a.peer_port,
					.job = a.job,
					.munge_socket = a.munge_socket };
	if (view_source_create(&sc, tree, &vs, err, sizeof(err)) < 0) {
		fprintf(stderr, "iostage-view: %s\n", err);
		r = 1;
		goto out;
	}
	if (a.stats && !(stats = view_stats_start(a.stats, vs))) {
		fprintf(stderr, "iostage-view: --stats %s: %s\n", a.stats,
			strerror(errno));
		r = 1;
		goto out;
	}
	xattr = (struct view_xattr){ .tree = tree,
				     .plan = &plan,
				     .self = (unsigned)self,
				     .chunks = a.chunks };
	r = view_fuse_run(a.fuse_fd, tree, vs, &xattr, true, err, sizeof(err));
	if (r < 0)
		fprintf(stderr, "iostage-view: %s\n", err);
	/* The last figures: the file's directory (the job's) may be gone
	 * already, the job having ended before its view. */
	if (view_stats_stop(stats) < 0 && errno != ENOENT)
		fprintf(stderr, "iostage-view: --stats %s: %s\n", a.stats,
			strerror(errno));
	r = r < 0 ? 1 : 0;
out:
	view_source_destroy(vs);
	view_tree_destroy(tree);
	return r;
}
