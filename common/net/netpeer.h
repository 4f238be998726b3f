/* netpeer.h - which local user is at the other end of a TCP connection.
 *
 * HTTP clients of /metrics have no SO_PEERCRED. When the client runs on
 * this host, its socket is in /proc/net/tcp (or tcp6) with the client's
 * address and port as local_address, our port as rem_address, and its
 * owner's uid: the same answer identd gives. A client on another host is
 * not there, and the caller decides what a remote peer may see.
 */
#ifndef IOSTAGE_NETPEER_H
#define IOSTAGE_NETPEER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/types.h>

/* Parse one /proc/net/tcp or tcp6 line (FAMILY AF_INET or AF_INET6) and
 * tell whether its local end is PEER (address and port) and its remote
 * port is SERVER_PORT; if so *ret_uid is its owner. 1 (match), 0 (no
 * match or not a socket line). */
int netpeer_match_line(const char *line, int family,
		       const struct sockaddr *peer, unsigned server_port,
		       uid_t *ret_uid);

/* The uid owning the local socket connected from PEER to our SERVER_PORT.
 * 1 with *ret_uid (a local peer), 0 (not found: a peer on another host,
 * or gone), -1 with errno (cannot read /proc/net/tcp*). */
int netpeer_uid(const struct sockaddr *peer, unsigned server_port,
		uid_t *ret_uid);

#endif /* IOSTAGE_NETPEER_H */
