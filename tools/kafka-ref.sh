#!/usr/bin/env bash
# kafka-ref.sh: Apache Kafka itself, the reference broker for tests and benchmarks.
#
#   tools/kafka-ref.sh install [4|3.9]   resolve the pinned release's jars (Maven Central,
#                                        tools/kafka/pom.xml) into .deps/kafka-VERSION/libs
#                                        and build its class-data archive (archive() below);
#                                        idempotent, silent when already there
#   tools/kafka-ref.sh start [4|3.9] [key=value ...]
#                                        fresh single-node KRaft broker on free 127.0.0.1
#                                        ports (dir: $KAFKA_REF_DIR or .deps/run/kafka-VERSION),
#                                        the key=value lines added to its server.properties;
#                                        prints the bootstrap address when it serves
#   tools/kafka-ref.sh stop [4|3.9]      stop what start started, remove its dir
#   tools/kafka-ref.sh tool [4|3.9] NAME ARGS...
#                                        run a Kafka command-line tool from the jars:
#                                        kafka-consumer-groups, kafka-topics, kafka-configs,
#                                        kafka-console-producer, kafka-console-consumer,
#                                        kafka-get-offsets, kafka-storage, kafka-acls, or a class name
#   tools/kafka-ref.sh classpath [4|3.9] the class path of the jars (DIR/libs/*)
#   tools/kafka-ref.sh jvm-opts [4|3.9]  JVM flags (one a line) that map the release's
#                                        class-data archive, for a JVM whose class path
#                                        starts with that class path (none if no archive)
#   tools/kafka-ref.sh mainclass [4|3.9] NAME
#                                        the main class of that tool in that release
#   tools/kafka-ref.sh serve [4|3.9] DIR PORT CONTROLLER_PORT [key=value ...]
#                                        format DIR if new and run the broker in the
#                                        foreground (exec: the caller's pid is the JVM's);
#                                        what tests/integration/kafka_ref.py uses; the
#                                        key=value lines come last, so they override
#                                        (node.id, controller.quorum.voters, replication
#                                        factors: one node of a cluster); the nodes of one
#                                        cluster share KAFKA_REF_CLUSTER_ID (else a random one);
#                                        KAFKA_REF_FORMAT_ARGS adds options to the format
#                                        (--add-scram ...: SCRAM users of a SASL listener)
#
# "4" is the newest 4.x release (the reference), "3.9" the newest 3.9.x: the last
# line that still serves the request versions KIP-896 removed in 4.0. Environment:
# JAVA_HOME (default Debian's OpenJDK 17), KAFKA_HEAP_OPTS (default -Xms256m
# -Xmx512m), KAFKA_JVM_PERFORMANCE_OPTS (default Kafka's own G1 settings).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
KAFKA4_VERSION=4.4.0
KAFKA39_VERSION=3.9.2
export JAVA_HOME=${JAVA_HOME:-/usr/lib/jvm/java-17-openjdk-amd64}
JAVA=$JAVA_HOME/bin/java

die() { echo "kafka-ref: $*" >&2; exit 1; }

# version_of ARG: the pinned release for "4" / "3.9" (or their full numbers).
version_of() {
	case ${1:-4} in
	4 | "$KAFKA4_VERSION") echo "$KAFKA4_VERSION" ;;
	3.9 | "$KAFKA39_VERSION") echo "$KAFKA39_VERSION" ;;
	*) die "unknown version '$1' (use 4 or 3.9)" ;;
	esac
}

home_of() { echo "$ROOT/.deps/kafka-$1"; }

# The install is complete when its stamp names this version and this pom.
stamp_of() { echo "$1 $(sha256sum "$ROOT/tools/kafka/pom.xml" | cut -c1-16)"; }

installed() { [[ -f $(home_of "$1")/.installed && $(cat "$(home_of "$1")/.installed") == "$(stamp_of "$1")" ]]; }

