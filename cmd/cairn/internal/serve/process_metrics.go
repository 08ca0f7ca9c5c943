package serve

import (
	"os"
	"runtime"
	rtmetrics "runtime/metrics"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The process's own series, named as Prometheus's Go client names them so
// that the usual dashboards and alerts read them unchanged: the build,
// the Go runtime (goroutines, heap, collections) and the process (CPU,
// resident memory, file descriptors, start time). They are written here,
// from runtime/metrics and /proc, rather than by the client library: the
// dozen series cairn needs take less code than the library's four modules
// would bring in (docs/dependencies.md).

// processStart is when the process started, near enough: when this
// package was initialised.
var processStart = time.Now()

// runtimeSamples are the runtime/metrics read for the go_ series.
var runtimeSamples = []struct {
	name, metric, typ, help string
}{
	{"go_goroutines", "/sched/goroutines:goroutines", "gauge", "Goroutines that currently exist."},
	{"go_memstats_heap_alloc_bytes", "/memory/classes/heap/objects:bytes", "gauge", "Bytes of allocated heap objects."},
	{"go_gc_heap_live_bytes", "/gc/heap/live:bytes", "gauge", "Heap memory occupied by live objects that were marked by the previous GC."},
	{"go_memstats_sys_bytes", "/memory/classes/total:bytes", "gauge", "Bytes of memory obtained from the OS."},
	{"go_gc_cycles_total", "/gc/cycles/total:gc-cycles", "counter", "Completed GC cycles."},
}

func (s *Server) writeProcessMetrics(e *expo) {
	e.head("cairn_build_info", "gauge", "The build serving: its version and the Go version, as labels; always 1.")
	e.sample("cairn_build_info", []string{"version", s.opts.Version, "goversion", runtime.Version()}, 1)

	samples := make([]rtmetrics.Sample, len(runtimeSamples))
	for i, r := range runtimeSamples {
		samples[i].Name = r.metric
	}
	rtmetrics.Read(samples)
	for i, r := range runtimeSamples {
		v := 0.0
		switch samples[i].Value.Kind() {
		case rtmetrics.KindUint64:
			v = float64(samples[i].Value.Uint64())
		case rtmetrics.KindFloat64:
			v = samples[i].Value.Float64()
		}
		e.head(r.name, r.typ, r.help)
		e.sample(r.name, nil, v)
	}

	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		cpu := float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
		e.head("process_cpu_seconds_total", "counter", "User and system CPU time spent, in seconds.")
		e.sample("process_cpu_seconds_total", nil, cpu)
	}
	if rss, ok := residentBytes(); ok {
		e.head("process_resident_memory_bytes", "gauge", "Resident memory size, in bytes.")
		e.sample("process_resident_memory_bytes", nil, float64(rss))
	}
	if fds, err := os.ReadDir("/proc/self/fd"); err == nil {
		e.head("process_open_fds", "gauge", "Open file descriptors.")
		e.sample("process_open_fds", nil, float64(len(fds)))
	}
	var lim syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) == nil {
		e.head("process_max_fds", "gauge", "The most file descriptors the process may open.")
		e.sample("process_max_fds", nil, float64(lim.Cur))
	}
	e.head("process_start_time_seconds", "gauge", "Start time of the process, in seconds since the Unix epoch.")
	e.sample("process_start_time_seconds", nil, float64(processStart.UnixNano())/1e9)
}

// residentBytes reads the process's resident set size from
// /proc/self/statm (Linux); ok is false elsewhere.
func residentBytes() (int64, bool) {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0, false
	}
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return 0, false
	}
	return pages * int64(os.Getpagesize()), true
}
