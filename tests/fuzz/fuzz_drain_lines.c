/* fuzz_drain_lines.c - what a drain worker writes to iostaged.
 *
 * The worker is our binary, but it runs as the job's user, who may ptrace
 * it and make it write anything: to root, its output is outside input.
 * The input is the bytes the worker wrote, read as the drain's loop reads
 * them: drain_worker_read splits them into lines (an overlong one is a
 * protocol violation), drain_worker_line parses each (drain_proto_parse)
 * and counts it in the job's phase. The whole input is also given to the
 * parser as one line. The real drain objects are linked
 * (libiostage-daemon.a); nothing is included or renamed.
 *
 * The "worker" iostaged would kill on a protocol violation is a child that
 * has exited and is never reaped, so the kill reaches nobody; the read end
 * is non-blocking and its writer stays open until the input is consumed,
 * so the loop never sees an EOF (which would reap that child).
 */
#include "tests/fuzz/fuzz.h"

#include <fcntl.h>
#include <sys/socket.h>

#include "daemon/staging/drain_internal.h"

static struct drain *drain;
static pid_t zombie;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	drain = drain_alloc(NULL, NULL); /* no thread, no fds, no records */
	if (!drain)
		abort();
	zombie = fork();
	if (zombie < 0)
		abort();
	if (zombie == 0)
		_exit(0);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct djob dj;
	struct dout *o = &dj.outs[0];
	struct drain_msg msg;
	char *line;
	int sv[2];

	if (size > 128 * 1024)
		return 0; /* the socket buffer: the writer must not block */
	memset(&dj, 0, sizeof(dj));
	dj.drain = drain;
	dj.id = 42;
	dj.uid = dj.gid = 1000;
	dj.nouts = 1;
	dj.phase = size && data[0] % 2 ? DRAIN_ENDING : DRAIN_RUNNING;
	o->job = &dj;
	snprintf(o->name, sizeof(o->name), "ckpt");
	o->root_fd = o->in = -1;
	o->pid = zombie;
	o->busy = o->busy_final = true;
	o->lbuf = malloc(DRAIN_LINE_MAX);
	if (!o->lbuf ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		abort();
	if (size && write(sv[1], data, size) != (ssize_t)size)
		abort();
	o->out = sv[0];
	fcntl(o->out, F_SETFL, fcntl(o->out, F_GETFL) | O_NONBLOCK);
	drain_worker_read(o);
	close(sv[1]);
	close(sv[0]);
	free(o->lbuf);

	line = fuzz_str(data, size);
	if (drain_proto_parse(line, &msg) == 0 &&
	    (memchr(msg.path, '\n', strlen(msg.path)) ||
	     memchr(msg.text, '\n', strlen(msg.text))))
		abort(); /* what reaches the log must be one line */
	free(line);
	return 0;
}
