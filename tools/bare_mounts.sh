#!/bin/sh
# usage: tools/bare_mounts.sh [--check-after] CMD [ARG...]
#
# Runs CMD as on a freshly installed machine, which mounts neither tracefs
# nor debugfs nor bpffs: in a private mount namespace (unshare -m) where
# every mount of those three is undone first, so the host's mounts are
# left alone.  Exits 125 if one is still there: a test must not pass
# because the machine it ran on had mounted them.
#
# CMD is exec()ed: it keeps this script's pid, and signals sent to it
# reach it.  With --check-after it runs as a child instead, and the exit
# status is 124 if it left a tracefs, debugfs or bpffs mounted in the
# namespace (where a host's would be; cfiprof mounts nothing), else CMD's.
set -u

bare_fs() {
	awk '$3 == "tracefs" || $3 == "debugfs" || $3 == "bpf" { print $2 }' /proc/self/mounts
}

if [ "${1:-}" != --inside ]; then
	exec unshare --mount --propagation private -- "$0" --inside "$@"
fi
shift
# Unmounting in the caller's namespace would undo the host's mounts: the
# caller is the parent, unshare having exec()ed this.
ns=$(readlink /proc/self/ns/mnt) parent_ns=$(readlink /proc/$PPID/ns/mnt)
if [ -z "$ns" ] || [ -z "$parent_ns" ] || [ "$ns" = "$parent_ns" ]; then
	echo "bare_mounts.sh: not in a mount namespace of its own" >&2
	exit 125
fi

# Nested mounts (debugfs/tracing) go with their parent: take the first one
# left until none is.  Bounded, should umount keep succeeding uselessly.
i=0
while m=$(bare_fs | head -n 1) && [ -n "$m" ]; do
	i=$((i + 1))
	if [ $i -gt 32 ] || ! umount -l "$m"; then
		echo "bare_mounts.sh: cannot unmount $m" >&2
		exit 125
	fi
done
if [ -n "$(bare_fs)" ]; then
	echo "bare_mounts.sh: still mounted: $(bare_fs | tr '\n' ' ')" >&2
	exit 125
fi

if [ "${1:-}" != --check-after ]; then
	exec "$@"
fi
shift
"$@"
status=$?
left=$(bare_fs | tr '\n' ' ')
if [ -n "$left" ]; then
	echo "bare_mounts.sh: $1 left mounted: $left" >&2
	exit 124
fi
exit $status