install() {
	local v=$1 home tmp profile=()
	installed "$v" && return 0
	[[ $v == 3.* ]] && profile=(-Dkafka39)
	command -v mvn >/dev/null || die "mvn not found (tools/install-deps.sh test installs maven)"
	[[ -x $JAVA ]] || die "no java at $JAVA (tools/install-deps.sh test installs openjdk-17-jdk-headless)"
	home=$(home_of "$v")
	tmp=$home.tmp
	rm -rf "$tmp"
	mkdir -p "$tmp"
	echo "kafka-ref: installing Apache Kafka $v into ${home#"$ROOT"/} (Maven Central)" >&2
	# The local repository stays in .deps/m2: a re-install (new pom) is a copy.
	if ! mvn -q -B -Dstyle.color=never -f "$ROOT/tools/kafka/pom.xml" \
		-Dmaven.repo.local="$ROOT/.deps/m2" -Dkafka.version="$v" "${profile[@]}" \
		dependency:copy-dependencies -DincludeScope=runtime \
		-DoutputDirectory="$tmp/libs" >"$tmp/mvn.log" 2>&1; then
		cat "$tmp/mvn.log" >&2
		die "could not resolve Apache Kafka $v from Maven Central (log above)"
	fi
	# Class names of the Kafka jars, to find each tool's main class in this release.
	python3 - "$tmp"/libs/kafka*.jar >"$tmp/classes" <<'EOF'
import sys, zipfile
for jar in sys.argv[1:]:
    for n in zipfile.ZipFile(jar).namelist():
        if n.endswith(".class"):
            print(n[:-6].replace("/", "."))
EOF
	rm -rf "$home"
	mv "$tmp" "$home"
	stamp_of "$v" >"$home/.installed"
}

# wait_started PID LOG: until the broker PID logs that it started (0), exits
# (1) or 120 s pass (2).
wait_started() {
	local pid=$1 log=$2 i
	for ((i = 0; i < 1200; i++)); do
		kill -0 "$pid" 2>/dev/null || return 1
		grep -q "Kafka Server started" "$log" && return 0
		sleep 0.1
	done
	return 2
}

# stop_pid PID [SECONDS]: SIGTERM (Kafka's controlled shutdown), SIGKILL
# after SECONDS (30).
stop_pid() {
	local pid=$1 secs=${2:-30} i
	kill -TERM "$pid" 2>/dev/null || return 0
	for ((i = 0; i < secs * 10; i++)); do
		kill -0 "$pid" 2>/dev/null || return 0
		sleep 0.1
	done
	echo "kafka-ref: pid $pid did not stop within $secs s of SIGTERM; SIGKILL" >&2
	kill -KILL "$pid" 2>/dev/null || true
}

# The class-data archive (CDS, JDK 17's dynamic archive) of that release: the
# classes a broker loads, parsed and verified once at install, mapped by every
# later JVM on these jars (broker, tools, tests' Java clients). A start costs about
# half the CPU with it (broker 7.4 -> 5.3 CPU-s, a tool 2.0 -> 1.1 CPU-s here).
# The JVM checks the archive against its own build and the jars (size, mtime)
# and ignores a mismatched one; the stamp has it rebuilt when either changes.
archive_of() { echo "$(home_of "$1")/classes.jsa"; }
archive_stamp() { echo "$(stamp_of "$1") $("$JAVA" -version 2>&1 | sha256sum | cut -c1-16)"; }

# cds_opts VERSION: the JVM flags that map the archive (none when there is none).
# JVM warnings go to stderr: a tool's stdout is what tests parse.
cds_opts() {
	local a
	a=$(archive_of "$1")
	[[ -f $a ]] && printf '%s\n' "-XX:SharedArchiveFile=$a" -Xlog:disable -Xlog:all=warning:stderr
	return 0
}

# archive VERSION: (re)build the archive from one broker run: start it, wait
# until it serves, stop it; the JVM writes the archive as it exits. A failure
# is a warning (the archive only saves time), never a failed install.
archive() {
	local v=$1 home a dir port cport pid ok=
	home=$(home_of "$v")
	a=$(archive_of "$v")
	[[ -f $a && -f $a.stamp && $(cat "$a.stamp") == "$(archive_stamp "$v")" ]] && return 0
	rm -f "$a" "$a.stamp" "$a.tmp"
	dir=$(mktemp -d "${TMPDIR:-/tmp}/kafka-ref-cds.XXXXXX")
	port=$(free_port)
	cport=$(free_port)
	echo "kafka-ref: class-data archive for Apache Kafka $v (one broker start)" >&2
	KAFKA_JVM_PERFORMANCE_OPTS="${LEAN_JVM[*]} -XX:ArchiveClassesAtExit=$a.tmp" \
		"$0" serve "$v" "$dir" "$port" "$cport" </dev/null >"$dir/serve.log" 2>&1 &
	pid=$!
	wait_started "$pid" "$dir/serve.log" && ok=1
	stop_pid "$pid" 60 # the JVM writes the archive as it exits
	wait "$pid" 2>/dev/null || true
	if [[ -n $ok && -s $a.tmp ]]; then
		mv "$a.tmp" "$a"
		archive_stamp "$v" >"$a.stamp"
	else
		rm -f "$a.tmp"
		echo "kafka-ref: warning: no class-data archive for Kafka $v (JVMs start slower); log:" >&2
		tail -20 "$dir/serve.log" >&2
	fi
	rm -rf "$dir"
}

need_installed() { installed "$1" || die "Apache Kafka $1 is not installed: run tools/kafka-ref.sh install ${2:-}"; }

