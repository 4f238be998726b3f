/* fuzz_stage_lines.c - what a stage worker writes to iostaged.
 *
 * The worker is our binary, but it runs as the job's user, who may ptrace
 * it and make it write anything: to root, its output is outside input.
 * The bytes go through the framing stage.c reads them with
 * (proto_read_line over a socket, lines bounded) and each line through
 * stage_parse_line (daemon/staging/stage_proto.c), the real function of
 * libiostage-daemon.a. The first byte of the input is the worker's mode
 * as in the seeds (0 a check, 1 a build: stage.c acts on progress lines
 * only for a build); the rest is what the worker wrote. Every parsed
 * message must be one printable line, of a known kind. */
#include "tests/fuzz/fuzz.h"

#include <fcntl.h>
#include <sys/socket.h>

#include "common/net/proto.h"
#include "daemon/staging/stage_plan.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	return 0;
}

/* What stage.c's on_message keeps of a build's lines, summed as it sums
 * them (capped by the totals). */
struct sums {
	bool got_totals;
	uint64_t total_bytes, total_files, bytes, files;
};

static void check(const struct stage_msg *m, bool build, struct sums *s)
{
	const char *p;

	for (p = m->text; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			abort(); /* a control byte would reach the log */
	switch (m->kind) {
	case STAGE_MSG_RESULT:
		if (!m->ok && !m->text[0])
			abort(); /* a failure always says why */
		break;
	case STAGE_MSG_TOTALS:
		if (!s->got_totals) {
			s->got_totals = true;
			s->total_bytes = m->total_bytes;
			s->total_files = m->total_files;
		}
		break;
	case STAGE_MSG_PROGRESS:
		if (!build)
			break;
		s->bytes = m->bytes > s->total_bytes ? s->total_bytes
						     : m->bytes;
		s->files = m->files > s->total_files ? s->total_files
						     : m->files;
		if (s->bytes > s->total_bytes || s->files > s->total_files)
			abort();
		break;
	case STAGE_MSG_NOTE:
	case STAGE_MSG_OTHER:
		break;
	default:
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct proto_reader *rd;
	struct stage_msg m;
	struct sums sums = { 0 };
	bool build;
	char *line;
	int sv[2];

	if (size < 1 || size - 1 > 128 * 1024)
		return 0; /* the socket buffer: the writer must not block */
	build = data[0] % 2 == 1;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		abort();
	if (size > 1 && write(sv[1], data + 1, size - 1) != (ssize_t)(size - 1))
		abort();
	close(sv[1]);
	rd = proto_reader_create(sv[0]);
	if (!rd)
		abort();
	/* stage.c stops at the first line that is not an object. */
	while (proto_read_line(rd, 1000, &line) > 0 &&
	       stage_parse_line(line, &m) == 0)
		check(&m, build, &sums);
	proto_reader_destroy(rd);
	close(sv[0]);
	return 0;
}
