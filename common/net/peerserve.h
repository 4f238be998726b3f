/* peerserve.h - a bounded TCP server for common/net/peernet requests.
 *
 * iostaged's node-to-node channel (daemon/cluster/peer.c) and iostagectld
 * (ctld/service.c) serve the same way: an accept thread polls the
 * listening socket and a stop pipe, and each connection gets a detached
 * thread of its own that reads one request, answers it and closes. A
 * thread per connection keeps a slow client (or one that never sends)
 * from holding up the others; conn_max bounds them, and a connection over
 * the bound gets a one-line refusal at once, so the client retries later
 * rather than queueing unseen. A thread whose connection is done waits
 * up to PEERSERVE_IDLE_S for the next one before it ends (at most
 * PEERSERVE_IDLE_MAX threads wait; the others end at once): starting and
 * ending a thread per request (its stack faulted in, the allocator's
 * thread cache filled and flushed) was a quarter of the CPU of a
 * history query (bench/README.md). What a connection's thread does with its request
 * is the caller's (the serve callback); sending the reply, closing and
 * the count are here (a callback may keep the connection and answer
 * on it itself: PEERSERVE_TAKEN). Library code: nothing here logs; what the caller
 * may want to log goes to its warn callback as one line.
 */
#ifndef IOSTAGE_PEERSERVE_H
#define IOSTAGE_PEERSERVE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include <cJSON.h>

/* Read and answer the request on FD (a connected socket; do not close
 * it): returns the reply (sent and deleted by the caller's thread; NULL
 * sends "out of memory"), or PEERSERVE_TAKEN when the callback kept the
 * connection and answered on it itself (a session: several exchanges
 * on one connection, common/net/peerfetch.h); FD is then only closed.
 * Runs in the connection's own thread, which a session holds for its
 * whole life: conn_max counts it like any other connection. */
typedef cJSON *(*peerserve_fn)(int fd, void *arg);

/* What a serve callback returns when it answered on FD itself. Never
 * dereferenced nor deleted. */
extern cJSON peerserve_taken;
#define PEERSERVE_TAKEN (&peerserve_taken)

/* A line worth a warning ("connection refused: 64 already served"). */
typedef void (*peerserve_warn_fn)(const char *line);

#define PEERSERVE_IDLE_S 30
#define PEERSERVE_IDLE_MAX 64 /* idle threads kept at most */

struct peerserve {
	/* Set by the caller before peerserve_start(). */
	unsigned conn_max;          /* connections served at once */
	size_t stack_size;          /* of a connection's thread; 0: default */
	int send_ms;                /* deadline for sending a reply */
	const char *busy_fmt;       /* error reply over the bound; one %u */
	const char *nothread_error; /* when no thread could be started */
	peerserve_fn serve;
	void *arg;
	peerserve_warn_fn warn; /* may be NULL */

	/* Private. */
	int listen_fd;
	int stop_pipe[2];
	pthread_t accept_thread;
	bool running;
	pthread_mutex_t lock;
	pthread_cond_t cond;      /* nconn or nthreads went down */
	pthread_cond_t idle_cond; /* a connection for an idle thread, or stop */
	unsigned nconn;           /* connections being served */
	unsigned nthreads;        /* connection threads, idle ones included */
	unsigned nidle;           /* threads waiting for a connection */
	int *queue;               /* connections handed to idle threads */
	unsigned qhead, qlen;     /* ring of conn_max */
	bool stopping;
};

/* Start serving LISTEN_FD (from peernet_listen; the server owns it from
 * here, on failure too) in an accept thread that blocks every signal.
 * 0, or -1 with err. */
int peerserve_start(struct peerserve *s, int listen_fd, char *err,
		    size_t errlen);

/* Send REPLY on FD within SEND_MS (a reply over PEERNET_LINE_MAX is
 * replaced by an error saying so; NULL by "out of memory"), delete it and
 * close FD. */
void peerserve_reply_and_close(int fd, cJSON *reply, int send_ms);

/* Stop accepting, close the listening socket, and wait up to WAIT_S
 * seconds for the connections being served to end and every connection
 * thread to be gone. Returns true when none is left (their callbacks no
 * longer run). Safe on a server never started. */
bool peerserve_stop(struct peerserve *s, int wait_s);

#endif /* IOSTAGE_PEERSERVE_H */
