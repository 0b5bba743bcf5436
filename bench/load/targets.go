package main

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"github.com/pistra/pistra/bench/internal/proc"
)

// adminToken authenticates the bench to pistrad's admin listener (its
// profiles).
const adminToken = "bench-admin"

// rig is the processes of one run, started into dir and stopped together.
type rig struct {
	dir   string
	procs []*proc.Proc
	// idle is how many idle upstream connections each gateway keeps: at
	// least the client concurrency, so no gateway pays for re-dialling.
	idle int
	// memProfileRate, when set, is pistrad's bytes per sampled allocation
	// (GODEBUG=memprofilerate): Go's 512 KiB default samples a few hundred
	// of a profile cell's allocations, too few to rank their sites.
	memProfileRate int
}

func (r *rig) start(name string, cmd *exec.Cmd, marker string, addrOf func(string) string) (*proc.Proc, error) {
	p, err := proc.Start(r.dir, name, cmd, marker, addrOf)
	if err == nil {
		r.procs = append(r.procs, p)
	}
	return p, err
}

func (r *rig) stop() {
	for _, p := range r.procs {
		p.Stop()
	}
	r.procs = nil
}

// fake starts a fake OpenAI provider and returns its base URL
// (http://127.0.0.1:port/v1).
func (r *rig) fake(name string, args ...string) (string, error) {
	cmd := exec.Command(r.dir+"/fakeprovider", append([]string{"-openai", "127.0.0.1:0", "-record", "0"}, args...)...)
	p, err := r.start(name, cmd, "fake provider serving", func(l string) string { return proc.Field(l, "base_url") })
	if err != nil {
		return "", err
	}
	return p.Addr, nil
}

// pistrad starts pistrad on bundle with everything a production
// deployment has on: its JSON request log to a file (buffered as by
// default), metrics, and, unless extra says -ledger-in-memory, a
// single-node raft ledger on disk in its own directory.
func (r *rig) pistrad(name, bundle, key string, extra ...string) (*target, error) {
	return r.pistradFrom(r.dir+"/pistrad", name, bundle, key, extra...)
}

// pistradFrom is pistrad from binary bin, e.g. one built from the commit a
// change started from, so its figures and the change's come from one run.
func (r *rig) pistradFrom(bin, name, bundle, key string, extra ...string) (*target, error) {
	args := []string{"-bundle", bundle, "-listen", "127.0.0.1:0", "-admin-listen", "127.0.0.1:0",
		"-max-idle-conns-per-host", strconv.Itoa(r.idle)}
	if !strings.Contains(strings.Join(extra, " "), "-ledger-in-memory") {
		args = append(args, "-ledger-dir", r.dir+"/"+name+"-ledger")
	}
	cmd := exec.Command(bin, append(args, extra...)...)
	cmd.Env = append(os.Environ(), leanUpstreamEnv+"=bench-upstream", "PISTRA_ADMIN_TOKEN="+adminToken)
	if r.memProfileRate > 0 {
		cmd.Env = append(cmd.Env, fmt.Sprintf("GODEBUG=memprofilerate=%d", r.memProfileRate))
	}
	p, err := r.start(name, cmd, `"msg":"listening"`, func(l string) string { return proc.Field(l, "public") })
	if err != nil {
		return nil, err
	}
	return &target{name: name, url: "http://" + p.Addr + "/v1/chat/completions", model: "fast", key: key,
		pid: p.Cmd.Process.Pid, stats: "http://" + p.Addr + "/metrics", admin: "http://" + proc.Field(p.Line, "admin")}, nil
}

// relay starts this binary as one of its Go relays (env names which) in
// front of base.
func (r *rig) relay(name, env, base, key string) (*target, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), env+"="+strings.TrimSuffix(base, "/v1"), leanKeyEnv+"="+key,
		leanUpstreamEnv+"=bench-upstream")
	p, err := r.start(name, cmd, "listening ", func(l string) string { return strings.Fields(l)[1] })
	if err != nil {
		return nil, err
	}
	return &target{name: name, url: "http://" + p.Addr + "/v1/chat/completions", model: "gpt-4o-mini", key: key,
		pid: p.Cmd.Process.Pid, stats: "http://" + proc.Field(p.Line, "stats")}, nil
}

// direct is the fake itself, the baseline added latency is read against.
func direct(base string) *target {
	return &target{name: "direct", url: base + "/chat/completions", model: "gpt-4o-mini", key: "direct"}
}

// build compiles pistrad and the fake into r.dir.
func (r *rig) build() error {
	if err := proc.Build(r.dir, nil, "./cmd/pistrad", "./cmd/fakeprovider"); err != nil {
		return fmt.Errorf("build: %w", err)
	}
	return nil
}
