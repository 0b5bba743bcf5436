package main

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
)

// findNginx is the nginx binary, or "" when there is none (make bench
// installs Debian's package first when it runs as root).
func findNginx() string {
	if p, err := exec.LookPath("nginx"); err == nil {
		return p
	}
	if _, err := os.Stat("/usr/sbin/nginx"); err == nil {
		return "/usr/sbin/nginx" // not on a non-root PATH
	}
	return ""
}

// nginxConf is the reference: proxy_pass to the fake over kept-alive
// HTTP/1.1 connections, buffering off so events leave as they come, no
// access log, and as much work on the request as the lean relay does (a
// key checked, the upstream's put in its place). worker_processes auto:
// one worker per core, as the Go relays get one P per core. The request
// body is read whole before it is sent on (nginx's default), as the lean
// relay does. The temp paths live in the run's directory; the bench's
// bodies are small enough never to reach them.
const nginxConf = `worker_processes auto;
worker_rlimit_nofile %[1]d;
daemon off;
pid %[2]s/nginx.pid;
error_log stderr notice;
events { worker_connections %[1]d; }
http {
	access_log off;
	keepalive_requests 1000000;
	client_body_temp_path %[2]s/body;
	proxy_temp_path %[2]s/proxy;
	fastcgi_temp_path %[2]s/fastcgi;
	uwsgi_temp_path %[2]s/uwsgi;
	scgi_temp_path %[2]s/scgi;
	upstream fake {
		server %[3]s;
		keepalive %[4]d;
		keepalive_requests 1000000;
	}
	server {
		listen 127.0.0.1:%[5]d;
		location / {
			if ($http_authorization != "Bearer %[6]s") { return 401; }
			proxy_pass http://fake;
			proxy_http_version 1.1;
			proxy_set_header Connection "";
			proxy_set_header Authorization "Bearer bench-upstream";
			proxy_buffering off;
		}
	}
}
`

// nginx starts the reference in front of base, able to hold conns client
// connections at once; it returns nil when nginx is not installed.
func (r *rig) nginx(name, base, key string, conns int) (*target, error) {
	bin := findNginx()
	if bin == "" {
		return nil, nil
	}
	u, err := url.Parse(base)
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(r.dir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	conf := filepath.Join(dir, "nginx.conf")
	// Each client connection may need one upstream connection beside it.
	text := fmt.Sprintf(nginxConf, 2*conns+64, dir, u.Host, r.idle, port, key)
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "-e", "stderr", "-p", dir, "-c", conf)
	p, err := r.start(name, cmd, "start worker process", func(string) string { return fmt.Sprintf("127.0.0.1:%d", port) })
	if err != nil {
		return nil, err
	}
	return &target{name: name, url: "http://" + p.Addr + "/v1/chat/completions", model: "gpt-4o-mini", key: key,
		pid: p.Cmd.Process.Pid}, nil
}

// freePort is a loopback port free a moment ago, for a server that cannot
// listen on port 0 and say which it got.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