classpath() { echo "$(home_of "$1")/libs/*"; }

# tool_class VERSION NAME: the main class of a kafka-*.sh tool in that release
# (several moved from core's kafka.* to org.apache.kafka.tools.* between 3.x and 4.x).
tool_class() {
	local v=$1 name=$2 c candidates
	case $name in
	kafka-consumer-groups) candidates="org.apache.kafka.tools.consumer.group.ConsumerGroupCommand kafka.admin.ConsumerGroupCommand" ;;
	kafka-topics) candidates="org.apache.kafka.tools.TopicCommand kafka.admin.TopicCommand" ;;
	kafka-configs) candidates="org.apache.kafka.tools.ConfigCommand kafka.admin.ConfigCommand" ;;
	kafka-console-producer) candidates="org.apache.kafka.tools.ConsoleProducer kafka.tools.ConsoleProducer" ;;
	kafka-console-consumer) candidates="org.apache.kafka.tools.consumer.ConsoleConsumer kafka.tools.ConsoleConsumer" ;;
	kafka-get-offsets) candidates="org.apache.kafka.tools.GetOffsetShell kafka.tools.GetOffsetShell" ;;
	kafka-delete-records) candidates="org.apache.kafka.tools.DeleteRecordsCommand kafka.admin.DeleteRecordsCommand" ;;
	kafka-broker-api-versions) candidates="org.apache.kafka.tools.BrokerApiVersionsCommand kafka.admin.BrokerApiVersionsCommand" ;;
	kafka-storage) candidates="kafka.tools.StorageTool" ;;
	kafka-acls) candidates="org.apache.kafka.tools.AclCommand kafka.admin.AclCommand" ;;
	*.*) echo "$name"; return 0 ;;
	*) die "unknown tool '$name'" ;;
	esac
	for c in $candidates; do
		grep -qxF "$c" "$(home_of "$v")/classes" && { echo "$c"; return 0; }
	done
	die "no main class for $name in Apache Kafka $v"
}

# log_opt VERSION broker|tools: the JVM flag naming the logging config (3.x: log4j 1).
log_opt() {
	if [[ $1 == 3.* ]]; then
		echo "-Dlog4j.configuration=file:$ROOT/tools/kafka/log4j-$2.properties"
	else
		echo "-Dlog4j2.configurationFile=$ROOT/tools/kafka/log4j2-$2.properties"
	fi
}

# Client compiler only and the serial collector: a JVM that starts quickly and
# never needs C2's or G1's threads (tools; the archive's broker run).
LEAN_JVM=(-XX:TieredStopAtLevel=1 -XX:+UseSerialGC)
# Short-lived tool JVMs: small heap, lean, quick start.
TOOL_JVM=(-Xmx256m "${LEAN_JVM[@]}" -Djava.awt.headless=true)

run_tool() {
	local v=$1 name=$2
	shift 2
	local class
	class=$(tool_class "$v" "$name")
	local cds
	mapfile -t cds < <(cds_opts "$v")
	exec "$JAVA" "${TOOL_JVM[@]}" "${cds[@]}" \
		"$(log_opt "$v" tools)" \
		-cp "$(classpath "$v")" "$class" "$@"
}

# write_config VERSION DIR PORT CONTROLLER_PORT [key=value ...]: DIR/server.properties
# for one combined broker+controller node. Every listener is on 127.0.0.1 (Kafka's
# default listener binds every interface); replication factors are 1 (one broker).
write_config() {
	local v=$1 dir=$2 port=$3 cport=$4
	shift 4
	{
		cat <<EOF
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$cport
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport
advertised.listeners=PLAINTEXT://127.0.0.1:$port
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=$dir/data
num.partitions=1
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
EOF
		# Share groups exist from 4.0 on; 3.9 warns about unknown keys only.
		[[ $v == 3.* ]] || cat <<EOF
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
EOF
		local kv
		for kv in "$@"; do
			[[ $kv == *=* ]] || die "not key=value: '$kv'"
			echo "$kv"
		done
	} >"$dir/server.properties"
}

