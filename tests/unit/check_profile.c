/* check_profile.c - unit tests for common/config/profile: SPEC, JSON,
 * normalize, validate (including access checks as an unprivileged user). */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <check.h>

#include "common/config/conf.h"
#include "common/config/profile.h"
#include "tests/unit/check_run.h"

#define NOBODY 65534

static char tmpdir[64];
static char profdir[128];
static struct conf conf;

/* ---- fixture ----------------------------------------------------------- */

static void write_file(const char *path, const char *data)
{
	FILE *f = fopen(path, "w");

	ck_assert_msg(f != NULL, "fopen %s: %s", path, strerror(errno));
	ck_assert_uint_eq(fwrite(data, 1, strlen(data), f), strlen(data));
	ck_assert_int_eq(fclose(f), 0);
}

/* PATH under tmpdir, in a static rotating buffer (tests are short). */
static const char *tp(const char *rel)
{
	static char bufs[8][256];
	static unsigned n;
	char *b = bufs[n++ % 8];

	snprintf(b, sizeof(bufs[0]), "%s/%s", tmpdir, rel);
	return b;
}

static void setup(void)
{
	char text[1024], err[CONF_ERR_MAX];

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/check_profile.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
	/* Traversable by "nobody" for the access tests. */
	ck_assert_int_eq(chmod(tmpdir, 0755), 0);
	snprintf(profdir, sizeof(profdir), "%s/profiles", tmpdir);
	ck_assert_int_eq(mkdir(profdir, 0755), 0);

	snprintf(text, sizeof(text),
		 "ProfileDir=%s\n"
		 "Tier=nvme Path=%s/nvme Capacity=1G\n"
		 "Tier=bb Path=%s/bb Shared=yes Medium=ssd\n"
		 "DefaultTier=bb\n"
		 "StageTimeout=900\n"
		 "OnStageFailure=fallback\n",
		 profdir, tmpdir, tmpdir);
	ck_assert_msg(conf_parse(text, "test.conf", &conf, err, sizeof(err)) ==
			  0,
		      "%s", err);

	write_file(
	    tp("profiles/dl-train.json"),
	    "{ \"description\": \"training\",\n"
	    "  \"access\": \"random\", \"tier\": \"nvme\",\n"
	    "  \"datasets\": [ { \"name\": \"imagenet\",\n"
	    "                  \"path\": \"/pfs/imagenet\" },\n"
	    "                { \"path\": \"/pfs/coco\", \"tier\": \"bb\","
	    "                  \"verify\": \"none\" } ],\n"
	    "  \"outputs\": [ { \"name\": \"ckpt\", \"path\": "
	    "\"/pfs/run/ckpt\", \"drain\": \"end\" } ],\n"
	    "  \"trace\": true }\n");
	write_file(tp("profiles/inference.json"),
		   "{\"access\":\"sequential\"}");
	write_file(tp("profiles/none.json"), "{}");
	write_file(tp("profiles/bad.json"), "{\"foo\": 1}");
	write_file(tp("profiles/broken.json"), "{\n\"tier\": \"nvme\"\n");
	write_file(tp("profiles/notes.txt"), "not a profile");
	write_file(tp("profiles/bad name!.json"), "{}");
	write_file(tp("user.json"),
		   "{\"origin\": \"auto\", \"datasets\": [{\"path\": "
		   "\"/pfs/mine\"}]}");
}

static void teardown(void)
{
	char cmd[256];

	/* chmod first: a non-root tester cannot descend into mode 0 dirs. */
	snprintf(cmd, sizeof(cmd), "chmod -R u+rwX '%s' && rm -rf '%s'", tmpdir,
		 tmpdir);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", tmpdir);
}

/* ---- helpers ----------------------------------------------------------- */

static struct profile *spec_ok(const char *spec)
{
	char err[CONF_ERR_MAX] = "";
	struct profile *p = profile_from_spec(spec, &conf, err, sizeof(err));

	ck_assert_msg(p != NULL, "spec '%s': %s", spec, err);
	return p;
}

static struct profile *json_ok(const char *json)
{
	char err[CONF_ERR_MAX] = "";
	struct profile *p = profile_parse_json(json, "test", err, sizeof(err));

	ck_assert_msg(p != NULL, "json '%s': %s", json, err);
	return p;
}

static void normalize_ok(struct profile *p)
{
	char err[CONF_ERR_MAX] = "";

	ck_assert_msg(profile_normalize(p, &conf, err, sizeof(err)) == 0, "%s",
		      err);
}

/* to_json -> parse_json -> to_json gives the same text. */
static void assert_round_trip(const struct profile *p)
{
	char err[CONF_ERR_MAX] = "";
	char *a = profile_to_json(p), *b;
	struct profile *q;

	ck_assert_ptr_nonnull(a);
	q = profile_parse_json(a, "elsewhere", err, sizeof(err));
	ck_assert_msg(q != NULL, "reparse '%s': %s", a, err);
	ck_assert_int_eq(q->is_auto, p->is_auto);
	b = profile_to_json(q);
	ck_assert_ptr_nonnull(b);
	ck_assert_str_eq(a, b);
	free(a);
	free(b);
	profile_destroy(q);
}

/* ---- JSON -------------------------------------------------------------- */

START_TEST(test_json_full)
{
	struct profile *p = json_ok(
	    "{\"description\":\"x\",\"tier\":\"nvme\",\"access\":\"random\","
	    "\"datasets\":[{\"name\":\"imagenet\",\"path\":\"//pfs/imagenet/"
	    "\",\"tier\":\"bb\",\"access\":\"sequential\",\"verify\":"
	    "\"checksum\"},{\"path\":\"/pfs/train.tfrecord\"}],"
	    "\"outputs\":[{\"name\":\"ckpt\",\"path\":\"/pfs/run1/ckpt\","
	    "\"tier\":\"nvme\",\"drain\":\"end\"}],"
	    "\"trace\":true,\"timeout\":600,\"on_failure\":\"fallback\"}");

	ck_assert_str_eq(p->origin, "test");
	ck_assert(!p->is_auto);
	ck_assert_str_eq(p->tier, "nvme");
	ck_assert_int_eq(p->access, PROFILE_ACCESS_RANDOM);
	ck_assert_uint_eq(p->ndatasets, 2);
	ck_assert_str_eq(p->datasets[0].name, "imagenet");
	ck_assert_str_eq(p->datasets[0].path, "/pfs/imagenet");
	ck_assert_str_eq(p->datasets[0].tier, "bb");
	ck_assert_int_eq(p->datasets[0].access, PROFILE_ACCESS_SEQUENTIAL);
	ck_assert_int_eq(p->datasets[0].verify, PROFILE_VERIFY_CHECKSUM);
	/* Derived name: dots are not allowed in names. */
	ck_assert_str_eq(p->datasets[1].name, "train_tfrecord");
	ck_assert_ptr_null(p->datasets[1].tier);
	ck_assert_int_eq(p->datasets[1].access, PROFILE_ACCESS_UNKNOWN);
	ck_assert_int_eq(p->datasets[1].verify, PROFILE_VERIFY_STAT);
	ck_assert_uint_eq(p->noutputs, 1);
	ck_assert_str_eq(p->outputs[0].name, "ckpt");
	ck_assert_str_eq(p->outputs[0].path, "/pfs/run1/ckpt");
	ck_assert_str_eq(p->outputs[0].tier, "nvme");
	ck_assert_int_eq(p->outputs[0].drain, PROFILE_DRAIN_END);
	ck_assert(p->trace);
	ck_assert_uint_eq(p->timeout, 600);
	ck_assert(p->has_on_failure);
	ck_assert_int_eq(p->on_failure, STAGE_FAILURE_FALLBACK);
	assert_round_trip(p);
	profile_destroy(p);

	/* An empty object is a valid (empty) profile. */
	p = json_ok(" {\n} \n");
	ck_assert_uint_eq(p->ndatasets, 0);
	ck_assert_ptr_null(p->tier);
	ck_assert(!p->has_on_failure);
	ck_assert_uint_eq(p->timeout, 0);
	profile_destroy(p);

	/* "origin" in the JSON wins; origin "auto" means is_auto. */
	p = json_ok("{\"origin\":\"auto\"}");
	ck_assert_str_eq(p->origin, "auto");
	ck_assert(p->is_auto);
	profile_destroy(p);
	p = profile_parse_json("{}", NULL, NULL, 0);
	ck_assert_ptr_nonnull(p);
	ck_assert_str_eq(p->origin, "");
	profile_destroy(p);
}
END_TEST

struct json_err_case {
	const char *json;
	const char *want;
};

