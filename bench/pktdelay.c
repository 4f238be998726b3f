/*
 * pktdelay - hold every packet of one NFQUEUE queue for a fixed time, then
 * accept it. This kernel has no netem qdisc; bench/pfs.sh sends the packets
 * the simulated PFS server receives (iptables raw PREROUTING in its
 * namespace) to this queue, which adds a fixed round-trip delay to every
 * exchange with it.
 *
 *   iostage-pktdelay -q QUEUE -d MICROSECONDS
 *
 * One thread: a packet's verdict is due at arrival + delay; packets leave in
 * arrival order (a fixed delay keeps them ordered), so a FIFO ring suffices.
 * Between arrivals the loop sleeps with ppoll until the oldest packet is due
 * (sub-millisecond). Runs until SIGTERM/SIGINT; on exit every held packet is
 * accepted so no connection is left stuck.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <libnetfilter_queue/libnetfilter_queue.h>
#include <linux/netfilter.h>
#include <linux/netlink.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define RING 65536 /* packets held at once; the queue's maxlen matches */

struct held {
	uint32_t id;
	uint64_t due_ns;
};

static struct held ring[RING];
static unsigned head, tail; /* ring[head..tail) are held */
static uint64_t delay_ns;
static volatile sig_atomic_t stop;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int on_packet(struct nfq_q_handle *qh, struct nfgenmsg *msg,
		     struct nfq_data *nfa, void *data)
{
	(void)msg;
	(void)data;
	struct nfqnl_msg_packet_hdr *ph = nfq_get_msg_packet_hdr(nfa);
	if (!ph)
		return 0;
	uint32_t id = ntohl(ph->packet_id);
	if (tail - head >= RING) /* full: let it through rather than drop */
		return nfq_set_verdict(qh, id, NF_ACCEPT, 0, NULL);
	ring[tail % RING] = (struct held){ id, now_ns() + delay_ns };
	tail++;
	return 0;
}

static void release_due(struct nfq_q_handle *qh, uint64_t now)
{
	while (head != tail && ring[head % RING].due_ns <= now) {
		nfq_set_verdict(qh, ring[head % RING].id, NF_ACCEPT, 0, NULL);
		head++;
	}
}

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

int main(int argc, char **argv)
{
	int queue = -1, opt;
	long us = -1;
	while ((opt = getopt(argc, argv, "q:d:")) != -1) {
		if (opt == 'q')
			queue = atoi(optarg);
		else if (opt == 'd')
			us = atol(optarg);
		else
			goto usage;
	}
	if (queue < 0 || queue > 65535 || us < 0 || us > 10000000)
		goto usage;
	delay_ns = (uint64_t)us * 1000u;

	struct sigaction sa = { .sa_handler = on_signal };
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);

	struct nfq_handle *h = nfq_open();
	if (!h) {
		fprintf(stderr, "pktdelay: nfq_open: %s\n", strerror(errno));
		return 1;
	}
	struct nfq_q_handle *qh = nfq_create_queue(h, (uint16_t)queue,
						   on_packet, NULL);
	if (!qh) {
		fprintf(
		    stderr,
		    "pktdelay: queue %d: cannot bind (%s; another program on it?)\n",
		    queue, strerror(errno));
		return 1;
	}
	/* Metadata only: the payload is never looked at. */
	if (nfq_set_mode(qh, NFQNL_COPY_META, 0) < 0 ||
	    nfq_set_queue_maxlen(qh, RING) < 0) {
		fprintf(stderr, "pktdelay: queue %d: cannot configure: %s\n",
			queue, strerror(errno));
		return 1;
	}
	/* A full kernel queue passes packets instead of dropping them; GRO'd
	 * packets are queued whole rather than cut up (CPU on 2 cores). */
	nfq_set_queue_flags(qh, NFQA_CFG_F_FAIL_OPEN | NFQA_CFG_F_GSO,
			    NFQA_CFG_F_FAIL_OPEN | NFQA_CFG_F_GSO);
	int fd = nfq_fd(h);
	nfnl_rcvbufsiz(nfq_nfnlh(h), 64u << 20);
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	/* Our lost packets would be retransmitted late: never report ENOBUFS. */
	int one = 1;
	setsockopt(fd, SOL_NETLINK, NETLINK_NO_ENOBUFS, &one, sizeof one);

	static char buf[1 << 16];
	while (!stop) {
		uint64_t now = now_ns();
		release_due(qh, now);
		struct timespec ts, *tsp = NULL;
		if (head != tail) {
			uint64_t wait = ring[head % RING].due_ns - now;
			ts.tv_sec = (time_t)(wait / 1000000000u);
			ts.tv_nsec = (long)(wait % 1000000000u);
			tsp = &ts;
		}
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int n = ppoll(&p, 1, tsp, NULL);
		if (n < 0 && errno != EINTR) {
			perror("pktdelay: ppoll");
			break;
		}
		if (n > 0) {
			for (;;) {
				ssize_t len = recv(fd, buf, sizeof buf, 0);
				if (len <= 0)
					break;
				nfq_handle_packet(h, buf, (int)len);
			}
		}
	}
	release_due(qh, UINT64_MAX);
	nfq_destroy_queue(qh);
	nfq_close(h);
	return 0;

usage:
	fprintf(stderr, "usage: %s -q QUEUE(0-65535) -d MICROSECONDS\n",
		argv[0]);
	return 2;
}
