# tests/lib/origin.sh: a test CA and origin servers for the proxy's integration
# tests (sourced by bash scripts).  Origins run inside a network namespace the test
# made (its "internet"); they are tests/tools/origin processes, killed by PID.
#
#	origin_ca DIR			test CA: DIR/ca.pem, DIR/ca.key
#	origin_cert DIR NAME [NAME...]	leaf for the names: DIR/NAME.pem, DIR/NAME.key
#					(ORIGIN_CERT_CN_ONLY=1: subject CN=NAME and no
#					subjectAltName at all)
#	origin_start NS MODE ADDR PORT NAME [CERT KEY]
#					MODE tls|http|banner; waits until listening
#	origin_stop_all			kills every origin started here
#
# With $ORIGIN_LOGDIR set, each origin logs one "accept" line per connection to
# $ORIGIN_LOGDIR/NAME-PORT.log (so a test can prove nothing reached it).
# Needs $AIRLOCK_BUILD (default "build") for the origin tool.

ORIGIN_PIDS=""
ORIGIN_TOOL="${AIRLOCK_BUILD:-build}/tests/tools/origin"

origin_ca() {
	local dir=$1
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
	    -keyout "$dir/ca.key" -out "$dir/ca.pem" -days 2 \
	    -subj "/CN=airlock test CA $$" \
	    -addext "basicConstraints=critical,CA:TRUE" \
	    -addext "keyUsage=critical,keyCertSign,cRLSign" >/dev/null 2>&1
}

origin_cert() {
	local dir=$1 name=$2 san="" n
	shift
	for n in "$@"; do
		san="${san:+$san,}DNS:$n"
	done
	openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
	    -keyout "$dir/$name.key" -out "$dir/$name.csr" -subj "/CN=$name" \
	    >/dev/null 2>&1 || return 1
	if [ -n "${ORIGIN_CERT_CN_ONLY:-}" ]; then
		printf 'extendedKeyUsage=serverAuth\n' >"$dir/$name.ext"
	else
		printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth\n' "$san" \
		    >"$dir/$name.ext"
	fi
	openssl x509 -req -in "$dir/$name.csr" -CA "$dir/ca.pem" \
	    -CAkey "$dir/ca.key" -CAcreateserial -days 2 \
	    -extfile "$dir/$name.ext" -out "$dir/$name.pem" >/dev/null 2>&1
}

origin_start() {
	local ns=$1 mode=$2 addr=$3 port=$4 name=$5 cert=${6:-} key=${7:-}
	local fifo pid line log=/dev/null
	[ -n "${ORIGIN_LOGDIR:-}" ] && log="$ORIGIN_LOGDIR/$name-$port.log"
	fifo=$(mktemp -u "${TMPDIR:-/tmp}/origin.XXXXXX")
	mkfifo "$fifo" || return 1
	if [ "$mode" = tls ]; then
		ip netns exec "$ns" "$ORIGIN_TOOL" tls "$addr" "$port" "$cert" "$key" \
		    "$name" >"$fifo" 2>"$log" &
	else
		ip netns exec "$ns" "$ORIGIN_TOOL" "$mode" "$addr" "$port" "$name" \
		    >"$fifo" 2>"$log" &
	fi
	pid=$!
	ORIGIN_PIDS="$ORIGIN_PIDS $pid"
	read -r -t 5 line <"$fifo"
	rm -f "$fifo"
	[ "$line" = ready ]
}

origin_stop_all() {
	local p
	for p in $ORIGIN_PIDS; do
		kill "$p" 2>/dev/null
	done
	for p in $ORIGIN_PIDS; do
		wait "$p" 2>/dev/null
	done
	ORIGIN_PIDS=""
}
