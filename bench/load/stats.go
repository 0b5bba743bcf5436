package main

import (
	"fmt"
	"net"
	"net/http"
	"runtime/metrics"
)

// serveStats serves, on a loopback port of its own (so the relay's handler
// stays as it is), the figures the bench reads from the Go relays it
// runs, under the names pistrad's /metrics gives them: goroutines,
// allocations so far (heap and tiny, as go_memstats_mallocs_total counts),
// and the stack and heap memory in use (as MemStats.StackInuse and
// HeapInuse count them).
func serveStats() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	go func() {
		_ = http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			s := []metrics.Sample{{Name: "/sched/goroutines:goroutines"}, {Name: "/gc/heap/allocs:objects"},
				{Name: "/gc/heap/tiny/allocs:objects"}, {Name: "/memory/classes/heap/stacks:bytes"},
				{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/unused:bytes"}}
			metrics.Read(s)
			fmt.Fprintf(w, "go_goroutines %d\ngo_memstats_mallocs_total %d\ngo_memstats_stack_inuse_bytes %d\ngo_memstats_heap_inuse_bytes %d\n",
				s[0].Value.Uint64(), s[1].Value.Uint64()+s[2].Value.Uint64(), s[3].Value.Uint64(), s[4].Value.Uint64()+s[5].Value.Uint64())
		}))
	}()
	return ln.Addr().String(), nil
}
