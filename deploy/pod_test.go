package deploy

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/pistra/pistra/internal/testkit"
	"github.com/pistra/pistra/runtime/admin"
)

// TestPodRunsPistrad runs pod pistrad-0 of the rendered manifests the way
// the kubelet would: the real pistrad binary with the container's
// arguments, $(VAR)s expanded from its environment (the pod's name and
// namespace, the env Secret), each volume's files where it is mounted
// (under a temporary root) and the listeners on loopback. So every flag is
// one pistrad has, every file it reads is in the volume mounted there, the
// bundle verifies against the key beside it and the node certificate
// loads, the node is named for its pod and bootstraps with its peers'
// names, and the probes ask paths pistrad serves. Its peers' names do not
// resolve here, so the node never learns a leader.
func TestPodRunsPistrad(t *testing.T) {
	m, sts, c := cluster(t)
	const pod = "pistrad-0"
	env := podEnv(t, m, c, pod)
	root := t.TempDir()
	mounts := mountVolumes(t, m, sts, c, root)
	var args []string
	for name, value := range flags(t, c) {
		value = expand(value, env)
		for _, mp := range mounts {
			if under(value, mp) {
				value = filepath.Join(root, value)
			}
		}
		if strings.HasSuffix(name, "listen") {
			value = "127.0.0.1:0"
		}
		args = append(args, "-"+name+"="+value)
	}
	public, adminAddr, logs := startPistrad(t, args, env)
	for _, p := range []*corev1.Probe{c.StartupProbe, c.LivenessProbe} {
		if code, body := probe(t, public, p); code != http.StatusOK {
			t.Errorf("probe %s: %d %s", p.HTTPGet.Path, code, body)
		}
	}
	// Not ready: its replica never joined a cluster, so it holds nothing.
	if code, body := probe(t, public, c.ReadinessProbe); code != http.StatusServiceUnavailable || !strings.HasPrefix(body, "not ready") {
		t.Errorf("readiness %s: %d %s, want 503 not ready", c.ReadinessProbe.HTTPGet.Path, code, body)
	}
	if !strings.Contains(logs.String(), `"msg":"bundle signatures required"`) {
		t.Errorf("pistrad does not require the bundle's signature:\n%s", logs.String())
	}
	st := ledgerStatus(t, adminAddr, env["PISTRA_ADMIN_TOKEN"])
	if st.ID != pod || len(st.Servers) != 3 {
		t.Fatalf("ledger status: %+v, want node %s of 3 voters", st, pod)
	}
	for _, s := range st.Servers {
		if s.Addr != peerName(s.ID)+":8082" || !s.Voter {
			t.Errorf("voter %+v, want %s:8082", s, peerName(s.ID))
		}
	}
}

// ledgerStatus reads the node's ledger view from its admin API.
func ledgerStatus(t *testing.T, addr, token string) admin.LedgerStatus {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+addr+"/admin/v1/status", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st struct{ Ledger admin.LedgerStatus }
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("admin status: %d, %v", resp.StatusCode, err)
	}
	return st.Ledger
}

// podEnv is the container's environment in pod: its literal and
// downward-API variables and every key of its envFrom Secrets.
func podEnv(t *testing.T, m *manifests, c *corev1.Container, pod string) map[string]string {
	t.Helper()
	fields := map[string]string{"metadata.name": pod, "metadata.namespace": namespace}
	env := map[string]string{}
	for _, from := range c.EnvFrom {
		if from.SecretRef == nil || m.secrets[from.SecretRef.Name] == nil {
			t.Fatalf("envFrom %+v: no such Secret", from)
		}
		for k, v := range m.secrets[from.SecretRef.Name].Data {
			env[k] = string(v)
		}
	}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = e.Value
		case e.ValueFrom.FieldRef != nil && fields[e.ValueFrom.FieldRef.FieldPath] != "":
			env[e.Name] = fields[e.ValueFrom.FieldRef.FieldPath]
		default:
			t.Fatalf("env %s: a source this test does not provide", e.Name)
		}
	}
	return env
}

