package proc

import (
	"os/exec"
	"slices"
	"syscall"
	"testing"
	"time"
)

// TestTreeCountsChildren: a process that forks is charged for its
// children, as nginx's master is for its workers.
func TestTreeCountsChildren(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 30 & sleep 30 & wait")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	tree := Tree(pid)
	for deadline := time.Now().Add(5 * time.Second); len(tree) < 3 && time.Now().Before(deadline); tree = Tree(pid) {
		time.Sleep(10 * time.Millisecond)
	}
	defer func() {
		for _, p := range tree[1:] {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	if len(tree) != 3 || tree[0] != pid {
		t.Fatalf("Tree(%d) = %v, want the shell and its two sleeps", pid, tree)
	}
	own, err := RSS(pid)
	if err != nil {
		t.Fatal(err)
	}
	all, err := TreeRSS(pid)
	if err != nil {
		t.Fatal(err)
	}
	if all <= own {
		t.Errorf("TreeRSS %d, want more than the shell's own %d", all, own)
	}
	if slices.Contains(Tree(pid), 1) {
		t.Errorf("Tree(%d) climbed to init", pid)
	}
}

func TestSumSeries(t *testing.T) {
	text := "# HELP a_total x\na_total{x=\"1\"} 2\na_total{x=\"2\"} 3\na_total_more 7\ngo_goroutines 12\n"
	if v, ok := SumSeries(text, "a_total"); !ok || v != 5 {
		t.Errorf("a_total = %v, %v; want 5 from its two series, not a_total_more's", v, ok)
	}
	if v, ok := SumSeries(text, "go_goroutines"); !ok || v != 12 {
		t.Errorf("go_goroutines = %v, %v; want 12", v, ok)
	}
	if _, ok := SumSeries(text, "absent"); ok {
		t.Error("an absent series was found")
	}
}
