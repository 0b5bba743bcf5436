package proc

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"
)

// Tree is pid and its descendants, from /proc: a gateway that forks
// workers (nginx) is charged for all of them.
func Tree(pid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return []int{pid}
	}
	children := map[int][]int{}
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if parent, err := parentOf(child); err == nil {
			children[parent] = append(children[parent], child)
		}
	}
	out := []int{pid}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i]]...)
	}
	return out
}

func parentOf(pid int) (int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	i := bytes.LastIndexByte(b, ')')
	f := bytes.Fields(b[i+1:])
	if i < 0 || len(f) < 2 {
		return 0, fmt.Errorf("unexpected /proc/%d/stat", pid)
	}
	return strconv.Atoi(string(f[1]))
}

// TreeCPU is CPUTime summed over Tree(pid).
func TreeCPU(pid int) (CPU, error) {
	var total CPU
	for _, p := range Tree(pid) {
		c, err := CPUTime(p)
		if err != nil {
			return CPU{}, err
		}
		total.User, total.System = total.User+c.User, total.System+c.System
	}
	return total, nil
}

// TreeSyscalls is Syscalls summed over Tree(pid).
func TreeSyscalls(pid int) (int64, error) {
	return sumTree(pid, Syscalls)
}

// TreeRSS is RSS summed over Tree(pid).
func TreeRSS(pid int) (int64, error) {
	return sumTree(pid, RSS)
}

func sumTree[T time.Duration | int64](pid int, f func(int) (T, error)) (T, error) {
	var total T
	for _, p := range Tree(pid) {
		v, err := f(p)
		if err != nil {
			return 0, err
		}
		total += v
	}
	return total, nil
}