# serve VERSION DIR PORT CONTROLLER_PORT [key=value ...]: format if new, then exec the broker.
serve() {
	local v=$1 dir=$2 port=$3 cport=$4
	shift 4
	need_installed "$v"
	mkdir -p "$dir"
	dir=$(cd "$dir" && pwd)
	write_config "$v" "$dir" "$port" "$cport" "$@"
	local cds
	mapfile -t cds < <(cds_opts "$v")
	if [[ ! -f $dir/data/meta.properties ]]; then
		local id=${KAFKA_REF_CLUSTER_ID:-}
		# a cluster id as StorageTool random-uuid makes it (a random UUID in
		# base64url, not starting with '-'), without a JVM of its own; the
		# clusters of tests/integration/kafka_ref.py make theirs alike
		[[ -n $id ]] || id=$(python3 -c 'import base64, uuid
while True:
    s = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
    if not s.startswith("-"):
        print(s)
        break')
		# KAFKA_REF_FORMAT_ARGS: more format options, e.g. SCRAM users
		# (--add-scram 'SCRAM-SHA-512=[name=admin,password=admin-secret]').
		local fmt_extra
		read -r -a fmt_extra <<<"${KAFKA_REF_FORMAT_ARGS:-}"
		"$JAVA" "${TOOL_JVM[@]}" "${cds[@]}" "$(log_opt "$v" tools)" \
			-cp "$(classpath "$v")" kafka.tools.StorageTool format -t "$id" -c "$dir/server.properties" \
			"${fmt_extra[@]}" >/dev/null
	fi
	# Heap small by default (Kafka's own start script: 1 GB); GC settings are Kafka's.
	local heap perf
	read -r -a heap <<<"${KAFKA_HEAP_OPTS:--Xms256m -Xmx512m}"
	read -r -a perf <<<"${KAFKA_JVM_PERFORMANCE_OPTS:--XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35 -XX:+ExplicitGCInvokesConcurrent}"
	exec "$JAVA" "${heap[@]}" "${perf[@]}" "${cds[@]}" -Djava.awt.headless=true \
		"$(log_opt "$v" broker)" \
		-Dkafka.logs.dir="$dir" \
		-cp "$(classpath "$v")" kafka.Kafka "$dir/server.properties"
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

run_dir() { echo "${KAFKA_REF_DIR:-$ROOT/.deps/run/kafka-$1}"; }

# start VERSION ARG [key=value ...]: serve in the background, wait for "Kafka Server
# started", print the bootstrap.
start() {
	local v=$1 dir port cport pid rc=0
	need_installed "$v" "$2"
	shift 2
	dir=$(run_dir "$v")
	if [[ -f $dir/pid ]] && kill -0 "$(cat "$dir/pid")" 2>/dev/null; then
		die "already running (pid $(cat "$dir/pid"), $(cat "$dir/bootstrap")); stop it first"
	fi
	rm -rf "$dir"
	mkdir -p "$dir"
	: >"$dir/server.log"
	port=$(free_port)
	cport=$(free_port)
	setsid "$0" serve "$v" "$dir" "$port" "$cport" "$@" </dev/null >"$dir/server.log" 2>&1 &
	pid=$!
	echo "$pid" >"$dir/pid"
	echo "127.0.0.1:$port" >"$dir/bootstrap"
	wait_started "$pid" "$dir/server.log" || rc=$?
	case $rc in
	0) echo "127.0.0.1:$port" ;;
	1)
		tail -30 "$dir/server.log" >&2
		die "the broker exited during startup (log: $dir/server.log)"
		;;
	*)
		kill -9 "$pid" 2>/dev/null || true
		die "the broker did not start within 120 s (log: $dir/server.log)"
		;;
	esac
}

stop() {
	local v=$1 dir
	dir=$(run_dir "$v")
	[[ -f $dir/pid ]] || die "no broker started from $dir"
	stop_pid "$(cat "$dir/pid")"
	rm -rf "$dir"
}

cmd=${1:-}
shift || true
case $cmd in
install)
	# Without a version: both releases (what make test needs).
	if (($# == 0)); then
		set -- 4 3.9
	fi
	for a in "$@"; do
		install "$(version_of "$a")"
		archive "$(version_of "$a")"
	done
	;;
start)
	a=${1:-4}
	v=$(version_of "$a")
	shift || true
	start "$v" "$a" "$@"
	;;
stop) stop "$(version_of "${1:-4}")" ;;
classpath) v=$(version_of "${1:-4}"); need_installed "$v" "${1:-4}"; classpath "$v" ;;
jvm-opts) v=$(version_of "${1:-4}"); need_installed "$v" "${1:-4}"; cds_opts "$v" ;;
mainclass)
	(($# == 2)) || die "usage: mainclass 4|3.9 NAME"
	v=$(version_of "$1")
	need_installed "$v" "$1"
	tool_class "$v" "$2"
	;;
tool)
	(($# >= 2)) || die "usage: tool 4|3.9 NAME ARGS..."
	v=$(version_of "$1")
	need_installed "$v" "$1"
	shift
	run_tool "$v" "$@"
	;;
serve)
	(($# >= 4)) || die "usage: serve 4|3.9 DIR PORT CONTROLLER_PORT [key=value ...]"
	v=$(version_of "$1")
	shift
	serve "$v" "$@"
	;;
*)
	sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
	exit 2
	;;
esac