static const struct json_err_case json_err_cases[] = {
	{ NULL, "key 'profile': empty" },
	{ "", "key 'profile': empty" },
	{ "{", "malformed JSON at line 1, column 2" },
	{ "{\"a\":}", "malformed JSON at line 1, column 6" },
	{ "{\n  \"tier\": \"nvme\"\n  \"access\": \"random\"\n}",
	  "malformed JSON at line 3, column" },
	{ "{} x", "malformed JSON at line 1, column 4" },
	{ "nul", "malformed JSON at line 1, column 1" },
	{ "[]", "key 'profile': expected a JSON object" },
	{ "\"x\"", "key 'profile': expected a JSON object" },
	{ "{\"foo\":1}", "key 'foo': unknown key" },
	{ "{\"Tier\":\"nvme\"}", "key 'Tier': unknown key" },
	{ "{\"fo\\u0001o\":1}", "key 'fo?o': unknown key" },
	{ "{\"datasets\":[{\"path\":\"/a\"},{\"path\":\"/b\",\"bar\":1}]}",
	  "key 'datasets[1].bar': unknown key" },
	{ "{\"outputs\":[{\"path\":\"/a\",\"access\":\"random\"}]}",
	  "key 'outputs[0].access': unknown key" },
	{ "{\"tier\":\"nvme\",\"tier\":\"bb\"}", "key 'tier': given twice" },
	{ "{\"datasets\":[{\"path\":\"/a\",\"path\":\"/b\"}]}",
	  "key 'datasets[0].path': given twice" },
	{ "{\"description\":5}", "key 'description': expected a string" },
	{ "{\"origin\":\"a\\nb\"}",
	  "key 'origin': contains a control character" },
	{ "{\"tier\":1}", "key 'tier': expected a string" },
	{ "{\"tier\":\"NVMe\"}",
	  "key 'tier': invalid tier name 'NVMe' (want [a-z0-9_-]{1,31})" },
	{ "{\"tier\":\"../x\"}",
	  "key 'tier': invalid tier name '../x' (want [a-z0-9_-]{1,31})" },
	{ "{\"tier\":\"\"}",
	  "key 'tier': invalid tier name '' (want [a-z0-9_-]{1,31})" },
	{ "{\"access\":\"rand\"}",
	  "key 'access': unknown value 'rand' (known: unknown, random, "
	  "sequential)" },
	{ "{\"access\":null}", "key 'access': expected a string" },
	{ "{\"datasets\":{}}", "key 'datasets': expected an array" },
	{ "{\"outputs\":\"/x\"}", "key 'outputs': expected an array" },
	{ "{\"datasets\":[1]}", "key 'datasets[0]': expected an object" },
	{ "{\"datasets\":[{}]}", "key 'datasets[0].path': required" },
	{ "{\"outputs\":[{\"name\":\"x\"}]}",
	  "key 'outputs[0].path': required" },
	{ "{\"datasets\":[{\"path\":5}]}",
	  "key 'datasets[0].path': expected a string" },
	{ "{\"datasets\":[{\"path\":\"relative/x\"}]}",
	  "key 'datasets[0].path': 'relative/x': not an absolute path" },
	{ "{\"datasets\":[{\"path\":\"/pfs/../etc/shadow\"}]}",
	  "key 'datasets[0].path': '/pfs/../etc/shadow': contains a '..' "
	  "component" },
	{ "{\"datasets\":[{\"path\":\"/pfs/./x\"}]}",
	  "key 'datasets[0].path': '/pfs/./x': contains a '.' component" },
	{ "{\"datasets\":[{\"path\":\"/pfs/\\u001b[31m\"}]}",
	  "key 'datasets[0].path': '/pfs/?[31m': contains a control character" },
	{ "{\"datasets\":[{\"path\":\"\"}]}",
	  "key 'datasets[0].path': '': empty path" },
	{ "{\"outputs\":[{\"path\":\"/pfs/x\\n\"}]}",
	  "key 'outputs[0].path': '/pfs/x?': contains a control character" },
	{ "{\"datasets\":[{\"path\":\"/a\",\"name\":\"a/b\"}]}",
	  "key 'datasets[0].name': invalid name 'a/b' (want [A-Za-z0-9_-]{1,31})" },
	{ "{\"datasets\":[{\"path\":\"/a\",\"name\":\"..\"}]}",
	  "key 'datasets[0].name': invalid name '..' (want [A-Za-z0-9_-]{1,31})" },
	{ "{\"datasets\":[{\"path\":\"/a\",\"name\":\"a.b\"}]}",
	  "key 'datasets[0].name': invalid name 'a.b' (want [A-Za-z0-9_-]{1,31})" },
	{ "{\"datasets\":[{\"path\":\"/a\",\"name\":\"\"}]}",
	  "key 'datasets[0].name': invalid name '' (want [A-Za-z0-9_-]{1,31})" },
	{ "{\"datasets\":[{\"path\":\"/a\",\"name\":"
	  "\"abcdefghijabcdefghijabcdefghijab\"}]}",
	  "key 'datasets[0].name': invalid name "
	  "'abcdefghijabcdefghijabcdefghijab' (want [A-Za-z0-9_-]{1,31})" },
	{ "{\"datasets\":[{\"path\":\"/a\",\"name\":\"x\"},"
	  "{\"path\":\"/b\",\"name\":\"x\"}]}",
	  "key 'datasets[1].name': duplicate name 'x'" },
	{ "{\"datasets\":[{\"path\":\"/a\",\"name\":\"a-b\"},"
	  "{\"path\":\"/b\",\"name\":\"A_B\"}]}",
	  "key 'datasets[1].name': name 'A_B' is the same as 'a-b' once "
	  "upper-cased" },
	{ "{\"datasets\":[{\"path\":\"/a\",\"name\":\"x\"}],"
	  "\"outputs\":[{\"path\":\"/b\",\"name\":\"x\"}]}",
	  "key 'outputs[0].name': duplicate name 'x'" },
	{ "{\"datasets\":[{\"path\":\"/a\"},{\"path\":\"//a/\"}]}",
	  "key 'datasets[1].path': /a listed twice" },
	{ "{\"outputs\":[{\"path\":\"/a\"},{\"path\":\"/a\"}]}",
	  "key 'outputs[1].path': /a listed twice" },
	{ "{\"datasets\":[{\"path\":\"/a\",\"verify\":\"md5\"}]}",
	  "key 'datasets[0].verify': unknown value 'md5' (known: stat, none, "
	  "checksum)" },
	{ "{\"datasets\":[{\"path\":\"/a\",\"access\":\"Random\"}]}",
	  "key 'datasets[0].access': unknown value 'Random' (known: unknown, "
	  "random, sequential)" },
	{ "{\"outputs\":[{\"path\":\"/a\",\"drain\":\"later\"}]}",
	  "key 'outputs[0].drain': unknown value 'later' (known: async, end)" },
	{ "{\"outputs\":[{\"path\":\"/a\",\"tier\":\"a b\"}]}",
	  "key 'outputs[0].tier': invalid tier name 'a b' (want "
	  "[a-z0-9_-]{1,31})" },
	{ "{\"trace\":\"yes\"}", "key 'trace': expected true or false" },
	{ "{\"trace\":1}", "key 'trace': expected true or false" },
	{ "{\"timeout\":\"600\"}", "key 'timeout': expected an integer" },
	{ "{\"timeout\":1.5}", "key 'timeout': expected an integer" },
	{ "{\"timeout\":0}", "key 'timeout': 0 out of range 1..86400" },
	{ "{\"timeout\":86401}", "key 'timeout': 86401 out of range 1..86400" },
	{ "{\"timeout\":-5}", "key 'timeout': -5 out of range 1..86400" },
	{ "{\"timeout\":1e300}",
	  "key 'timeout': 1e+300 out of range 1..86400" },
	{ "{\"on_failure\":\"retry\"}",
	  "key 'on_failure': unknown value 'retry' (known: fail, fallback)" },
	{ "{\"on-failure\":\"fail\"}", "key 'on-failure': unknown key" },
};

START_TEST(test_json_errors)
{
	const struct json_err_case *c = &json_err_cases[_i];
	char err[CONF_ERR_MAX] = "";

	errno = 0;
	ck_assert_ptr_null(
	    profile_parse_json(c->json, "test", err, sizeof(err)));
	ck_assert_msg(strncmp(err, c->want, strlen(c->want)) == 0,
		      "case %d: want '%s', got '%s'", _i, c->want, err);
	ck_assert_int_ne(errno, 0);
}
END_TEST

