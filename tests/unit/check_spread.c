/* check_spread.c - rendezvous placement of a spread dataset's files: every
 * node computes the same owner, shares follow the weights, a node leaving
 * or joining moves only its own files, and plans are parsed strictly. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <check.h>

#include "common/sched/spread.h"
#include "tests/unit/check_run.h"
#include "tests/unit/plan_fixture.h"

#define FILES 20000

static void path_of(unsigned i, char *buf, size_t len)
{
	snprintf(buf, len, "train/class_%03u/img_%06u.jpg", i % 100, i);
}

START_TEST(test_parse_format)
{
	struct spread_plan p = plan_of("n1=100,n2=80,node-3.x_y=1");
	char buf[256];

	ck_assert_uint_eq(p.n, 3);
	ck_assert_str_eq(p.nodes[2].name, "node-3.x_y");
	ck_assert_uint_eq(p.nodes[1].weight, 80);
	ck_assert_int_eq(spread_plan_format(&p, buf, sizeof(buf)),
			 (int)strlen("n1=100,n2=80,node-3.x_y=1"));
	ck_assert_str_eq(buf, "n1=100,n2=80,node-3.x_y=1");
	ck_assert_int_eq(spread_plan_find(&p, "n2"), 1);
	ck_assert_int_eq(spread_plan_find(&p, "n4"), -1);
	ck_assert_int_eq(spread_plan_find(NULL, "n2"), -1);
	ck_assert_int_eq(spread_plan_format(&p, buf, 10), -1);
	ck_assert_str_eq(buf, "");
}
END_TEST

static const char *const bad_specs[] = {
	"",
	"n1",
	"n1=",
	"n1=0",
	"=5",
	"n1=5,",
	"n1=5,,n2=3",
	"n1=5,n1=3",
	"n1=-5",
	"n1=5x",
	"n 1=5",
	"n1=1099511627777", /* 2^40 + 1 */
	"n1=99999999999999999999999",
	"n/1=5",
	"n1=5;rm -rf /",
	"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa=1",
};

START_TEST(test_parse_bad)
{
	struct spread_plan p = plan_of("keep=7");
	char err[256];

	err[0] = '\0';
	ck_assert_int_eq(spread_plan_parse(bad_specs[_i], &p, err, sizeof(err)),
			 -1);
	ck_assert_msg(!strncmp(err, "spread plan: ", 13), "%s", err);
	/* No side effect on failure. */
	ck_assert_uint_eq(p.n, 1);
	ck_assert_str_eq(p.nodes[0].name, "keep");
	ck_assert_int_eq(spread_plan_parse(NULL, &p, err, sizeof(err)), -1);
}
END_TEST

START_TEST(test_too_many_nodes)
{
	static char spec[SPREAD_SPEC_MAX * 2];
	struct spread_plan p;
	char err[256];
	size_t off = 0;

	for (unsigned i = 0; i < SPREAD_NODES_MAX; i++)
		off += (size_t)snprintf(spec + off, sizeof(spec) - off,
					"%sn%u=1", i ? "," : "", i);
	ck_assert_int_eq(spread_plan_parse(spec, &p, err, sizeof(err)), 0);
	ck_assert_uint_eq(p.n, SPREAD_NODES_MAX);
	snprintf(spec + off, sizeof(spec) - off, ",extra=1");
	ck_assert_int_eq(spread_plan_parse(spec, &p, err, sizeof(err)), -1);
	ck_assert(strstr(err, "more than") != NULL);
}
END_TEST

/* The owner depends on the plan and the path only: the order the nodes are
 * listed in changes no file's owner's name. */
START_TEST(test_owner_stable_across_order)
{
	struct spread_plan a = plan_of("n1=10,n2=10,n3=10");
	struct spread_plan b = plan_of("n3=10,n1=10,n2=10");
	char path[128];

	for (unsigned i = 0; i < 2000; i++) {
		path_of(i, path, sizeof(path));
		ck_assert_str_eq(
		    a.nodes[spread_owner(&a, path, strlen(path))].name,
		    b.nodes[spread_owner(&b, path, strlen(path))].name);
	}
}
END_TEST

