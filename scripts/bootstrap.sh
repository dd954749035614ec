#!/usr/bin/env bash
# Installs what PostgresData needs on a fresh Debian/Ubuntu machine, when it is missing:
# libpq's headers (to build), pkg-config (to find them) and the PostgreSQL server binaries
# (for the throwaway server used when DATABASE_URL is not set); with --tests also PgBouncer
# (the tests run PostgresData behind one). Idempotent and quiet when everything is there already.
set -euo pipefail

for_tests=false
[ "${1:-}" = "--tests" ] && for_tests=true

say() { printf '\033[1mbootstrap:\033[0m %s\n' "$*"; }

command -v swift >/dev/null 2>&1 || {
    say "swift is not on PATH; install a Swift 6 toolchain first (https://swift.org/install)."
    exit 1
}

have_server_binaries() {
    command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1 && return 0
    [ -n "${POSTGRES_BIN_DIR:-}" ] && [ -x "$POSTGRES_BIN_DIR/initdb" ] && return 0
    compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null 2>&1
}

packages=()
command -v pkg-config >/dev/null 2>&1 || packages+=(pkg-config)
if ! pkg-config --exists libpq 2>/dev/null; then packages+=(libpq-dev); fi
if [ -z "${DATABASE_URL:-}" ] && ! have_server_binaries; then packages+=(postgresql); fi
# Running as root, the throwaway server runs as the unprivileged 'postgres' user that the
# postgresql package creates.
if [ "$(id -u)" = 0 ] && [ -z "${DATABASE_URL:-}" ] && ! id postgres >/dev/null 2>&1 \
    && [[ " ${packages[*]} " != *" postgresql "* ]]; then
    packages+=(postgresql)
fi

have_pgbouncer() {
    command -v pgbouncer >/dev/null 2>&1 || [ -x /usr/sbin/pgbouncer ]
}
if $for_tests && ! have_pgbouncer; then packages+=(pgbouncer); fi

if [ ${#packages[@]} -eq 0 ]; then
    exit 0
fi

sudo=""
if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null 2>&1; then sudo="sudo"; else
        say "missing: ${packages[*]}. Install them as root: apt-get install -y ${packages[*]}"
        exit 1
    fi
fi
command -v apt-get >/dev/null 2>&1 || {
    say "missing: ${packages[*]}, and this is not a Debian-like system; install them with your package manager."
    exit 1
}

say "installing ${packages[*]}"
# The postgresql package would otherwise create and start a cluster of its own, which nothing
# here uses. (The tests start a PgBouncer of their own on a free port.)
$sudo mkdir -p /etc/postgresql-common
if [ ! -f /etc/postgresql-common/createcluster.conf ]; then
    echo "create_main_cluster = false" | $sudo tee /etc/postgresql-common/createcluster.conf >/dev/null
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
say "installed ${packages[*]}"
