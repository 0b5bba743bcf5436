#!/bin/sh
# Prints the path of a promtool, the checker of Prometheus rules: the one on
# PATH, or the one unpacked from Debian's prometheus package into
# .run/promtool, which it unpacks first when missing (apt-get download and
# dpkg-deb -x: nothing is installed system-wide and no daemon started).
# Fails, saying why, when neither can be had.
set -eu
cd "$(dirname "$0")/.."
if command -v promtool >/dev/null 2>&1; then
	command -v promtool
	exit 0
fi
dir=.run/promtool
if [ -x "$dir/usr/bin/promtool" ]; then
	echo "$PWD/$dir/usr/bin/promtool"
	exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
	echo "promtool is not on PATH and this is not a Debian-like system: install Prometheus's promtool" >&2
	exit 1
fi
candidate() { apt-cache policy prometheus 2>/dev/null | awk '/Candidate:/ {print $2}'; }
c=$(candidate)
if { [ -z "$c" ] || [ "$c" = "(none)" ]; } && [ "$(id -u)" = 0 ]; then
	apt-get update -q >/dev/null 2>&1 || true
	c=$(candidate)
fi
if [ -z "$c" ] || [ "$c" = "(none)" ]; then
	echo "promtool: no prometheus package in the apt sources (run apt-get update as root?)" >&2
	exit 1
fi
echo "promtool: unpacking Debian's prometheus $c into $dir" >&2
tmp=$(mktemp -d)
# apt downloads as its own user, which must be able to write here.
chmod 755 "$tmp"
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && apt-get download -q prometheus >/dev/null)
mkdir -p "$dir"
dpkg-deb -x "$tmp"/prometheus_*.deb "$dir"
"$dir/usr/bin/promtool" --version >/dev/null
echo "$PWD/$dir/usr/bin/promtool"