START_TEST(test_json_limits)
{
	char err[CONF_ERR_MAX];
	char *big = malloc(PROFILE_JSON_MAX + 100);
	char path[2001];
	size_t off;

	/* Over PROFILE_JSON_MAX bytes (valid JSON even). */
	ck_assert_ptr_nonnull(big);
	off = (size_t)sprintf(big, "{\"description\":\"");
	memset(big + off, 'x', PROFILE_JSON_MAX);
	strcpy(big + off + PROFILE_JSON_MAX - 10, "\"}");
	ck_assert_ptr_null(profile_parse_json(big, "t", err, sizeof(err)));
	ck_assert_str_eq(err, "key 'profile': longer than 65536 bytes");
	/* Exactly at the limit is fine. */
	big[PROFILE_JSON_MAX - 2] = '"';
	big[PROFILE_JSON_MAX - 1] = '}';
	big[PROFILE_JSON_MAX] = '\0';
	profile_destroy(json_ok(big));

	/* 17 datasets, 17 outputs. */
	for (int out = 0; out < 2; out++) {
		off = (size_t)sprintf(big, "{\"%s\":[",
				      out ? "outputs" : "datasets");
		for (int i = 0; i < 17; i++)
			off += (size_t)sprintf(big + off,
					       "%s{\"path\":\"/d%d\"}",
					       i ? "," : "", i);
		strcpy(big + off, "]}");
		ck_assert_ptr_null(
		    profile_parse_json(big, "t", err, sizeof(err)));
		ck_assert_str_eq(err,
				 out ? "key 'outputs': more than 16 outputs"
				     : "key 'datasets': more than 16 "
				       "datasets");
		/* 16 is fine. */
		strcpy(strstr(big, ",{\"path\":\"/d16\"}"), "]}");
		profile_destroy(json_ok(big));
	}
	free(big);

	/* A 2000-byte path. */
	path[0] = '/';
	memset(path + 1, 'a', sizeof(path) - 2);
	path[sizeof(path) - 1] = '\0';
	big = malloc(4096);
	ck_assert_ptr_nonnull(big);
	snprintf(big, 4096, "{\"datasets\":[{\"path\":\"%s\"}]}", path);
	ck_assert_ptr_null(profile_parse_json(big, "t", err, sizeof(err)));
	ck_assert_msg(strncmp(err, "key 'datasets[0].path': '/aaaa", 30) == 0 &&
			  strstr(err, "...': longer than 1023 bytes"),
		      "%s", err);
	ck_assert_uint_lt(strlen(err), 200); /* the value is cut short */
	free(big);
}
END_TEST

