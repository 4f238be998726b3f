/* check_cliclient.c - unit tests for cli/client: which history answers
 * (iostagectld when ControllerHost= is set, else the node's iostaged) and
 * the one line a user sees when it cannot be reached. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <check.h>

#include "cli/client.h"
#include "cli/sched.h"
#include "common/net/peernet.h"
#include "tests/unit/check_run.h"

static char tmp[256], conf_path[300];

static void setup(void)
{
	snprintf(tmp, sizeof(tmp), "/tmp/check_cliclient.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmp));
	snprintf(conf_path, sizeof(conf_path), "%s/iostage.conf", tmp);
}

static void teardown(void)
{
	char cmd[400];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", tmp);
}

/* iostage.conf in tmp, with EXTRA appended */
static void write_conf(const char *extra)
{
	FILE *f = fopen(conf_path, "w");

	ck_assert_ptr_nonnull(f);
	fprintf(f,
		"SocketPath=%s/none.sock\nStateDir=%s\n"
		"Tier=nvme Path=%s Medium=nvme\n%s",
		tmp, tmp, tmp, extra);
	fclose(f);
}

/* A port nothing listens on (bound, then closed). */
static unsigned closed_port(void)
{
	char err[256];
	int fd = peernet_listen("127.0.0.1", 0, err, sizeof(err));
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	unsigned port;

	ck_assert_msg(fd >= 0, "%s", err);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&ss, &sl), 0);
	port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
	close(fd);
	return port;
}

START_TEST(test_service_configured_unreachable)
{
	struct client c = { .conf_path = conf_path };
	char extra[128], err[512], want[64];
	unsigned port = closed_port();
	cJSON *req = cJSON_CreateObject();

	snprintf(extra, sizeof(extra),
		 "ControllerHost=127.0.0.1\nControllerPort=%u\n", port);
	write_conf(extra);
	ck_assert_int_eq(client_init(&c), 0);
	ck_assert(client_has_service(&c));
	cJSON_AddStringToObject(req, "op", "recommend");
	ck_assert_ptr_null(
	    client_history_call_quiet(&c, req, 2000, err, sizeof(err)));
	/* one line naming the service, not the node's socket */
	snprintf(want, sizeof(want), "iostagectld 127.0.0.1:%u", port);
	ck_assert_msg(strstr(err, want) != NULL, "%s", err);
	ck_assert_ptr_null(strchr(err, '\n'));
	ck_assert_ptr_null(strstr(err, "none.sock"));
	cJSON_Delete(req);
}
END_TEST

START_TEST(test_no_service_asks_iostaged)
{
	struct client c = { .conf_path = conf_path };
	char err[512];
	cJSON *req = cJSON_CreateObject();

	write_conf("");
	ck_assert_int_eq(client_init(&c), 0);
	ck_assert(!client_has_service(&c));
	cJSON_AddStringToObject(req, "op", "recommend");
	ck_assert_ptr_null(
	    client_history_call_quiet(&c, req, 2000, err, sizeof(err)));
	ck_assert_msg(strstr(err, "none.sock") != NULL ||
			  strstr(err, "iostaged") != NULL,
		      "%s", err);
	ck_assert_ptr_null(strstr(err, "iostagectld"));
	cJSON_Delete(req);
}
END_TEST

/* sched_status's counters as Prometheus text: every family, labels, and
 * a reply missing its objects still gives zeros, never a crash. */
START_TEST(test_sched_prom)
{
	cJSON *r = cJSON_Parse(
	    "{\"ok\":true,\"placement\":{\"nodes_reporting\":3,"
	    "\"preferred\":5,\"honoured\":4,\"not_honoured\":1,"
	    "\"feature_updates\":2,\"feature_update_errors\":0},"
	    "\"prestage\":{\"staged\":2,\"failed\":1,\"bytes\":1048576,"
	    "\"hits\":1,\"missed\":1,\"seconds_saved\":2.5}}");
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	ck_assert_int_eq(sched_status_prom(r, f), 0);
	fclose(f);
	ck_assert_ptr_nonnull(strstr(buf, "iostage_ctld_placements_total"
					  "{outcome=\"honoured\"} 4\n"));
	ck_assert_ptr_nonnull(strstr(buf, "iostage_ctld_prestage_predictions_"
					  "total{outcome=\"missed\"} 1\n"));
	ck_assert_ptr_nonnull(strstr(buf, "iostage_ctld_prestage_saved_"
					  "seconds_total 2.5\n"));
	ck_assert_ptr_nonnull(strstr(buf, "# TYPE iostage_ctld_nodes_"
					  "reporting gauge\n"));
	free(buf);
	cJSON_Delete(r);
	r = cJSON_Parse("{\"ok\":true}");
	buf = NULL;
	f = open_memstream(&buf, &len);
	ck_assert_int_eq(sched_status_prom(r, f), 0);
	fclose(f);
	ck_assert_ptr_nonnull(
	    strstr(buf, "iostage_ctld_prestage_bytes_total 0\n"));
	free(buf);
	cJSON_Delete(r);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cliclient");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_service_configured_unreachable);
	tcase_add_test(tc, test_no_service_asks_iostaged);
	tcase_add_test(tc, test_sched_prom);
	suite_add_tcase(s, tc);
	return check_run(s);
}