/* Shares follow the weights: 1:2:1 gives about 25/50/25%. */
START_TEST(test_weights)
{
	struct spread_plan p = plan_of("a=100,b=200,c=100");
	unsigned count[3] = { 0, 0, 0 };
	char path[128];

	for (unsigned i = 0; i < FILES; i++) {
		path_of(i, path, sizeof(path));
		count[spread_owner(&p, path, strlen(path))]++;
	}
	ck_assert_msg(fabs(count[0] / (double)FILES - 0.25) < 0.02, "a %u",
		      count[0]);
	ck_assert_msg(fabs(count[1] / (double)FILES - 0.50) < 0.02, "b %u",
		      count[1]);
	ck_assert_msg(fabs(count[2] / (double)FILES - 0.25) < 0.02, "c %u",
		      count[2]);
}
END_TEST

/* A node leaving moves only the files it held; one joining takes files
 * only to itself, about its share. */
START_TEST(test_minimal_movement)
{
	struct spread_plan four = plan_of("n1=50,n2=60,n3=70,n4=50");
	struct spread_plan three = plan_of("n1=50,n2=60,n3=70");
	unsigned moved = 0;
	char path[128];

	for (unsigned i = 0; i < FILES; i++) {
		const char *o4, *o3;

		path_of(i, path, sizeof(path));
		o4 = four.nodes[spread_owner(&four, path, strlen(path))].name;
		o3 = three.nodes[spread_owner(&three, path, strlen(path))].name;
		if (strcmp(o4, o3)) {
			/* Leaving: only n4's files move. */
			ck_assert_str_eq(o4, "n4");
			moved++;
		} else {
			ck_assert_str_ne(o4, "n4");
		}
	}
	/* Joining is the same comparison read the other way: n4 takes
	 * about 50/230 of the files, and nothing else moves. */
	ck_assert_msg(fabs(moved / (double)FILES - 50.0 / 230.0) < 0.02,
		      "moved %u of %u", moved, FILES);
}
END_TEST

/* One weight changing moves files only to or from that node. */
START_TEST(test_weight_change)
{
	struct spread_plan before = plan_of("n1=100,n2=100,n3=100");
	struct spread_plan after = plan_of("n1=100,n2=150,n3=100");
	char path[128];
	unsigned gained = 0;

	for (unsigned i = 0; i < FILES; i++) {
		unsigned b, a;

		path_of(i, path, sizeof(path));
		b = spread_owner(&before, path, strlen(path));
		a = spread_owner(&after, path, strlen(path));
		if (a != b) {
			ck_assert_uint_eq(a, 1);
			gained++;
		}
	}
	ck_assert(gained > 0);
}
END_TEST

START_TEST(test_one_node_and_empty_path)
{
	struct spread_plan p = plan_of("only=3");
	struct spread_plan two = plan_of("x=1,y=1");

	ck_assert_uint_eq(spread_owner(&p, "a", 1), 0);
	ck_assert_uint_eq(spread_owner(&p, "", 0), 0);
	/* A one-file dataset's "" has an owner like any path. */
	ck_assert_uint_lt(spread_owner(&two, "", 0), 2);
	/* The length bounds the path: trailing bytes are not read. */
	ck_assert_uint_eq(spread_owner(&two, "abcXYZ", 3),
			  spread_owner(&two, "abc", 3));
	ck_assert(spread_score(&two, 0, "abc", 3) > 0);
}
END_TEST

START_TEST(test_weight_of_bytes)
{
	ck_assert_uint_eq(spread_weight_of_bytes(0), 1);
	ck_assert_uint_eq(spread_weight_of_bytes(1 << 19), 1);
	ck_assert_uint_eq(spread_weight_of_bytes((uint64_t)3 << 20), 3);
	ck_assert_uint_eq(spread_weight_of_bytes(UINT64_MAX),
			  SPREAD_WEIGHT_MAX);
}
END_TEST

/* Which files are cut: over half the owner's room, and only those. */
START_TEST(test_chunked)
{
	struct spread_plan p = plan_of("a=4,b=100");

	/* a's room is 4 MiB: half of it is the line */
	ck_assert(!spread_chunked(&p, 0, (uint64_t)2 << 20));
	ck_assert(spread_chunked(&p, 0, ((uint64_t)2 << 20) + 1));
	ck_assert(!spread_chunked(&p, 1, (uint64_t)50 << 20));
	ck_assert(spread_chunked(&p, 1, ((uint64_t)50 << 20) + 1));
	/* no such node: nothing is cut */
	ck_assert(!spread_chunked(&p, 2, UINT64_MAX));
}
END_TEST

