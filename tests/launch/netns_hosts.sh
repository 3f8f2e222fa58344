# Two "hosts" on this machine for the launcher tests: network namespaces NS0 and NS1 joined by a
# veth pair VETH-0 / VETH-1 with addresses NET.1 and NET.2 (/24). Root only. Source it, then:
#
#   netns_up NS0 NS1 VETH NET     returns non-zero when the namespaces cannot be made
#   netns_down NS0 NS1 [NS...]    kills what runs in them and deletes them (the veth goes too)
#   netns_up_star SW VETH NET NS...   N hosts on one switch (below); netns_shape_star shapes them
#   tbf_burst RATE                tc tbf's bucket in bytes for RATE (e.g. 10gbit)

netns_up() {
  local ns0=$1 ns1=$2 veth=$3 net=$4
  ip netns add "$ns0" && ip netns add "$ns1" &&
    ip link add "$veth-0" type veth peer name "$veth-1" &&
    ip link set "$veth-0" netns "$ns0" && ip link set "$veth-1" netns "$ns1" &&
    ip -n "$ns0" addr add "$net.1/24" dev "$veth-0" && ip -n "$ns1" addr add "$net.2/24" dev "$veth-1" &&
    ip -n "$ns0" link set "$veth-0" up && ip -n "$ns1" link set "$veth-1" up &&
    ip -n "$ns0" link set lo up && ip -n "$ns1" link set lo up
}

netns_down() {
  local ns
  for ns in "$@"; do
    ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null
    ip netns del "$ns" 2>/dev/null
  done
}

# netns_up_switched NS0 NS1 SW VETH NET: the same two hosts, each plugged into a bridge (a switch)
# in a third namespace SW, so that taking one host's link down (ip -n NS1 link set VETH-1 down)
# leaves the other's up, as a cable pulled at one host would. netns_down NS0 NS1 SW removes them.
netns_up_switched() {
  netns_up_star "$3" "$4" "$5" "$1" "$2"
}

# netns_up_star SW VETH NET NS0 NS1 ...: any number of hosts on one switch (a bridge in namespace
# SW). Host i is NSi with address NET.(i+1) on VETH-i; its cable's switch end is VETH-si in SW.
# netns_down SW NS0 NS1 ... removes them.
netns_up_star() {
  local sw=$1 veth=$2 net=$3 i=0 ns
  shift 3
  ip netns add "$sw" && ip -n "$sw" link add br0 type bridge && ip -n "$sw" link set br0 up || return 1
  for ns in "$@"; do
    ip netns add "$ns" &&
      ip link add "$veth-$i" type veth peer name "$veth-s$i" &&
      ip link set "$veth-$i" netns "$ns" && ip link set "$veth-s$i" netns "$sw" &&
      ip -n "$sw" link set "$veth-s$i" master br0 && ip -n "$sw" link set "$veth-s$i" up &&
      ip -n "$ns" addr add "$net.$((i + 1))/24" dev "$veth-$i" &&
      ip -n "$ns" link set "$veth-$i" up && ip -n "$ns" link set lo up || return 1
    i=$((i + 1))
  done
}

# netns_shape_star SW VETH RATE BURST NS0 NS1 ...: each host's cable shaped to RATE each way with
# tc tbf: its upload at the host's end, its download at the switch's end (as a NIC's line rate).
netns_shape_star() {
  local sw=$1 veth=$2 rate=$3 burst=$4 i=0 ns
  shift 4
  for ns in "$@"; do
    tc -n "$ns" qdisc add dev "$veth-$i" root tbf rate "$rate" burst "$burst" latency 50ms &&
      tc -n "$sw" qdisc add dev "$veth-s$i" root tbf rate "$rate" burst "$burst" latency 50ms || return 1
    i=$((i + 1))
  done
}

# tbf's bucket for RATE: 200 us of the rate, at least 16 KiB. Measured on this kernel (hrtimer
# tbf) with one TCP stream between two namespaces: a 16 KiB bucket holds 1.0 Gbit/s from 64 KiB
# to 16 MiB at 1gbit, and 256 KiB holds 11 Gbit/s at 16 MiB at 10gbit (64 KiB only 4-5.5); a 250
# Hz tick's worth (500 KB at 1gbit, used before) let 1 MiB through at 26 Gbit/s, so messages
# below the bucket were not shaped at all.
tbf_burst() {
  python3 -c "import re,sys; m=re.fullmatch(r'([0-9.]+)([kmg]?)bit', sys.argv[1]); print(max(16384, int(float(m[1]) * {'': 1, 'k': 1e3, 'm': 1e6, 'g': 1e9}[m[2]] / 8 * 200e-6)))" "$1"
}
