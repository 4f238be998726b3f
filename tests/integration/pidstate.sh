# pidstate.sh - sourced by the test libraries and the cluster scripts of
# both suites: is a daemon still there?
#
# pid_running PID: PID is a live process. kill -0 is not enough: it
# succeeds on a zombie, and a daemon started with setsid is reparented to
# PID 1, which may reap it well after it exits (this machine's init: ~2 s
# later), so a wait on kill -0 waited for the reaper, not for the daemon.
pid_running() {
	local st t
	[ -n "${1:-}" ] || return 1
	read -r st 2>/dev/null </proc/"$1"/stat || return 1
	st=${st##*) }
	[ "${st%% *}" != Z ] && return 0
	# A zombie leader whose other threads still exit (killed in the middle
	# of I/O) still holds its files, sockets included: not gone yet.
	t=(/proc/"$1"/task/*)
	[ "${#t[@]}" -gt 1 ]
}
