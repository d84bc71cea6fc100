#!/usr/bin/env bash
# The Debian packages a make target needs, each given as COMMAND:PACKAGE (the command that shows it is there).
# Installs the missing ones when it can (root, or passwordless sudo: apt-get update and install, as CI does);
# where it cannot, stops at once with one line naming the exact command to run.
#
#   bash tools/system_packages.sh bwrap:bubblewrap chromium:chromium initdb:postgresql
#
# `initdb` is looked for where Debian's postgresql puts it (/usr/lib/postgresql/*/bin), not on PATH.
set -euo pipefail

present() {
    if [ "$1" = initdb ]; then
        command -v initdb >/dev/null 2>&1 || compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null
    else
        command -v "$1" >/dev/null 2>&1
    fi
}

missing=()
for pair in "$@"; do
    present "${pair%%:*}" || missing+=("${pair##*:}")
done
[ ${#missing[@]} -eq 0 ] && exit 0

install="apt-get update && apt-get install -y ${missing[*]}"
if ! command -v apt-get >/dev/null 2>&1; then
    echo "error: missing system packages: ${missing[*]}; this machine has no apt-get: install them with its package manager (Debian names)" >&2
    exit 1
fi
if [ "$(id -u)" -eq 0 ]; then
    sudo=""
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    sudo="sudo -n"
else
    echo "error: missing system packages: ${missing[*]}; install them first: sudo sh -c '$install'" >&2
    exit 1
fi
echo "Installing the system packages the tests need: ${missing[*]} (apt-get)"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
for pair in "$@"; do
    present "${pair%%:*}" || { echo "error: ${pair##*:} was installed but ${pair%%:*} is still missing" >&2; exit 1; }
done