/* The chunk size follows the file's size alone, within its bounds, and
 * the chunks cover the file exactly. */
START_TEST(test_chunk_size)
{
	const uint64_t mib = (uint64_t)1 << 20;

	ck_assert_uint_eq(spread_chunk_bytes(5 * mib), SPREAD_CHUNK_MIN);
	ck_assert_uint_eq(spread_chunk_count(5 * mib), 5);
	ck_assert_uint_eq(spread_chunk_count(5 * mib + 1), 6);
	ck_assert_uint_eq(spread_chunk_count(0), 0);
	ck_assert_uint_eq(spread_chunk_bytes(1024 * mib), 16 * mib);
	ck_assert_uint_eq(spread_chunk_count(1024 * mib), 64);
	ck_assert_uint_eq(spread_chunk_bytes(UINT64_C(100000000000)),
			  SPREAD_CHUNK_MAX);
	ck_assert_uint_eq(spread_chunk_count(UINT64_C(100000000000)), 1491);
	for (uint64_t s = 1; s < 300 * mib; s = s * 3 + 7) {
		uint64_t c = spread_chunk_bytes(s), n = spread_chunk_count(s);

		ck_assert((c & (c - 1)) == 0);
		ck_assert_uint_ge(n * c, s);
		ck_assert_uint_lt((n - 1) * c, s);
	}
}
END_TEST

/* A file's chunks spread over the nodes by their weights, each chunk's
 * draw independent of the file's own; a node leaving moves only its
 * chunks. */
START_TEST(test_chunk_owner)
{
	struct spread_plan three = plan_of("a=100,b=200,c=100");
	struct spread_plan two = plan_of("a=100,b=200");
	const char *path = "shards/train-00000.h5";
	const unsigned chunks = 8000;
	unsigned count[3] = { 0, 0, 0 }, moved = 0, same_as_file = 0;
	unsigned file_owner = spread_owner(&three, path, strlen(path));

	for (unsigned i = 0; i < chunks; i++) {
		unsigned o3 = spread_chunk_owner(&three, path, strlen(path), i);
		unsigned o2 = spread_chunk_owner(&two, path, strlen(path), i);

		count[o3]++;
		same_as_file += o3 == file_owner;
		if (o3 != o2) {
			ck_assert_uint_eq(o3, 2);
			moved++;
		} else {
			ck_assert_uint_ne(o3, 2);
		}
		ck_assert(
		    spread_chunk_score(&three, o3, path, strlen(path), i) > 0);
	}
	ck_assert_msg(fabs(count[0] / (double)chunks - 0.25) < 0.03, "a %u",
		      count[0]);
	ck_assert_msg(fabs(count[1] / (double)chunks - 0.50) < 0.03, "b %u",
		      count[1]);
	ck_assert_uint_eq(moved, count[2]);
	/* not all on the file's own node: the chunks draw their own */
	ck_assert_uint_lt(same_as_file, chunks * 3 / 4);
	/* chunk 0's score is not the file's */
	ck_assert(spread_chunk_score(&three, 0, path, strlen(path), 0) !=
		  spread_score(&three, 0, path, strlen(path)));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("spread");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_parse_format);
	tcase_add_loop_test(tc, test_parse_bad, 0,
			    (int)(sizeof(bad_specs) / sizeof(bad_specs[0])));
	tcase_add_test(tc, test_too_many_nodes);
	tcase_add_test(tc, test_owner_stable_across_order);
	tcase_add_test(tc, test_weights);
	tcase_add_test(tc, test_minimal_movement);
	tcase_add_test(tc, test_weight_change);
	tcase_add_test(tc, test_one_node_and_empty_path);
	tcase_add_test(tc, test_weight_of_bytes);
	tcase_add_test(tc, test_chunked);
	tcase_add_test(tc, test_chunk_size);
	tcase_add_test(tc, test_chunk_owner);
	suite_add_tcase(s, tc);
	return check_run(s);
}
