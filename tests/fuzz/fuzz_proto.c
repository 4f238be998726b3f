/* fuzz_proto.c - iostaged's wire framing and field helpers
 * (common/net/proto.c): bytes from a client's socket are read as lines
 * (proto_read_line: lines over PROTO_LINE_MAX refused and skipped), each
 * decoded as a request (proto_parse_request) and its common fields read
 * with the helpers every handler uses. */
#include "tests/fuzz/fuzz.h"

#include <sys/socket.h>

#include "common/net/proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const keys[] = { "job",     "uid",  "gid", "user",
					    "timeout", "path", "tier" };
	struct proto_reader *rd;
	char err[CONF_ERR_MAX], *line;
	int sv[2], r;

	if (size > 128 * 1024)
		return 0; /* the socket buffer: the writer must not block */
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		abort();
	if (size && write(sv[1], data, size) != (ssize_t)size)
		abort();
	shutdown(sv[1], SHUT_WR);
	rd = proto_reader_create(sv[0]);
	if (!rd)
		abort();
	while ((r = proto_read_line(rd, 1000, &line)) != 0) {
		const char *op, *s;
		uint32_t u;
		cJSON *req;

		if (r < 0) {
			if (errno == EMSGSIZE)
				continue;
			break;
		}
		req = proto_parse_request(line, &op, err, sizeof(err));
		if (!req)
			continue;
		for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
			(void)proto_get_string(req, keys[i], &s, err,
					       sizeof(err));
			(void)proto_get_u32(req, keys[i], &u, err, sizeof(err));
			(void)proto_u64(req, keys[i]);
		}
		(void)proto_get_job_id(req, &u, err, sizeof(err));
		cJSON_Delete(req);
	}
	proto_reader_destroy(rd);
	close(sv[0]);
	close(sv[1]);
	return 0;
}
