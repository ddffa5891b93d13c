#!/bin/bash
# Separate hosts on one machine for the multi-rank tests and benchmarks: N network namespaces
# PREFIX0..PREFIX<N-1>, each with a veth to a bridge PREFIXbr, addresses SUBNET.1.. (SUBNET
# is three octets, e.g. 10.77.0), so that MPI's traffic between ranks crosses a network
# (veth and a bridge) instead of shared memory or loopback. Needs root (ip netns).
#   netns_hosts.sh up PREFIX N SUBNET        make the namespaces and the bridge
#   netns_hosts.sh down PREFIX N             remove them (whatever of them exists)
#   netns_hosts.sh mpirun PREFIX SUBNET N CMD...
#        mpirun -np N, rank K running CMD in namespace PREFIX<K>; MPI over TCP on SUBNET only.
#        mpirun's PMIx server listens on the bridge's address so that ranks in their
#        namespaces reach it (its default, loopback, is each namespace's own).
#   netns_hosts.sh bytes PREFIX N            bytes sent and received over the veths in all
set -euo pipefail

command=$1 prefix=$2
case $command in
  up)
    n=$3 subnet=$4
    ip link add "${prefix}br" type bridge
    ip addr add "$subnet.254/24" dev "${prefix}br"
    ip link set "${prefix}br" up
    for ((k = 0; k < n; k++)); do
      ip netns add "$prefix$k"
      ip link add "${prefix}v$k" type veth peer name eth0 netns "$prefix$k"
      ip link set "${prefix}v$k" master "${prefix}br" up
      ip -n "$prefix$k" addr add "$subnet.$((k + 1))/24" dev eth0
      ip -n "$prefix$k" link set eth0 up
      ip -n "$prefix$k" link set lo up
    done
    ;;
  down)
    n=$3
    for ((k = 0; k < n; k++)); do ip netns del "$prefix$k" 2>/dev/null || true; done
    ip link del "${prefix}br" 2>/dev/null || true
    ;;
  mpirun)
    subnet=$3 n=$4
    shift 4
    export PMIX_MCA_ptl_tcp_remote_connections=1 PMIX_MCA_ptl_tcp_if_include="$subnet.0/24"
    exec mpirun --allow-run-as-root --oversubscribe --bind-to none -np "$n" \
      --mca btl tcp,self --mca btl_tcp_if_include "$subnet.0/24" \
      sh -c 'exec ip netns exec "$0$OMPI_COMM_WORLD_RANK" "$@"' "$prefix" "$@"
    ;;
  bytes)
    n=$3 total=0
    for ((k = 0; k < n; k++)); do
      for d in rx tx; do
        total=$((total + $(cat "/sys/class/net/${prefix}v$k/statistics/${d}_bytes")))
      done
    done
    echo "$total"
    ;;
  *)
    echo "usage: $0 up|down|mpirun|bytes PREFIX ..." >&2
    exit 2
    ;;
esac
