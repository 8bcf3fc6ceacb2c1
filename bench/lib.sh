# bench/lib.sh: shell helpers the bench scripts share (sourced, POSIX sh).

# A free TCP port on 127.0.0.1.
free_port() {
	/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# port_open PORT: whether something accepts on 127.0.0.1:PORT.
port_open() {
	/usr/bin/python3 -c "import socket; socket.create_connection(('127.0.0.1',$1),0.2)" 2>/dev/null
}

# wait_port PORT [TRIES]: until something accepts on 127.0.0.1:PORT, every
# 50 ms, TRIES times (default 200: 10 s); then exits the script.
wait_port() {
	i=0
	until port_open "$1"; do
		i=$((i + 1)); [ $i -lt "${2:-200}" ] || { echo "nothing listens on port $1" >&2; exit 1; }
		sleep 0.05
	done
}

# start_cohortd BIN DATA LOG [ARG ...]: BIN (a cohortd) in the background on a
# free 127.0.0.1 port, its data in DATA, stdout and stderr into LOG, no admin
# listener, ARGs after (--set k=v ...). Sets PID and BOOT (host:port) once it
# accepts connections; if it exits or does not listen within 10 s, prints LOG
# and exits the script (the caller's trap stops what it started).
start_cohortd() {
	_bin=$1 _data=$2 _log=$3
	shift 3
	_port=$(free_port)
	"$_bin" --set "listeners=PLAINTEXT://127.0.0.1:$_port" --set "log.dirs=$_data" \
		--set admin.listeners= "$@" >"$_log" 2>&1 &
	PID=$!
	BOOT=127.0.0.1:$_port
	_i=0
	until port_open "$_port"; do
		if ! kill -0 "$PID" 2>/dev/null || [ $_i -ge 200 ]; then
			cat "$_log" >&2
			echo "cohortd ($_bin) did not start on port $_port" >&2
			exit 1
		fi
		_i=$((_i + 1))
		sleep 0.05
	done
}

# loadgen_topic PORT: the topic bench/groups/loadgen.c's members subscribe
# to and commit on ("loadgen", 100 partitions), created on 127.0.0.1:PORT
# (ROOT: the tree).
loadgen_topic() {
	ROOT=$ROOT /usr/bin/python3 - "$1" <<'EOF'
import os, sys
sys.path.insert(0, os.environ["ROOT"] + "/tests/integration")
import kwire
with kwire.Conn(int(sys.argv[1])) as c:
    kwire.create_topics(c, [("loadgen", 100, 1)])
EOF
}

# kafka_heap_kb PID: a JVM's live heap in KB after a full GC (jcmd GC.run,
# GC.heap_info; JAVA_HOME's jcmd).
kafka_heap_kb() {
	"$JAVA_HOME/bin/jcmd" "$1" GC.run >/dev/null 2>&1 || true
	"$JAVA_HOME/bin/jcmd" "$1" GC.heap_info 2>/dev/null |
		sed -n 's/.*total [0-9]*K, used \([0-9]*\)K.*/\1/p' | head -1
}

# stop_started: the benches' exit trap: kills the pids in PIDS and waits
# for them, and stops the Kafka 4 in KDIR, if set (KREF: tools/kafka-ref.sh).
stop_started() {
	for p in $PIDS; do kill "$p" 2>/dev/null || true; done
	for p in $PIDS; do wait "$p" 2>/dev/null || true; done
	[ -n "$KDIR" ] && [ -d "$KDIR" ] && KAFKA_REF_DIR=$KDIR "$KREF" stop 4 >/dev/null 2>&1 || true
}

# make_certs DIR: a CA (DIR/ca.pem) and a server certificate for localhost
# and 127.0.0.1 signed by it, key and certificate in DIR/keystore.pem
# (cohortd's ssl.keystore.type=PEM); EC P-256, the openssl CLI.
make_certs() {
	(
		cd "$1"
		ec="-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
		openssl req -x509 $ec -keyout ca.key -out ca.pem -days 2 -subj /CN=cohort-bench-ca 2>/dev/null
		echo "subjectAltName=DNS:localhost,IP:127.0.0.1" >san.ext
		openssl req $ec -keyout server.key -out server.csr -subj /CN=localhost 2>/dev/null
		openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
			-out server.pem -days 2 -extfile san.ext 2>/dev/null
		cat server.key server.pem >keystore.pem
	)
}
