# shellcheck shell=bash
# The cluster itself: nodes with their own names, addresses, /run and
# node-local directories, shared PFS, users and munge; jobs through the real
# plugin, Prolog and iostaged on every node.

test_srun_three_nodes_hostname() {
	local out
	out=$(as_user "$TEST_USER" srun -N3 hostname | sort | tr '\n' ' ')
	assert_eq "srun -N3 hostname from login" "n1 n2 n3 " "$out"
}

test_nodes_are_distinct() {
	local node seen="" addr sock loc
	for node in ctl login $CLUSTER_COMPUTE_NODES; do
		assert_eq "hostname on $node" "$node" "$(on_node "$node" hostname)"
		addr=$(on_node "$node" ip -4 -o addr show dev "$([ "$node" = ctl ] && echo br0 || echo eth0)" |
			awk '{print $4}')
		assert_contains "$node has an address on the cluster /24" "$addr" "10.199.0."
		assert_not_contains "addresses are distinct" "$seen" " $addr "
		seen="$seen $addr "
		# every node resolves every other by name (node-to-node TCP)
		assert_rc "$node resolves n1" 0 on_node "$node" getent hosts n1
	done
	# the host never sees the cluster's network
	assert_not_contains "host addresses" "$(ip -4 -o addr)" "10.199.0."
	# node-to-node TCP by name, n2 -> n1
	on_node n1 socat -T 5 TCP-LISTEN:20999,reuseaddr OPEN:"$TEST_WORKDIR/got",creat &
	sleep 0.3
	echo hello | on_node n2 socat -T 5 - TCP:n1:20999
	wait
	assert_file_eq "n2 sent to n1 by name" "$TEST_WORKDIR/got" hello
	# /run and $CLUSTER_DIR/local are per node; the iostaged socket too
	for node in $CLUSTER_COMPUTE_NODES; do
		sock=$(on_node "$node" stat -c %i /run/iostage/iostaged.sock)
		assert_eq "$node's socket is its own" \
			"$(stat -c %i "$CLUSTER_DIR/nodes/$node/run/iostage/iostaged.sock")" "$sock"
		on_node "$node" touch "$CLUSTER_DIR/local/mark.$node"
		assert_rc "$node wrote into its own local dir" 0 test -e "$(node_local "$node")/mark.$node"
		for loc in $CLUSTER_COMPUTE_NODES; do
			[ "$loc" = "$node" ] && continue
			assert_rc "$loc does not see $node's local dir" 1 test -e "$(node_local "$loc")/mark.$node"
		done
	done
	# munge works from every node with the default socket
	for node in login $CLUSTER_COMPUTE_NODES; do
		assert_rc "munge on $node" 0 on_node "$node" sh -c 'munge -n | unmunge >/dev/null'
	done
}

test_srun_three_nodes_stage() {
	local ds out node
	ds=$(pfs_dataset ds 20)
	out=$(as_user "$TEST_USER" srun -N3 --io-profile="dl-train,data=$ds" \
		bash -c 'diff -r "$IOSTAGE_DATA/" "$0/" && echo "$(hostname) same"' "$ds" 2>&1)
	for node in n1 n2 n3; do
		assert_contains "srun -N3: the copy on $node" "$out" "$node same"
		assert_eq "one version of ds on $node's nvme" 1 "$(cache_versions_of "$node" nvme "$ds" | wc -l)"
	done
}

# Two clusters on one machine never clash: a second one (one compute node)
# boots, runs a job and stops while this one keeps working.
test_second_cluster_alongside() {
	local d out
	d=$(mktemp -d /tmp/iostage-cl.XXXXXX)
	echo $$ >"$d/runner.pid"
	# (expanded now: d is gone when the EXIT trap runs)
	# shellcheck disable=SC2064
	trap "CLUSTER_QUIET=1 bash '$CL_DIR/cluster.sh' stop '$d'; rm -rf '$d'" EXIT
	CLUSTER_NODES=1 CLUSTER_QUIET=1 bash "$CL_DIR/cluster.sh" start "$d" ||
		fail "the second cluster did not start"
	out=$(CLUSTER_DIR=$d SLURM_CONF=$d/slurm.conf on_node login sinfo -h -o '%D %T')
	assert_eq "second cluster's nodes" "1 idle" "$out"
	out=$(CLUSTER_DIR=$d SLURM_CONF=$d/slurm.conf on_node_as "$TEST_USER" login srun -N1 hostname)
	assert_eq "a job on the second cluster" n1 "$out"
	assert_eq "this cluster still has its nodes" "3 idle" "$(sinfo -h -o '%D %T')"
	CLUSTER_QUIET=1 bash "$CL_DIR/cluster.sh" stop "$d"
	assert_eq "the second cluster's namespaces" "" \
		"$(ls /run/netns | grep "^$(CLUSTER_DIR=$d cluster_ns_prefix)-")"
	assert_eq "the second cluster's mounts" "" "$(grep -F " $d/" /proc/mounts)"
	assert_eq "the second cluster's processes (munged, slurm*, iostaged)" "" \
		"$(pgrep -f -- "$d/" | grep -vx "$$")"
	out=$(as_user "$TEST_USER" srun -N3 hostname | sort | tr '\n' ' ')
	assert_eq "this cluster after the other stopped" "n1 n2 n3 " "$out"
}
