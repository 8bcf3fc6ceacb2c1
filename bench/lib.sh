# bench/lib.sh: shell helpers the bench scripts share (sourced, POSIX sh).

# A free TCP port on 127.0.0.1.
free_port() {
	/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# wait_port PORT [TRIES]: until something accepts on 127.0.0.1:PORT, every
# 50 ms, TRIES times (default 200: 10 s); then exits the script.
wait_port() {
	i=0
	until /usr/bin/python3 -c "import socket; socket.create_connection(('127.0.0.1',$1),0.2)" 2>/dev/null; do
		i=$((i + 1)); [ $i -lt "${2:-200}" ] || { echo "nothing listens on port $1" >&2; exit 1; }
		sleep 0.05
	done
}
