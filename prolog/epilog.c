/* epilog.c - iostage-epilog: drain the job's outputs, release its
 * node-local directories.
 *
 * Like the Prolog, an Epilog that fails drains the node, so this always
 * exits 0 and reports problems to syslog. "finish" first drains what is
 * left of the outputs (iostaged waits up to DrainTimeout, then keeps the
 * rest aside), then removes the job's directories: our own deadline is
 * DrainTimeout plus a margin for that removal, so the daemon's verdict
 * always arrives before we give up. Slurm's PrologEpilogTimeout, if set,
 * must exceed it too.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <cJSON.h>

#include "common/base/log.h"
#include "common/config/conf.h"
#include "common/net/proto.h"
#include "prolog/jobinfo.h"

/* After the drain: removing a large staged tree can take a while. */
#define EPILOG_MARGIN_S 300

/* iostaged died under our request, or before it, leaving its socket (a
 * crash; systemd restarts it 2 s later, slurm-conf/iostaged.service):
 * ask again for this long. A finish nobody sends would leave the job's
 * directories, pins and record to the restarted iostaged for ever; a
 * second finish is harmless (an unknown job is refused, a record filed
 * twice is a duplicate to iostagectld). No socket: iostaged was stopped
 * (it removes it), nothing to wait for. */
#define EPILOG_RETRY_S 30

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	static struct conf conf;
	const char *conf_path = IOSTAGE_CONF_PATH;
	struct jobinfo job;
	char err[CONF_ERR_MAX];
	cJSON *req, *reply;
	const cJSON *error;
	double t0;
	int opt, rc, deadline, tries = 0, again = 0;

	while ((opt = getopt(argc, argv, "c:")) != -1) {
		if (opt != 'c') {
			fprintf(stderr, "usage: iostage-epilog [-c CONF]\n");
			return 2;
		}
		conf_path = optarg;
	}
	log_init("iostage-epilog", getenv("IOSTAGE_LOG_STDERR") == NULL,
		 LOG_LEVEL_INFO);
	rc = jobinfo_from_env(&job, err, sizeof(err));
	if (rc <= 0) {
		if (rc < 0)
			log_errorx("%s", err);
		return 0;
	}
	if (conf_load(conf_path, &conf, err, sizeof(err)) < 0) {
		log_errorx("job %u: %s", job.jobid, err);
		return 0;
	}
	req = cJSON_CreateObject();
	if (!req || !cJSON_AddStringToObject(req, "op", "finish") ||
	    !cJSON_AddNumberToObject(req, "job", job.jobid)) {
		cJSON_Delete(req);
		log_errorx("job %u: out of memory", job.jobid);
		return 0;
	}
	/* DrainTimeout and PeerPartsTimeout <= 86400: this fits in an int.
	 * A multi-node job's head waits for the other nodes' parts, the
	 * others retry sending theirs, each up to PeerPartsTimeout. */
	deadline = (int)(conf.drain_timeout + conf.peer_parts_timeout +
			 EPILOG_MARGIN_S);
	t0 = now_s();
	for (;;) {
		reply = proto_call(conf.socket_path, req, deadline * 1000, err,
				   sizeof(err));
		/* "again": the job's stage worker has not stopped yet (stuck
		 * in a PFS that does not answer); each finish waits for it a
		 * while, up to our own deadline. */
		if (reply &&
		    cJSON_IsTrue(
			cJSON_GetObjectItemCaseSensitive(reply, "again")) &&
		    now_s() - t0 < deadline) {
			cJSON_Delete(reply);
			if (!again++)
				log_warningx("job %u: its stage worker has not "
					     "stopped yet; asking again for "
					     "up to %d s",
					     job.jobid, deadline);
			sleep(1);
			continue;
		}
		if (reply || now_s() - t0 >= EPILOG_RETRY_S ||
		    access(conf.socket_path, F_OK) < 0)
			break;
		if (!tries++)
			log_warningx("job %u: %s; asking again for up to %d s",
				     job.jobid, err, EPILOG_RETRY_S);
		sleep(1);
	}
	cJSON_Delete(req);
	if (!reply) {
		log_errorx("job %u: %s", job.jobid, err);
		return 0;
	}
	if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(reply, "ok"))) {
		error = cJSON_GetObjectItemCaseSensitive(reply, "error");
		log_errorx("job %u: finish refused: %s", job.jobid,
			   cJSON_IsString(error) ? error->valuestring : "?");
	} else {
		log_info("job %u: released", job.jobid);
	}
	cJSON_Delete(reply);
	return 0;
}