// mountVolumes writes each volume c mounts under root at its mount path:
// a ConfigMap's or Secret's keys as files, a claimed volume empty. It
// returns the mount paths.
func mountVolumes(t *testing.T, m *manifests, sts *appsv1.StatefulSet, c *corev1.Container, root string) []string {
	t.Helper()
	claims := map[string]bool{}
	for _, pvc := range sts.Spec.VolumeClaimTemplates {
		claims[pvc.Name] = true
	}
	volumes := map[string]corev1.VolumeSource{}
	for _, v := range sts.Spec.Template.Spec.Volumes {
		volumes[v.Name] = v.VolumeSource
	}
	var paths []string
	for _, vm := range c.VolumeMounts {
		dir := filepath.Join(root, vm.MountPath)
		files := map[string][]byte{}
		switch v, ok := volumes[vm.Name]; {
		case claims[vm.Name]:
		case ok && v.ConfigMap != nil && m.configMaps[v.ConfigMap.Name] != nil:
			for k, s := range m.configMaps[v.ConfigMap.Name].Data {
				files[k] = []byte(s)
			}
		case ok && v.Secret != nil && m.secrets[v.Secret.SecretName] != nil:
			files = m.secrets[v.Secret.SecretName].Data
		default:
			t.Fatalf("volume %s: not claimed, nor a ConfigMap or Secret the manifests hold", vm.Name)
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		for k, b := range files {
			if err := os.WriteFile(filepath.Join(dir, k), b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		paths = append(paths, vm.MountPath)
	}
	return paths
}

var envRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// expand replaces $(VAR) as the kubelet does in arguments: a variable the
// container does not define is left as written.
func expand(s string, env map[string]string) string {
	return envRef.ReplaceAllStringFunc(s, func(ref string) string {
		if v, ok := env[ref[2:len(ref)-1]]; ok {
			return v
		}
		return ref
	})
}

// binDir holds the pistrad the package's tests build once and share.
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "deploy-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// pistradBinary builds cmd/pistrad once, on first use.
var pistradBinary = sync.OnceValues(func() (string, error) {
	bin := filepath.Join(binDir, "pistrad")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/pistrad").CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/pistrad: %w\n%s", err, out)
	}
	return bin, nil
})

// startPistrad builds and starts pistrad with args and exactly env, waits
// for its listeners and returns the public one and its log; it is stopped
// with SIGTERM, and must exit cleanly, when the test ends.
func startPistrad(t *testing.T, args []string, env map[string]string) (public, adminAddr string, logs *testkit.SyncBuffer) {
	t.Helper()
	bin, err := pistradBinary()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, bin, args...)
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	logs = &testkit.SyncBuffer{}
	lines := bufio.NewScanner(stderr)
	for public == "" && lines.Scan() {
		logs.Write(append(lines.Bytes(), '\n'))
		var rec struct{ Msg, Public, Admin string }
		if json.Unmarshal(lines.Bytes(), &rec) == nil && rec.Msg == "listening" {
			public, adminAddr = rec.Public, rec.Admin
		}
	}
	exited := make(chan error, 1)
	go func() {
		io.Copy(logs, stderr)
		exited <- cmd.Wait()
	}()
	if public == "" {
		t.Fatalf("pistrad did not start (%v):\n%s", <-exited, logs.String())
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		if err := <-exited; err != nil {
			t.Errorf("pistrad's exit after SIGTERM: %v\n%s", err, logs.String())
		}
	})
	return public, adminAddr, logs
}

// probe asks p's path on the public listener, as the kubelet's HTTP probe.
func probe(t *testing.T, public string, p *corev1.Probe) (int, string) {
	t.Helper()
	if p == nil || p.HTTPGet == nil || p.HTTPGet.Port.String() != "http" {
		t.Fatalf("probe %+v: want an HTTP GET on the http port", p)
	}
	resp, err := http.Get("http://" + public + p.HTTPGet.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