START_TEST(test_names_derived)
{
	struct profile *p;

	/* Derived names avoid explicit ones, wherever these come. */
	p = json_ok("{\"datasets\":[{\"path\":\"/a/x\"},{\"path\":\"/b/x\"},"
		    "{\"path\":\"/c/y\",\"name\":\"x\"},{\"path\":\"/\"},"
		    "{\"path\":\"/d/"
		    "a-very-long-dataset-name-that-goes-on-and-on.tar\"},"
		    "{\"path\":\"/e/é\"}],"
		    "\"outputs\":[{\"path\":\"/o/x\"},{\"path\":\"/o/X-2\","
		    "\"name\":\"o\"},{\"path\":\"/\"}]}");
	ck_assert_str_eq(p->datasets[0].name, "x_2");
	ck_assert_str_eq(p->datasets[1].name, "x_3");
	ck_assert_str_eq(p->datasets[2].name, "x");
	ck_assert_str_eq(p->datasets[3].name, "data");
	ck_assert_str_eq(p->datasets[4].name,
			 "a-very-long-dataset-name-that-g");
	ck_assert_str_eq(p->datasets[5].name, "__");
	ck_assert_str_eq(p->outputs[0].name, "x_4");
	ck_assert_str_eq(p->outputs[1].name, "o");
	ck_assert_str_eq(p->outputs[2].name, "out");
	assert_round_trip(p);
	profile_destroy(p);

	/* Same upper-cased: "X-2" and "x_2" are one environment variable. */
	p = json_ok("{\"datasets\":[{\"path\":\"/a/x\",\"name\":\"X-2\"},"
		    "{\"path\":\"/b/x\"},{\"path\":\"/c/x\"}]}");
	ck_assert_str_eq(p->datasets[1].name, "x");
	ck_assert_str_eq(p->datasets[2].name, "x_3");
	profile_destroy(p);

	/* 32 entries all named "x..." stay distinct and within 31 bytes. */
	{
		char json[8192];
		size_t off = (size_t)sprintf(json, "{\"datasets\":[");

		for (int i = 0; i < 16; i++)
			off += (size_t)
			    sprintf(json + off,
				    "%s{\"path\":\"/%d/"
				    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"}",
				    i ? "," : "", i);
		off += (size_t)sprintf(json + off, "],\"outputs\":[");
		for (int i = 0; i < 16; i++)
			off += (size_t)
			    sprintf(json + off,
				    "%s{\"path\":\"/o%d/"
				    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"}",
				    i ? "," : "", i);
		strcpy(json + off, "]}");
		p = json_ok(json);
		ck_assert_str_eq(p->datasets[0].name,
				 "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
		ck_assert_str_eq(p->datasets[1].name,
				 "xxxxxxxxxxxxxxxxxxxxxxxxxxxxx_2");
		ck_assert_str_eq(p->outputs[15].name,
				 "xxxxxxxxxxxxxxxxxxxxxxxxxxxx_32");
		assert_round_trip(p);
		normalize_ok(p);
		ck_assert_int_eq(profile_validate(p, &conf,
						  PROFILE_CHECK_STRUCTURE, NULL,
						  0),
				 0);
		profile_destroy(p);
	}
}
END_TEST

/* ---- SPEC -------------------------------------------------------------- */

START_TEST(test_spec_site)
{
	struct profile *p = spec_ok("dl-train");

	ck_assert_str_eq(p->origin, "dl-train");
	ck_assert(!p->is_auto);
	ck_assert_int_eq(p->access, PROFILE_ACCESS_RANDOM);
	ck_assert_uint_eq(p->ndatasets, 2);
	ck_assert_str_eq(p->datasets[0].name, "imagenet");
	ck_assert_str_eq(p->datasets[1].name, "coco");
	ck_assert_uint_eq(p->noutputs, 1);
	ck_assert(p->trace);
	profile_destroy(p);

	/* The DESIGN.md example. */
	p = spec_ok("dl-train,data=/pfs/imagenet:nvme,out=/pfs/run1/ckpt,"
		    "on-failure=fallback");
	ck_assert_uint_eq(p->ndatasets, 1);
	ck_assert_str_eq(p->datasets[0].name, "imagenet");
	ck_assert_str_eq(p->datasets[0].path, "/pfs/imagenet");
	ck_assert_str_eq(p->datasets[0].tier, "nvme");
	ck_assert_uint_eq(p->noutputs, 1);
	ck_assert_str_eq(p->outputs[0].name, "ckpt");
	ck_assert_str_eq(p->outputs[0].path, "/pfs/run1/ckpt");
	ck_assert_ptr_null(p->outputs[0].tier);
	ck_assert_int_eq(p->outputs[0].drain, PROFILE_DRAIN_ASYNC);
	ck_assert(p->has_on_failure);
	ck_assert_int_eq(p->on_failure, STAGE_FAILURE_FALLBACK);
	ck_assert_int_eq(p->access, PROFILE_ACCESS_RANDOM); /* kept */
	profile_destroy(p);

	/* The first data= replaces, later ones append; same for out=. */
	p = spec_ok("dl-train,data=/x/a,tier=bb,data=//x//b/,timeout=60,"
		    "trace=false,out=/o/1,out=/o/2,data=/x/c:nvme");
	ck_assert_uint_eq(p->ndatasets, 3);
	ck_assert_str_eq(p->datasets[0].path, "/x/a");
	ck_assert_ptr_null(p->datasets[0].tier);
	ck_assert_str_eq(p->datasets[1].path, "/x/b");
	ck_assert_str_eq(p->datasets[2].path, "/x/c");
	ck_assert_str_eq(p->datasets[2].tier, "nvme");
	ck_assert_uint_eq(p->noutputs, 2);
	ck_assert_str_eq(p->outputs[0].name, "1");
	ck_assert_str_eq(p->outputs[1].name, "2");
	ck_assert_str_eq(p->tier, "bb");
	ck_assert_uint_eq(p->timeout, 60);
	ck_assert(!p->trace);
	assert_round_trip(p);
	profile_destroy(p);

	/* A ':' followed by a '/' belongs to the path. */
	p = spec_ok("none,data=/pfs/a:b/c,data=/pfs/x:y:bb");
	ck_assert_str_eq(p->datasets[0].path, "/pfs/a:b/c");
	ck_assert_ptr_null(p->datasets[0].tier);
	ck_assert_str_eq(p->datasets[1].path, "/pfs/x:y");
	ck_assert_str_eq(p->datasets[1].tier, "bb");
	profile_destroy(p);

	/* A derived name avoids the base profile's output names. */
	p = spec_ok("dl-train,data=/pfs/ckpt");
	ck_assert_str_eq(p->datasets[0].name, "ckpt_2");
	ck_assert_str_eq(p->outputs[0].name, "ckpt");
	profile_destroy(p);

	/* Without a conf, the tier syntax is still checked. */
	{
		char err[CONF_ERR_MAX];

		p = profile_from_spec("auto,data=/x:nvm", NULL, err,
				      sizeof(err));
		ck_assert_ptr_nonnull(p);
		ck_assert_str_eq(p->datasets[0].tier, "nvm");
		profile_destroy(p);
		ck_assert_ptr_null(profile_from_spec("auto,data=/x:NV", NULL,
						     err, sizeof(err)));
		ck_assert_str_eq(err, "key 'data': invalid tier name 'NV' "
				      "(want [a-z0-9_-]{1,31})");
	}
}
END_TEST

/* auto with nothing to stage: observed only when the site names its PFS,
 * and only a profile with nothing else in it. */
START_TEST(test_observe)
{
	struct profile *p = spec_ok("auto");
	char err[CONF_ERR_MAX] = "", *json;

	conf.pfs_path[0] = '\0';
	ck_assert(!profile_observe(p, &conf));
	ck_assert(!p->observe);
	ck_assert(!p->trace);
	snprintf(conf.pfs_path, sizeof(conf.pfs_path), "/pfs");
	ck_assert(profile_observe(p, &conf));
	ck_assert(p->observe);
	ck_assert(p->trace);
	normalize_ok(p);
	ck_assert_int_eq(profile_validate(p, &conf, PROFILE_CHECK_STRUCTURE,
					  err, sizeof(err)),
			 0);
	json = profile_to_json(p);
	ck_assert_ptr_nonnull(strstr(json, "\"observe\":true"));
	free(json);
	assert_round_trip(p);
	profile_destroy(p);

	/* The user's overrides: the job stages them; nothing observed. */
	p = spec_ok("auto,data=/pfs/x");
	ck_assert(!profile_observe(p, &conf));
	ck_assert(!p->observe);
	profile_destroy(p);
	p = spec_ok("auto,stream=/pfs/x");
	ck_assert(!profile_observe(p, &conf));
	profile_destroy(p);

	/* Not observed: the key is absent, as in every profile before. */
	p = spec_ok("dl-train");
	json = profile_to_json(p);
	ck_assert_ptr_null(strstr(json, "observe"));
	free(json);
	profile_destroy(p);
	p = json_ok("{\"observe\":false}");
	ck_assert(!p->observe);
	profile_destroy(p);
	conf.pfs_path[0] = '\0';
}
END_TEST

START_TEST(test_spec_auto_and_path)
{
	struct profile *p = spec_ok("auto");
	char spec[256];

	ck_assert(p->is_auto);
	ck_assert_str_eq(p->origin, "auto");
	ck_assert_uint_eq(p->ndatasets, 0);
	assert_round_trip(p);
	profile_destroy(p);

	p = spec_ok("auto,data=/pfs/x,timeout=30");
	ck_assert(p->is_auto);
	ck_assert_uint_eq(p->ndatasets, 1);
	ck_assert_uint_eq(p->timeout, 30);
	profile_destroy(p);

	/* A user's file: origin is the (normalized) path, whatever the file
	 * claims. */
	snprintf(spec, sizeof(spec), "/%s//user.json,tier=nvme", tmpdir);
	p = spec_ok(spec);
	ck_assert_str_eq(p->origin, tp("user.json"));
	ck_assert(!p->is_auto);
	ck_assert_str_eq(p->datasets[0].path, "/pfs/mine");
	ck_assert_str_eq(p->datasets[0].name, "mine");
	ck_assert_str_eq(p->tier, "nvme");
	profile_destroy(p);

	/* A path without ".json" works too (it has a '/'). */
	ck_assert_int_eq(rename(tp("user.json"), tp("user.prof")), 0);
	p = spec_ok(tp("user.prof"));
	ck_assert_str_eq(p->origin, tp("user.prof"));
	profile_destroy(p);
}
END_TEST

struct spec_err_case {
	const char *spec;
	const char *want;
};

static const struct spec_err_case spec_err_cases[] = {
	{ NULL, "key 'profile': empty" },
	{ "", "key 'profile': empty" },
	{ ",data=/x", "key 'profile': empty" },
	{ "dl-train,", "key 'spec': empty item between commas" },
	{ "dl-train,,data=/x", "key 'spec': empty item between commas" },
	{ "dl-train\n", "key 'spec': contains a control character" },
	{ "dl-train,data=/x\x01", "key 'spec': contains a control character" },
	{ "foo",
	  "key 'profile': unknown profile 'foo' (known: bad, broken, dl-train, "
	  "inference, none)" },
	{ "dl_train,data=/x",
	  "key 'profile': unknown profile 'dl_train' (known: bad, broken, "
	  "dl-train, inference, none)" },
	{ "foo!", "key 'profile': invalid profile name 'foo!' (want NAME, "
		  "/path/to/profile.json or auto)" },
	{ "Auto ", "key 'profile': invalid profile name 'Auto ' (want NAME, "
		   "/path/to/profile.json or auto)" },
	{ "relative/x", "key 'profile': 'relative/x': not an absolute path" },
	{ "../x", "key 'profile': '../x': not an absolute path" },
	{ "x.json", "key 'profile': 'x.json': not an absolute path" },
	{ "/pfs/../etc/x.json",
	  "key 'profile': '/pfs/../etc/x.json': contains a '..' component" },
	{ "/nonexistent/x.json",
	  "key 'profile': cannot read /nonexistent/x.json: No such file or "
	  "directory" },
	{ "/dev/null",
	  "key 'profile': cannot read /dev/null: not a regular file" },
	{ "/", "key 'profile': cannot read /: Is a directory" },
	{ "dl-train,x", "key 'x': expected key=value" },
	{ "dl-train,foo=1",
	  "key 'foo': unknown key (known: data, out, stream, tier, on-failure, timeout, "
	  "trace, spread)" },
	{ "dl-train,on_failure=fail",
	  "key 'on_failure': unknown key (known: data, out, stream, tier, on-failure, "
	  "timeout, trace, spread)" },
	{ "dl-train,=x",
	  "key '': unknown key (known: data, out, stream, tier, on-failure, timeout, "
	  "trace, spread)" },
	{ "dl-train,data=", "key 'data': empty value" },
	{ "dl-train,data=/x:../../t",
	  "key 'data': '/x:../../t': contains a '..' component" },
	{ "dl-train,data=/pfs/../etc/shadow",
	  "key 'data': '/pfs/../etc/shadow': contains a '..' component" },
	{ "dl-train,data=relative/x",
	  "key 'data': 'relative/x': not an absolute path" },
	{ "dl-train,data=relative",
	  "key 'data': 'relative': not an absolute path" },
	{ "dl-train,data=/pfs/x:nvm",
	  "key 'data': unknown tier 'nvm' (known: nvme, bb)" },
	{ "dl-train,data=/pfs/x:", "key 'data': empty tier" },
	{ "dl-train,data=/pfs/x,data=//pfs/x/",
	  "key 'data': /pfs/x listed twice" },
	{ "dl-train,out=/pfs/o,out=/pfs/o", "key 'out': /pfs/o listed twice" },
	{ "dl-train,out=rel", "key 'out': 'rel': not an absolute path" },
	{ "dl-train,tier=nvm",
	  "key 'tier': unknown tier 'nvm' (known: nvme, bb)" },
	{ "dl-train,tier=nvme,tier=bb", "key 'tier': given twice" },
	{ "dl-train,tier=", "key 'tier': empty value" },
	{ "dl-train,timeout=0", "key 'timeout': 0 out of range 1..86400" },
	{ "dl-train,timeout=86401",
	  "key 'timeout': 86401 out of range 1..86400" },
	{ "dl-train,timeout=99999999999999999999",
	  "key 'timeout': 99999999999999999999 out of range 1..86400" },
	{ "dl-train,timeout=abc", "key 'timeout': 'abc' is not a number" },
	{ "dl-train,timeout=-1", "key 'timeout': '-1' is not a number" },
	{ "dl-train,timeout=1.5", "key 'timeout': '1.5' is not a number" },
	{ "dl-train,timeout=60,timeout=70", "key 'timeout': given twice" },
	{ "dl-train,on-failure=retry",
	  "key 'on-failure': unknown value 'retry' (known: fail, fallback)" },
	{ "dl-train,trace=yes",
	  "key 'trace': expected true or false, not 'yes'" },
	{ "dl-train,trace=true,trace=false", "key 'trace': given twice" },
	{ "dl-train,data=/x,spread=maybe",
	  "key 'spread': unknown value 'maybe' (known: yes, no)" },
	{ "dl-train,data=/x,spread=yes,spread=no",
	  "key 'spread': given twice" },
	{ "dl-train,data=/x,spread=", "key 'spread': empty value" },
};

/* spread=yes applies to every dataset of the spec, data= items after it
 * too; it survives the trip to the nodes (JSON) and is refused on a tier
 * all nodes share. */
START_TEST(test_spec_spread)
{
	char err[CONF_ERR_MAX] = "";
	struct profile *p = spec_ok("dl-train,spread=yes,data=/x/a,data=/x/b");
	char *json;

	ck_assert_uint_eq(p->ndatasets, 2);
	ck_assert_int_eq(p->datasets[0].spread, PROFILE_SPREAD_YES);
	ck_assert_int_eq(p->datasets[1].spread, PROFILE_SPREAD_YES);
	normalize_ok(p);
	json = profile_to_json(p);
	ck_assert_ptr_nonnull(strstr(json, "\"spread\":\"yes\""));
	free(json);
	assert_round_trip(p);
	profile_destroy(p);

	p = spec_ok("dl-train,data=/x/a");
	ck_assert_int_eq(p->datasets[0].spread, PROFILE_SPREAD_NO);
	json = profile_to_json(p);
	ck_assert_ptr_null(strstr(json, "spread"));
	free(json);
	profile_destroy(p);

	p = spec_ok("dl-train,data=/x/a:bb,spread=yes");
	ck_assert_int_eq(profile_validate(p, &conf, PROFILE_CHECK_STRUCTURE,
					  err, sizeof(err)),
			 -1);
	ck_assert_str_eq(err, "key 'datasets[0].spread': tier 'bb' is shared "
			      "by every node (Shared=yes): there is nothing "
			      "to spread; use a node-local tier");
	profile_destroy(p);

	p = json_ok("{\"datasets\":[{\"path\":\"/x/a\",\"spread\":"
		    "\"yes\"},{\"path\":\"/x/b\"}]}");
	ck_assert_int_eq(p->datasets[0].spread, PROFILE_SPREAD_YES);
	ck_assert_int_eq(p->datasets[1].spread, PROFILE_SPREAD_NO);
	profile_destroy(p);
	ck_assert_ptr_null(profile_parse_json(
	    "{\"datasets\":[{\"path\":\"/x/a\",\"spread\":\"all\"}]}", "t", err,
	    sizeof(err)));
	ck_assert_ptr_nonnull(strstr(err, "spread"));
}
END_TEST

START_TEST(test_spec_errors)
{
	const struct spec_err_case *c = &spec_err_cases[_i];
	char err[CONF_ERR_MAX] = "";

	errno = 0;
	ck_assert_ptr_null(profile_from_spec(c->spec, &conf, err, sizeof(err)));
	ck_assert_msg(strcmp(err, c->want) == 0, "case %d: want '%s', got '%s'",
		      _i, c->want, err);
	ck_assert_int_ne(errno, 0);
}
END_TEST

START_TEST(test_spec_files)
{
	char err[CONF_ERR_MAX], want[CONF_ERR_MAX + 256];

	/* Errors inside a profile file name the file. */
	ck_assert_ptr_null(profile_from_spec("bad", &conf, err, sizeof(err)));
	snprintf(want, sizeof(want), "%s: key 'foo': unknown key",
		 tp("profiles/bad.json"));
	ck_assert_str_eq(err, want);
	ck_assert_ptr_null(
	    profile_from_spec("broken,data=/x", &conf, err, sizeof(err)));
	snprintf(want, sizeof(want), "%s: malformed JSON at line 3, column 1",
		 tp("profiles/broken.json"));
	ck_assert_str_eq(err, want);

	/* Too big. */
	{
		char *big = malloc(PROFILE_JSON_MAX + 2);

		ck_assert_ptr_nonnull(big);
		memset(big, ' ', PROFILE_JSON_MAX + 1);
		big[0] = '{';
		big[PROFILE_JSON_MAX] = '}';
		big[PROFILE_JSON_MAX + 1] = '\0';
		write_file(tp("big.json"), big);
		ck_assert_ptr_null(
		    profile_from_spec(tp("big.json"), &conf, err, sizeof(err)));
		snprintf(want, sizeof(want),
			 "key 'profile': cannot read %s: larger than 65536 "
			 "bytes",
			 tp("big.json"));
		ck_assert_str_eq(err, want);
		big[PROFILE_JSON_MAX - 1] = '}';
		big[PROFILE_JSON_MAX] = '\0';
		write_file(tp("big.json"), big);
		profile_destroy(spec_ok(tp("big.json")));
		free(big);
	}

	/* No site configuration for a NAME; an unlistable ProfileDir. */
	ck_assert_ptr_null(
	    profile_from_spec("dl-train", NULL, err, sizeof(err)));
	ck_assert_str_eq(err, "key 'profile': no site configuration to find "
			      "profile 'dl-train'");
	{
		struct conf c2 = conf;

		snprintf(c2.profile_dir, sizeof(c2.profile_dir), "%s",
			 tp("nope"));
		ck_assert_ptr_null(
		    profile_from_spec("foo", &c2, err, sizeof(err)));
		snprintf(want, sizeof(want),
			 "key 'profile': unknown profile 'foo' (known: none: "
			 "cannot list %s: No such file or directory)",
			 tp("nope"));
		ck_assert_str_eq(err, want);
		ck_assert_int_eq(mkdir(tp("empty"), 0755), 0);
		snprintf(c2.profile_dir, sizeof(c2.profile_dir), "%s",
			 tp("empty"));
		ck_assert_ptr_null(
		    profile_from_spec("foo", &c2, err, sizeof(err)));
		ck_assert_str_eq(err, "key 'profile': unknown profile 'foo' "
				      "(known: none)");
	}
}
END_TEST

START_TEST(test_spec_limits)
{
	char spec[6000], err[CONF_ERR_MAX];
	size_t off;

	/* 5000 bytes. */
	memset(spec, 'a', 5000);
	spec[5000] = '\0';
	ck_assert_ptr_null(profile_from_spec(spec, &conf, err, sizeof(err)));
	ck_assert_str_eq(err, "key 'spec': longer than 4096 bytes");
	/* 4097 bytes. */
	off = (size_t)sprintf(spec, "none,data=/");
	memset(spec + off, 'a', PROFILE_SPEC_MAX + 1 - off);
	spec[PROFILE_SPEC_MAX + 1] = '\0';
	ck_assert_ptr_null(profile_from_spec(spec, &conf, err, sizeof(err)));
	ck_assert_str_eq(err, "key 'spec': longer than 4096 bytes");

	/* A 2000-byte path fits in a SPEC but not in a path. */
	spec[off + 2000] = '\0';
	ck_assert_ptr_null(profile_from_spec(spec, &conf, err, sizeof(err)));
	ck_assert_msg(strncmp(err, "key 'data': '/aaa", 17) == 0 &&
			  strstr(err, "...': longer than 1023 bytes"),
		      "%s", err);

	/* 17 data=, 17 out=. */
	for (int out = 0; out < 2; out++) {
		off = (size_t)sprintf(spec, "none");
		for (int i = 0; i < 17; i++)
			off += (size_t)sprintf(spec + off, ",%s=/d/%d",
					       out ? "out" : "data", i);
		ck_assert_ptr_null(
		    profile_from_spec(spec, &conf, err, sizeof(err)));
		ck_assert_str_eq(err,
				 out ? "key 'out': more than 16 outputs"
				     : "key 'data': more than 16 datasets");
		*strrchr(spec, ',') = '\0';
		profile_destroy(spec_ok(spec));
	}
}
END_TEST

/* ---- normalize --------------------------------------------------------- */

START_TEST(test_normalize)
{
	struct profile *p = spec_ok("dl-train,out=/pfs/o,data=/pfs/a,"
				    "data=/pfs/b:bb");
	char *before, *after;

	normalize_ok(p);
	ck_assert_str_eq(p->tier, "nvme"); /* from the profile */
	ck_assert_str_eq(p->datasets[0].tier, "nvme");
	ck_assert_str_eq(p->datasets[1].tier, "bb");
	ck_assert_str_eq(p->outputs[0].tier, "nvme");
	ck_assert_int_eq(p->datasets[0].access, PROFILE_ACCESS_RANDOM);
	ck_assert_uint_eq(p->timeout, 900);
	ck_assert(p->has_on_failure);
	ck_assert_int_eq(p->on_failure, STAGE_FAILURE_FALLBACK);
	ck_assert_int_eq(profile_validate(p, &conf, PROFILE_CHECK_STRUCTURE,
					  NULL, 0),
			 0);
	/* Idempotent. */
	before = profile_to_json(p);
	normalize_ok(p);
	after = profile_to_json(p);
	ck_assert_str_eq(before, after);
	ck_assert_str_eq(
	    before,
	    "{\"origin\":\"dl-train\",\"tier\":\"nvme\",\"access\":"
	    "\"random\",\"datasets\":[{\"name\":\"a\",\"path\":\"/pfs/a\","
	    "\"tier\":\"nvme\",\"access\":\"random\",\"verify\":\"stat\"},"
	    "{\"name\":\"b\",\"path\":\"/pfs/b\",\"tier\":\"bb\","
	    "\"access\":\"random\",\"verify\":\"stat\"}],\"outputs\":[{"
	    "\"name\":\"o\",\"path\":\"/pfs/o\",\"tier\":\"nvme\","
	    "\"drain\":\"async\"}],\"trace\":true,\"timeout\":900,"
	    "\"on_failure\":\"fallback\"}");
	assert_round_trip(p);
	free(before);
	free(after);
	profile_destroy(p);

	/* No tier anywhere: conf's DefaultTier (bb). Explicit settings
	 * survive. */
	p = spec_ok("inference,data=/pfs/x,timeout=5,on-failure=fail");
	normalize_ok(p);
	ck_assert_str_eq(p->tier, "bb");
	ck_assert_str_eq(p->datasets[0].tier, "bb");
	ck_assert_int_eq(p->datasets[0].access, PROFILE_ACCESS_SEQUENTIAL);
	ck_assert_uint_eq(p->timeout, 5);
	ck_assert_int_eq(p->on_failure, STAGE_FAILURE_FAIL);
	profile_destroy(p);

	/* A dataset's own access wins over the profile's. */
	p = json_ok("{\"access\":\"random\",\"datasets\":[{\"path\":\"/a\","
		    "\"access\":\"sequential\"}]}");
	normalize_ok(p);
	ck_assert_int_eq(p->datasets[0].access, PROFILE_ACCESS_SEQUENTIAL);
	profile_destroy(p);
}
END_TEST

struct norm_err_case {
	const char *json;
	const char *want;
};

static const struct norm_err_case norm_err_cases[] = {
	{ "{\"tier\":\"nvm\"}",
	  "key 'tier': unknown tier 'nvm' (known: nvme, bb)" },
	{ "{\"datasets\":[{\"path\":\"/a\"},{\"path\":\"/b\",\"tier\":\"x\"}]}",
	  "key 'datasets[1].tier': unknown tier 'x' (known: nvme, bb)" },
	{ "{\"outputs\":[{\"path\":\"/a\",\"tier\":\"ram\"}]}",
	  "key 'outputs[0].tier': unknown tier 'ram' (known: nvme, bb)" },
};

START_TEST(test_normalize_errors)
{
	const struct norm_err_case *c = &norm_err_cases[_i];
	struct profile *p = json_ok(c->json);
	char err[CONF_ERR_MAX] = "";
	char *before = profile_to_json(p), *after;

	ck_assert_int_eq(profile_normalize(p, &conf, err, sizeof(err)), -1);
	ck_assert_str_eq(err, c->want);
	/* No side effects on failure. */
	after = profile_to_json(p);
	ck_assert_str_eq(before, after);
	free(before);
	free(after);
	profile_destroy(p);
}
END_TEST

START_TEST(test_normalize_null)
{
	struct profile *p = json_ok("{}");
	struct conf empty;
	char err[CONF_ERR_MAX];

	ck_assert_int_eq(profile_normalize(NULL, &conf, err, sizeof(err)), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(profile_normalize(p, NULL, err, sizeof(err)), -1);
	conf_set_defaults(&empty);
	ck_assert_int_eq(profile_normalize(p, &empty, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "key 'tier': no tiers configured");
	profile_destroy(p);
	profile_destroy(NULL);
}
END_TEST

/* ---- validate ---------------------------------------------------------- */

static char *xstrdup(const char *s)
{
	char *d = strdup(s);

	ck_assert_ptr_nonnull(d);
	return d;
}

START_TEST(test_validate_structure)
{
	struct profile *p = json_ok("{\"datasets\":[{\"path\":\"/a\"},"
				    "{\"path\":\"/b\"}],"
				    "\"outputs\":[{\"path\":\"/o\"}]}");
	char err[CONF_ERR_MAX];

	/* Not normalized yet. */
	ck_assert_int_eq(profile_validate(p, &conf, PROFILE_CHECK_STRUCTURE,
					  err, sizeof(err)),
			 -1);
	ck_assert_str_eq(err, "key 'datasets[0].tier': not set (profile not "
			      "normalized)");
	normalize_ok(p);
	ck_assert_int_eq(profile_validate(p, &conf, PROFILE_CHECK_STRUCTURE,
					  err, sizeof(err)),
			 0);
	/* With a NULL conf the tiers are not checked. */
	ck_assert_int_eq(profile_validate(p, NULL, PROFILE_CHECK_STRUCTURE, err,
					  sizeof(err)),
			 0);

	/* Damage a normalized profile field by field. */
	p->timeout = 0;
	ck_assert_int_eq(profile_validate(p, &conf, 0, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "key 'timeout': 0 out of range 1..86400");
	p->timeout = 86401;
	ck_assert_int_eq(profile_validate(p, &conf, 0, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "key 'timeout': 86401 out of range 1..86400");
	p->timeout = 10;
	p->has_on_failure = false;
	ck_assert_int_eq(profile_validate(p, &conf, 0, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "key 'on_failure': not set (profile not "
			      "normalized)");
	p->has_on_failure = true;

	free(p->datasets[1].name);
	p->datasets[1].name = xstrdup("../x");
	ck_assert_int_eq(profile_validate(p, &conf, 0, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "key 'datasets[1].name': invalid name '../x' "
			      "(want [A-Za-z0-9_-]{1,31})");
	free(p->datasets[1].name);
	p->datasets[1].name = xstrdup("A");
	ck_assert_int_eq(profile_validate(p, &conf, 0, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "key 'datasets[1].name': name 'A' is the same "
			      "as 'a' once upper-cased");
	free(p->datasets[1].name);
	p->datasets[1].name = xstrdup("b");

	free(p->datasets[1].path);
	p->datasets[1].path = xstrdup("/b/../etc");
	ck_assert_int_eq(profile_validate(p, &conf, 0, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "key 'datasets[1].path': '/b/../etc': contains "
			      "a '..' component");
	free(p->datasets[1].path);
	p->datasets[1].path = xstrdup("/b//");
	ck_assert_int_eq(profile_validate(p, &conf, 0, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "key 'datasets[1].path': '/b//': not normalized");
	free(p->datasets[1].path);
	p->datasets[1].path = xstrdup("/a");
	ck_assert_int_eq(profile_validate(p, &conf, 0, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "key 'datasets[1].path': /a listed twice");
	free(p->datasets[1].path);
	p->datasets[1].path = xstrdup("/b");

	free(p->outputs[0].tier);
	p->outputs[0].tier = xstrdup("ram");
	ck_assert_int_eq(profile_validate(p, &conf, 0, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "key 'outputs[0].tier': unknown tier 'ram' "
			      "(known: nvme, bb)");
	free(p->outputs[0].tier);
	p->outputs[0].tier = xstrdup("nvme");
	ck_assert_int_eq(profile_validate(p, &conf, 0, err, sizeof(err)), 0);

	ck_assert_int_eq(profile_validate(NULL, &conf, 0, err, sizeof(err)),
			 -1);
	profile_destroy(p);
}
END_TEST

/* Validate P with PROFILE_CHECK_ACCESS as uid/gid 65534 (when root) or as
 * ourselves, in a child; return its message ("" on success). */
static void validate_as_user(const struct profile *p, char *msg, size_t msglen)
{
	int fds[2], status;
	ssize_t n;
	size_t off = 0;
	pid_t pid;

	ck_assert_int_eq(pipe(fds), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		char err[CONF_ERR_MAX] = "";

		close(fds[0]);
		if (geteuid() == 0 &&
		    (setgroups(0, NULL) < 0 || setgid(NOBODY) < 0 ||
		     setuid(NOBODY) < 0)) {
			snprintf(err, sizeof(err), "cannot become nobody");
			(void)!write(fds[1], err, strlen(err));
			_exit(2);
		}
		if (profile_validate(p, &conf, PROFILE_CHECK_ACCESS, err,
				     sizeof(err)) == 0)
			err[0] = '\0';
		(void)!write(fds[1], err, strlen(err));
		_exit(0);
	}
	close(fds[1]);
	while (off + 1 < msglen &&
	       (n = read(fds[0], msg + off, msglen - 1 - off)) > 0)
		off += (size_t)n;
	msg[off] = '\0';
	close(fds[0]);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s", msg);
}

static struct profile *access_profile(const char *data, const char *out)
{
	char json[1024];
	struct profile *p;

	snprintf(json, sizeof(json),
		 "{\"datasets\":[%s%s%s],\"outputs\":[%s%s%s]}",
		 data ? "{\"path\":\"" : "", data ? data : "",
		 data ? "\"}" : "", out ? "{\"path\":\"" : "", out ? out : "",
		 out ? "\"}" : "");
	p = json_ok(json);
	normalize_ok(p);
	return p;
}

static void expect_access(const char *data, const char *out, bool as_user,
			  const char *want)
{
	struct profile *p = access_profile(data, out);
	char err[CONF_ERR_MAX] = "";

	if (as_user) {
		validate_as_user(p, err, sizeof(err));
	} else if (profile_validate(p, &conf, PROFILE_CHECK_ACCESS, err,
				    sizeof(err)) == 0) {
		err[0] = '\0';
	}
	ck_assert_str_eq(err, want);
	profile_destroy(p);
}

/* streams: stream=PATH (repeatable, the first replaces the base's),
 * "streams": [PATH...], kept through normalize and to_json, refused when
 * relative, twice, too many, also staged, or unreadable. */
START_TEST(test_streams)
{
	char err[CONF_ERR_MAX], *json;
	struct profile *p, *q;

	p = profile_from_spec("inference,stream=/pfs//b/,stream=/pfs/c", &conf,
			      err, sizeof(err));
	ck_assert_msg(p != NULL, "%s", err);
	ck_assert_uint_eq(p->nstreams, 2);
	ck_assert_str_eq(p->streams[0], "/pfs/b");
	ck_assert_str_eq(p->streams[1], "/pfs/c");
	ck_assert_int_eq(profile_normalize(p, &conf, err, sizeof(err)), 0);
	ck_assert_msg(profile_validate(p, &conf, PROFILE_CHECK_STRUCTURE, err,
				       sizeof(err)) == 0,
		      "%s", err);
	json = profile_to_json(p);
	ck_assert_ptr_nonnull(
	    strstr(json, "\"streams\":[\"/pfs/b\",\"/pfs/c\"]"));
	/* The daemon parses what the plugin wrote. */
	q = profile_parse_json(json, "normalized", err, sizeof(err));
	ck_assert_msg(q != NULL, "%s", err);
	ck_assert_uint_eq(q->nstreams, 2);
	ck_assert_str_eq(q->streams[1], "/pfs/c");
	profile_destroy(q);
	free(json);
	profile_destroy(p);

	/* No streams: no "streams" key (normalized JSON unchanged). */
	p = profile_from_spec("inference", &conf, err, sizeof(err));
	ck_assert_ptr_nonnull(p);
	json = profile_to_json(p);
	ck_assert_ptr_null(strstr(json, "streams"));
	free(json);
	profile_destroy(p);

	/* JSON form. */
	p = profile_parse_json("{\"streams\":[\"/pfs/x\"]}", "t", err,
			       sizeof(err));
	ck_assert_msg(p != NULL, "%s", err);
	ck_assert_uint_eq(p->nstreams, 1);
	profile_destroy(p);

	static const struct {
		const char *json, *spec, *want;
	} bad[] = {
		{ "{\"streams\":\"/pfs/x\"}", NULL,
		  "key 'streams': expected an array of paths" },
		{ "{\"streams\":[1]}", NULL,
		  "key 'streams[0]': expected a path" },
		{ "{\"streams\":[\"rel\"]}", NULL, "key 'streams[0]': 'rel'" },
		{ "{\"streams\":[\"/a\",\"/a/\"]}", NULL,
		  "key 'streams[1]': /a listed twice" },
		{ NULL, "inference,stream=x", "key 'stream': 'x'" },
		{ NULL, "inference,stream=/a,stream=/a",
		  "key 'stream': /a listed twice" },
		{ NULL, "inference,stream=", "key 'stream': empty value" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		p = bad[i].json
			? profile_parse_json(bad[i].json, "t", err, sizeof(err))
			: profile_from_spec(bad[i].spec, &conf, err,
					    sizeof(err));
		ck_assert_msg(p == NULL, "case %zu accepted", i);
		ck_assert_msg(strstr(err, bad[i].want) != NULL,
			      "case %zu: want '%s', got '%s'", i, bad[i].want,
			      err);
	}
	/* More than PROFILE_MAX_STREAMS. */
	char spec[2048] = "inference";
	for (int i = 0; i <= PROFILE_MAX_STREAMS; i++)
		snprintf(spec + strlen(spec), sizeof(spec) - strlen(spec),
			 ",stream=/pfs/s%d", i);
	p = profile_from_spec(spec, &conf, err, sizeof(err));
	ck_assert_ptr_null(p);
	ck_assert_ptr_nonnull(strstr(err, "more than 16 streams"));

	/* Staged and streamed at once: refused by validate. */
	p = profile_from_spec("inference,data=/pfs/x,stream=/pfs/x", &conf, err,
			      sizeof(err));
	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(profile_normalize(p, &conf, err, sizeof(err)), 0);
	ck_assert_int_eq(profile_validate(p, &conf, PROFILE_CHECK_STRUCTURE,
					  err, sizeof(err)),
			 -1);
	ck_assert_ptr_nonnull(strstr(err, "also a dataset to stage"));
	profile_destroy(p);

	/* Access: a stream must be readable, as data= must. */
	p = profile_from_spec("inference,stream=/nonexistent/x", &conf, err,
			      sizeof(err));
	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(profile_normalize(p, &conf, err, sizeof(err)), 0);
	ck_assert_int_eq(profile_validate(p, &conf, PROFILE_CHECK_ACCESS, err,
					  sizeof(err)),
			 -1);
	ck_assert_str_eq(err, "key 'stream': /nonexistent/x: No such file or "
			      "directory");
	profile_destroy(p);
}
END_TEST

START_TEST(test_validate_access)
{
	char want[CONF_ERR_MAX];

	write_file(tp("file"), "data");
	ck_assert_int_eq(chmod(tp("file"), 0644), 0);
	ck_assert_int_eq(mkdir(tp("dir"), 0755), 0);
	ck_assert_int_eq(mkdir(tp("outdir"), 0777), 0);
	ck_assert_int_eq(chmod(tp("outdir"), 0777), 0);
	ck_assert_int_eq(mkfifo(tp("fifo"), 0644), 0);

	/* Readable dataset file and dir, writable output dir, or a new output
	 * under a writable parent. */
	expect_access(tp("file"), tp("outdir"), false, "");
	expect_access(tp("dir"), tp("outdir/new"), false, "");
	expect_access(tp("file"), tp("outdir"), true, "");
	expect_access(tp("dir"), tp("outdir/new"), true, "");

	snprintf(want, sizeof(want),
		 "key 'data': %s: No such file or directory", tp("missing"));
	expect_access(tp("missing"), NULL, false, want);
	snprintf(want, sizeof(want),
		 "key 'data': %s: not a regular file or directory", tp("fifo"));
	expect_access(tp("fifo"), NULL, false, want);
	snprintf(want, sizeof(want),
		 "key 'out': %s: parent %s: No such file or directory",
		 tp("no/such"), tp("no"));
	expect_access(NULL, tp("no/such"), false, want);
	snprintf(want, sizeof(want), "key 'out': %s: Not a directory",
		 tp("file"));
	expect_access(NULL, tp("file"), false, want);
	snprintf(want, sizeof(want), "key 'out': %s: Not a directory",
		 tp("file/x"));
	expect_access(NULL, tp("file/x"), false, want);
}
END_TEST

START_TEST(test_validate_permissions)
{
	char want[CONF_ERR_MAX];

	/* Mode 000 file, a directory without x, a directory nobody may
	 * search, outputs nobody may write. Root would pass all of these:
	 * the checks run as uid 65534 (or as the non-root tester). */
	write_file(tp("secret"), "x");
	ck_assert_int_eq(chmod(tp("secret"), 0), 0);
	ck_assert_int_eq(mkdir(tp("noexec"), 0755), 0);
	ck_assert_int_eq(chmod(tp("noexec"), 0644), 0);
	ck_assert_int_eq(mkdir(tp("closed"), 0700), 0);
	write_file(tp("closed/inner"), "x");
	ck_assert_int_eq(chmod(tp("closed"), 0), 0);
	ck_assert_int_eq(mkdir(tp("ro"), 0555), 0);
	ck_assert_int_eq(chmod(tp("ro"), 0555), 0);

	snprintf(want, sizeof(want),
		 "key 'data': %s: Permission denied (not readable by you)",
		 tp("secret"));
	expect_access(tp("secret"), NULL, true, want);
	snprintf(want, sizeof(want),
		 "key 'data': %s: Permission denied (not readable by you)",
		 tp("noexec"));
	expect_access(tp("noexec"), NULL, true, want);
	snprintf(want, sizeof(want),
		 "key 'data': %s: Permission denied (not readable by you)",
		 tp("closed/inner"));
	expect_access(tp("closed/inner"), NULL, true, want);
	snprintf(want, sizeof(want),
		 "key 'out': %s: Permission denied (not writable by you)",
		 tp("ro"));
	expect_access(NULL, tp("ro"), true, want);
	snprintf(want, sizeof(want),
		 "key 'out': %s: parent %s: Permission denied (not writable by "
		 "you)",
		 tp("ro/new"), tp("ro"));
	expect_access(NULL, tp("ro/new"), true, want);
}
END_TEST

/* ---- serialization and misc ------------------------------------------- */

START_TEST(test_round_trips)
{
	static const char *const specs[] = {
		"auto",
		"none",
		"dl-train",
		"inference,trace=true,timeout=86400",
		"dl-train,data=/pfs/with space/\"quoted\"\\back:nvme,"
		"out=/pfs/é/ü",
		"none,on-failure=fail,tier=bb",
	};

	for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
		struct profile *p = spec_ok(specs[i]);

		assert_round_trip(p); /* before normalizing */
		normalize_ok(p);
		assert_round_trip(p);
		ck_assert_int_eq(profile_validate(p, &conf,
						  PROFILE_CHECK_STRUCTURE, NULL,
						  0),
				 0);
		profile_destroy(p);
	}
}
END_TEST

START_TEST(test_to_json_limits)
{
	struct profile *p = calloc(1, sizeof(*p));
	char path[CONF_PATH_MAX];
	char *json;

	ck_assert_ptr_nonnull(p);
	ck_assert_ptr_null(profile_to_json(NULL));
	ck_assert_int_eq(errno, EINVAL);

	/* A NULL origin prints as "". */
	json = profile_to_json(p);
	ck_assert_str_eq(json, "{\"origin\":\"\",\"access\":\"unknown\","
			       "\"datasets\":[],\"outputs\":[],\"trace\":"
			       "false}");
	free(json);

	/* Paths full of quotes double in size when escaped: 32 of them do
	 * not fit in PROFILE_JSON_MAX, and to_json says so (E2BIG). */
	path[0] = '/';
	memset(path + 1, '"', sizeof(path) - 2);
	path[sizeof(path) - 1] = '\0';
	for (size_t i = 0; i < PROFILE_MAX_DATASETS; i++) {
		char name[8];

		snprintf(name, sizeof(name), "d%zu", i);
		p->datasets[i].name = xstrdup(name);
		p->datasets[i].path = xstrdup(path);
		p->outputs[i].name = xstrdup(name);
		p->outputs[i].path = xstrdup(path);
	}
	p->ndatasets = PROFILE_MAX_DATASETS;
	p->noutputs = PROFILE_MAX_OUTPUTS;
	errno = 0;
	ck_assert_ptr_null(profile_to_json(p));
	ck_assert_int_eq(errno, E2BIG);
	profile_destroy(p);
}
END_TEST

START_TEST(test_env_and_names)
{
	char buf[PROFILE_NAME_MAX];

	profile_env_name("imagenet", buf, sizeof(buf));
	ck_assert_str_eq(buf, "IMAGENET");
	profile_env_name("a-b_c9", buf, sizeof(buf));
	ck_assert_str_eq(buf, "A_B_C9");
	profile_env_name("abcdef", buf, 4);
	ck_assert_str_eq(buf, "ABC");
	profile_env_name(NULL, buf, sizeof(buf));
	ck_assert_str_eq(buf, "");
	profile_env_name("x", NULL, 0); /* no crash */
	profile_env_name("x", buf, 0);

	ck_assert_str_eq(profile_access_name(PROFILE_ACCESS_RANDOM), "random");
	ck_assert_str_eq(profile_access_name(PROFILE_ACCESS_SEQUENTIAL),
			 "sequential");
	ck_assert_str_eq(profile_access_name(PROFILE_ACCESS_UNKNOWN),
			 "unknown");
	ck_assert_str_eq(profile_verify_name(PROFILE_VERIFY_STAT), "stat");
	ck_assert_str_eq(profile_verify_name(PROFILE_VERIFY_NONE), "none");
	ck_assert_str_eq(profile_verify_name(PROFILE_VERIFY_CHECKSUM),
			 "checksum");
	ck_assert_str_eq(profile_drain_name(PROFILE_DRAIN_ASYNC), "async");
	ck_assert_str_eq(profile_drain_name(PROFILE_DRAIN_END), "end");
	ck_assert_str_eq(profile_drain_name((enum profile_drain)7), "unknown");
}
END_TEST

/* The profiles shipped in slurm-conf/profiles parse, normalize and
 * validate. Run from the top of the tree (as `make unit` does). */
START_TEST(test_shipped_profiles)
{
	static const char *const names[] = { "dl-train", "checkpoint-heavy",
					     "inference", "none" };
	struct conf c2 = conf;

	snprintf(c2.profile_dir, sizeof(c2.profile_dir), "%s",
		 "slurm-conf/profiles");
	if (access("slurm-conf/profiles", X_OK) < 0) {
		char cwd[256];

		ck_abort_msg("slurm-conf/profiles not found from %s",
			     getcwd(cwd, sizeof(cwd)) ? cwd : "?");
	}
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char err[CONF_ERR_MAX] = "";
		struct profile *p = profile_from_spec(names[i], &c2, err,
						      sizeof(err));

		ck_assert_msg(p != NULL, "%s: %s", names[i], err);
		ck_assert_int_eq(profile_normalize(p, &c2, err, sizeof(err)),
				 0);
		ck_assert_msg(profile_validate(p, &c2, PROFILE_CHECK_STRUCTURE,
					       err, sizeof(err)) == 0,
			      "%s: %s", names[i], err);
		assert_round_trip(p);
		if (strcmp(names[i], "dl-train") == 0)
			ck_assert_int_eq(p->access, PROFILE_ACCESS_RANDOM);
		if (strcmp(names[i], "inference") == 0)
			ck_assert_int_eq(p->access, PROFILE_ACCESS_SEQUENTIAL);
		if (strcmp(names[i], "checkpoint-heavy") == 0) {
			ck_assert(!p->trace);
			ck_assert_int_eq(p->on_failure, STAGE_FAILURE_FALLBACK);
		}
		if (strcmp(names[i], "none") == 0)
			ck_assert_uint_eq(p->ndatasets + p->noutputs, 0);
		profile_destroy(p);
	}
}
END_TEST

#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

static Suite *profile_suite(void)
{
	Suite *s = suite_create("profile");
	TCase *tj = tcase_create("json");
	TCase *ts = tcase_create("spec");
	TCase *tn = tcase_create("normalize");
	TCase *tv = tcase_create("validate");

	tcase_add_checked_fixture(tj, setup, teardown);
	tcase_add_test(tj, test_json_full);
	tcase_add_loop_test(tj, test_json_errors, 0, N(json_err_cases));
	tcase_add_test(tj, test_json_limits);
	tcase_add_test(tj, test_names_derived);
	tcase_add_test(tj, test_round_trips);
	tcase_add_test(tj, test_to_json_limits);
	tcase_add_test(tj, test_env_and_names);
	suite_add_tcase(s, tj);

	tcase_add_checked_fixture(ts, setup, teardown);
	tcase_add_test(ts, test_spec_site);
	tcase_add_test(ts, test_spec_auto_and_path);
	tcase_add_test(ts, test_observe);
	tcase_add_loop_test(ts, test_spec_errors, 0, N(spec_err_cases));
	tcase_add_test(ts, test_spec_spread);
	tcase_add_test(ts, test_spec_files);
	tcase_add_test(ts, test_spec_limits);
	tcase_add_test(ts, test_shipped_profiles);
	suite_add_tcase(s, ts);

	tcase_add_checked_fixture(tn, setup, teardown);
	tcase_add_test(tn, test_normalize);
	tcase_add_loop_test(tn, test_normalize_errors, 0, N(norm_err_cases));
	tcase_add_test(tn, test_normalize_null);
	suite_add_tcase(s, tn);

	tcase_add_checked_fixture(tv, setup, teardown);
	tcase_add_test(tv, test_validate_structure);
	tcase_add_test(tv, test_validate_access);
	tcase_add_test(tv, test_streams);
	tcase_add_test(tv, test_validate_permissions);
	suite_add_tcase(s, tv);
	return s;
}

int main(void)
{
	return check_run(profile_suite());
}
