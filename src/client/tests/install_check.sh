#!/bin/sh
# make install's result, used as a user would: install the build into a
# temporary prefix, compile install_check.c with `pkg-config --cflags --libs
# cohort` against the shared library and with `--static` against the static
# one, run both, and check the shared one resolved libcohort.so.0 from the
# prefix. Usage: install_check.sh BUILD_DIR SRC_DIR CC [CFLAGS...]
set -eu
build=$1 src=$2 cc=$3
shift 3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
lib=$(ls -d "$tmp"/prefix/lib*/pkgconfig | head -n1)
export PKG_CONFIG_PATH="$lib"
test -f "$tmp/prefix/include/cohort/cohort.h"
test -L "$(dirname "$lib")/libcohort.so"
test -f "$(dirname "$lib")/libcohort.a"
"$cc" "$@" -o "$tmp/shared" "$src/install_check.c" $(pkg-config --cflags --libs cohort)
"$cc" "$@" -o "$tmp/static" "$src/install_check.c" $(pkg-config --static --cflags cohort) \
	"$(dirname "$lib")/libcohort.a" $(pkg-config --static --libs-only-l cohort | sed 's/-lcohort//')
LD_LIBRARY_PATH="$(dirname "$lib")" "$tmp/shared"
LD_LIBRARY_PATH="$(dirname "$lib")" ldd "$tmp/shared" | grep -q "libcohort.so.0 => $tmp/prefix"
"$tmp/static"
if ldd "$tmp/static" | grep -q libcohort; then
	echo "static build links libcohort.so" >&2
	exit 1
fi
echo "install check passed"
