// Package proc builds pistra's binaries and runs them as child processes
// for the benchmarks (bench/load) and the chaos run (bench/chaos): each
// child logs to a file, is waited on until it says where it listens, and is
// measured from /proc.
package proc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/pistra/pistra/compiler"
)

// Proc is a running child process.
type Proc struct {
	Name string
	Cmd  *exec.Cmd
	Addr string // what it serves on, as its start-up line says
	Line string // that start-up line
	// Exited is closed once the process is gone.
	Exited <-chan struct{}
	// Log is the file its output goes to.
	Log string
}

// Build compiles the packages (e.g. "./cmd/pistrad") of the module the
// caller runs in into dir, with extra go build flags such as -race.
func Build(dir string, flags []string, pkgs ...string) error {
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	args := append(append([]string{"build"}, flags...), "-o", dir+string(os.PathSeparator))
	cmd := exec.Command("go", append(args, pkgs...)...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %v\n%s", err, out)
	}
	return nil
}

func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", fmt.Errorf("run inside the pistra module")
	}
	return filepath.Dir(mod), nil
}

// Start runs a child with its output in dir/name.log and waits until a
// line of it contains marker; addrOf extracts the address from that line.
// A file rather than a pipe: the child's per-request logging then costs it
// what it would in production, and the parent is not woken for every line.
func Start(dir, name string, cmd *exec.Cmd, marker string, addrOf func(string) string) (*Proc, error) {
	path := filepath.Join(dir, name+".log")
	out, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	defer out.Close()
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	p := &Proc{Name: name, Cmd: cmd, Log: path}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	p.Exited = exited
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		if line := findLine(path, marker); line != "" {
			p.Addr, p.Line = addrOf(line), line
			return p, nil
		}
		select {
		case <-exited:
			b, _ := os.ReadFile(path)
			return nil, fmt.Errorf("%s exited before it listened:\n%s", name, b)
		case <-time.After(20 * time.Millisecond):
		}
	}
	p.Stop()
	return nil, fmt.Errorf("%s did not listen within 30s", name)
}

func findLine(path, marker string) string {
	b, _ := os.ReadFile(path)
	for line := range strings.Lines(string(b)) {
		if strings.Contains(line, marker) {
			return strings.TrimSpace(line)
		}
	}
	return ""
}

// Stop interrupts the process and waits for it, killing it after ten
// seconds.
func (p *Proc) Stop() {
	_ = p.Cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.Exited:
	case <-time.After(10 * time.Second):
		p.Kill()
	}
}

// Kill sends SIGKILL and waits for the process to be gone.
func (p *Proc) Kill() {
	_ = p.Cmd.Process.Kill()
	<-p.Exited
}

// Field returns the value of key=value or "key":"value" in a log line.
func Field(line, key string) string {
	for _, sep := range []string{key + "=", `"` + key + `":"`} {
		if i := strings.Index(line, sep); i >= 0 {
			v := line[i+len(sep):]
			if j := strings.IndexAny(v, `" `); j >= 0 {
				v = v[:j]
			}
			return v
		}
	}
	return ""
}

// CPU is a process's CPU time: user, in its own code, and system, the
// kernel's on its behalf (system calls, the network stack). Read together,
// the two tell where a gateway's cost lies.
type CPU struct{ User, System time.Duration }

// Total is user and system time together.
func (c CPU) Total() time.Duration { return c.User + c.System }

// CPUTime is the process's CPU time, from /proc/PID/stat.
func CPUTime(pid int) (CPU, error) {
	user, system, err := cpuTimes(pid)
	return CPU{user, system}, err
}

func cpuTimes(pid int) (user, system time.Duration, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, err
	}
	// The command name may hold spaces; the fields after it are fixed.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, fmt.Errorf("unexpected /proc/%d/stat", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, 0, fmt.Errorf("short /proc/%d/stat", pid)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("unparsable /proc/%d/stat", pid)
	}
	// USER_HZ is 100 on every Linux platform Go supports.
	const tick = 10 * time.Millisecond
	return time.Duration(utime) * tick, time.Duration(stime) * tick, nil
}

// Syscalls is how many read and write system calls the process has made
// (syscr + syscw in /proc/PID/io): a relay's I/O calls, which cost it more
// CPU than anything it computes.
func Syscalls(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return 0, err
	}
	var n int64
	for line := range strings.Lines(string(b)) {
		k, v, _ := strings.Cut(strings.TrimSpace(line), ": ")
		if k != "syscr" && k != "syscw" {
			continue
		}
		c, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/io %s: %w", pid, k, err)
		}
		n += c
	}
	return n, nil
}

// RSS is the process's resident set size in bytes, from VmRSS in
// /proc/PID/status.
func RSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("VmRSS %q: %w", v, err)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("/proc/%d/status has no VmRSS", pid)
}

// WriteBundle compiles the CUE policy src, as pistrac build does, and
// writes the bundle pistrad -bundle serves into dir; it returns its path.
func WriteBundle(dir, src string) (string, error) {
	pdir := filepath.Join(dir, "policy")
	if err := os.MkdirAll(pdir, 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(pdir, "policy.cue"), []byte(src), 0o644); err != nil {
		return "", err
	}
	g, err := compiler.Compile(pdir)
	if err != nil {
		return "", fmt.Errorf("compile the policy: %w", err)
	}
	b, err := json.Marshal(g)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "bundle.json")
	return path, os.WriteFile(path, b, 0o644)
}
