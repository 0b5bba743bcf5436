package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// proc is a child process the benchmark measures or leans on.
type proc struct {
	name string
	cmd  *exec.Cmd
	addr string // host:port it serves on
	// exited is closed once the process is gone.
	exited <-chan struct{}
}

// buildBinaries compiles pistrad and the fake provider from the module the
// benchmark runs in.
func buildBinaries(dir string) error {
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	cmd := exec.Command("go", "build", "-o", dir+string(os.PathSeparator), "./cmd/pistrad", "./cmd/fakeprovider")
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
		return "", fmt.Errorf("run the benchmark inside the pistra module")
	}
	return filepath.Dir(mod), nil
}

// startProc runs a child with its output in a file under dir and waits
// until a line of it contains marker; addrOf extracts the address from that
// line. A file rather than a pipe: the child's per-request logging then
// costs it what it would in production, and the benchmark process is not
// woken for every line.
func startProc(dir, name string, cmd *exec.Cmd, marker string, addrOf func(string) string) (*proc, error) {
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
	p := &proc{name: name, cmd: cmd}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	p.exited = exited
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		if line := findLine(path, marker); line != "" {
			p.addr = addrOf(line)
			return p, nil
		}
		select {
		case <-exited:
			b, _ := os.ReadFile(path)
			return nil, fmt.Errorf("%s exited before it listened:\n%s", name, b)
		case <-time.After(20 * time.Millisecond):
		}
	}
	p.stop()
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

func (p *proc) stop() {
	_ = p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
	}
}

// field returns the value of key=value or "key":"value" in a log line.
func field(line, key string) string {
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

// cpuTime is the process's user+system CPU time, from /proc/PID/stat.
func cpuTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name may hold spaces; the fields after it are fixed.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("unexpected /proc/%d/stat", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("short /proc/%d/stat", pid)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("unparsable /proc/%d/stat", pid)
	}
	// USER_HZ is 100 on every Linux platform Go supports.
	const tick = 10 * time.Millisecond
	return time.Duration(utime+stime) * tick, nil
}
