#!/bin/sh
# Installs nginx, the load benchmark's reference gateway, from Debian's
# package when it is missing and this runs as root; otherwise says why the
# bench will skip it. Never fails: the bench runs without nginx.
set -u
if command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ]; then
	exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
	echo "bench: nginx is not installed (and this is not root on a Debian-like system): the nginx reference is skipped"
	exit 0
fi
# Debian's package; nginx-light is only a transitional name for it since
# bookworm. Read the lists first when they do not know it yet.
candidate() { apt-cache policy nginx 2>/dev/null | awk '/Candidate:/ {print $2}'; }
c=$(candidate)
if [ -z "$c" ] || [ "$c" = "(none)" ]; then
	apt-get update -q >/dev/null 2>&1
	c=$(candidate)
fi
if [ -z "$c" ] || [ "$c" = "(none)" ]; then
	echo "bench: no nginx package in the apt sources: the nginx reference is skipped"
	exit 0
fi
echo "bench: installing nginx $c from Debian's package (apt-get install -y nginx)"
# The bench runs its own nginx on a loopback port; on a host with systemd,
# Debian also starts the packaged service, which the bench does not use.
if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends nginx >/dev/null; then
	echo "bench: apt-get install nginx failed: the nginx reference is skipped"
fi
exit 0
