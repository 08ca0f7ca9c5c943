package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkHostileClients measures one `cairn serve` process, with its
// default limits, under clients that misbehave, and what a well-behaved
// client sees meanwhile:
//
//   - 2,000 idle kept-alive connections;
//   - 50 clients that ask for a 15 MiB answer and never read it;
//   - 16 clients that send a 90 MiB body each, all at once.
//
// The well-behaved client puts a 1 KiB file and stats it, first alone,
// then while the hostile clients run. The table gives its p50 and p99 in
// both phases, the server's resident memory (sampled every 50 ms, and its
// high-water mark), the connections the server held, and what the
// hostile clients got. Run it with
//
//	go test ./cmd/cairn -run '^$' -bench HostileClients -benchtime 1x -v
//
// CAIRN_HOSTILE=idle,noread,bodies picks the hostile clients (default:
// all), CAIRN_HOSTILE_ENV adds to the server's environment, and
// CAIRN_HOSTILE_TRACE=1 prints a timeline: the server's RSS, each call of
// the well-behaved client slower than 8 ms, each body's answer.
//
// It is a benchmark, not a test: it asserts nothing about time.
func BenchmarkHostileClients(b *testing.B) {
	bin := cairnBinary(b)
	for range b.N {
		hostileRun(b, bin)
	}
}

const (
	hostileIdle     = 2000
	hostileNoRead   = 50
	hostileBodies   = 16
	hostileBodySize = 90 << 20
	hostileRounds   = 200 // well-behaved puts and stats per phase
)

func hostileRun(b *testing.B, bin string) {
	p := startServeProc(b, bin, b.TempDir(), strings.Fields(os.Getenv("CAIRN_HOSTILE_ENV")), "--addr", "127.0.0.1:0", "--bucket", "file://"+b.TempDir())
	pid := p.cmd.Process.Pid
	base := p.base + "/v1/agents/h/tools/"
	client := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	call := func(tool, body string) (int, error) {
		resp, err := client.Post(base+tool, "application/json", strings.NewReader(body))
		if err != nil {
			return 0, err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	if st, err := call("workbench_create", `{"id":"w"}`); st != 200 {
		b.Fatalf("create: %d %v", st, err)
	}
	bigText := strings.Repeat("y", 15<<20)
	if st, err := call("workbench_put_file", `{"id":"w","section":"outputs","path":"big.txt","text":"`+bigText+`"}`); st != 200 {
		b.Fatalf("put big: %d %v", st, err)
	}

	var rss rssSampler
	rss.start(pid)
	alone := wellBehaved(call, "alone")

	// The hostile clients.
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var idleHeld atomic.Int64
	var conns []net.Conn
	var connsMu sync.Mutex
	addr := strings.TrimPrefix(p.base, "http://")
	kinds := os.Getenv("CAIRN_HOSTILE") // for attributing: a comma list of idle, noread, bodies; empty: all
	on := func(kind string) bool { return kinds == "" || strings.Contains(kinds, kind) }
	for range 8 {
		if !on("idle") {
			break
		}
		wg.Go(func() {
			for range hostileIdle / 8 {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					continue
				}
				fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
				if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					idleHeld.Add(1)
				}
				connsMu.Lock()
				conns = append(conns, c)
				connsMu.Unlock()
			}
		})
	}
	readIn := `{"id":"w","section":"outputs","path":"big.txt"}`
	for range hostileNoRead {
		if !on("noread") {
			break
		}
		wg.Go(func() {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				return
			}
			if tc, ok := c.(*net.TCPConn); ok {
				tc.SetReadBuffer(4 << 10)
			}
			fmt.Fprintf(c, "POST /v1/agents/h/tools/workbench_read HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(readIn), readIn)
			connsMu.Lock()
			conns = append(conns, c)
			connsMu.Unlock()
			<-stop
		})
	}
	var bodyStatus sync.Map
	body := []byte(`{"id":"w","section":"outputs","path":"huge.txt","text":"` + strings.Repeat("z", hostileBodySize-60) + `"}`)
	for range hostileBodies {
		if !on("bodies") {
			break
		}
		wg.Go(func() {
			resp, err := http.Post(base+"workbench_put_file", "application/json", bytes.NewReader(body))
			status := "error"
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				status = strconv.Itoa(resp.StatusCode)
			}
			n, _ := bodyStatus.LoadOrStore(status, new(atomic.Int64))
			n.(*atomic.Int64).Add(1)
			if os.Getenv("CAIRN_HOSTILE_TRACE") != "" {
				fmt.Println(time.Now().Format("15:04:05.000"), "body answered", status)
			}
		})
	}
	time.Sleep(500 * time.Millisecond) // let them arrive
	if os.Getenv("CAIRN_HOSTILE_TRACE") != "" {
		fmt.Println(time.Now().Format("15:04:05.0"), "well-behaved client starts")
	}
	loaded := wellBehaved(call, "loaded")
	if os.Getenv("CAIRN_HOSTILE_TRACE") != "" {
		fmt.Println(time.Now().Format("15:04:05.0"), "well-behaved client ends")
	}
	openFDs := countFDs(pid)
	close(stop)
	connsMu.Lock()
	for _, c := range conns {
		c.Close()
	}
	connsMu.Unlock()
	wg.Wait()
	peak, hwm := rss.stop()

	var bodies []string
	bodyStatus.Range(func(k, v any) bool {
		bodies = append(bodies, fmt.Sprintf("%s×%d", k, v.(*atomic.Int64).Load()))
		return true
	})
	slices.Sort(bodies)
	b.Logf("\n%s", strings.Join([]string{
		"well-behaved client      p50 put   p99 put   p50 stat  p99 stat  failed",
		alone.row(),
		loaded.row(),
		fmt.Sprintf("p99 loaded / alone: put %.1f×, stat %.1f×", ratio(loaded.p99put, alone.p99put), ratio(loaded.p99stat, alone.p99stat)),
		fmt.Sprintf("server RSS: %d MiB before, %d MiB peak sampled, %d MiB high-water mark (VmHWM)", rss.first>>20, peak>>20, hwm>>20),
		fmt.Sprintf("server file descriptors under load: %d; idle connections made: %d of %d", openFDs, idleHeld.Load(), hostileIdle),
		fmt.Sprintf("16 bodies of 90 MiB answered: %s", strings.Join(bodies, ", ")),
	}, "\n"))
	p.stop(b)
}

// phase is the well-behaved client's latencies in one phase.
type phase struct {
	name                             string
	p50put, p99put, p50stat, p99stat time.Duration
	failed                           int
}

func (ph phase) row() string {
	return fmt.Sprintf("%-22s %9v %9v %9v %9v %7d", ph.name,
		ph.p50put.Round(100*time.Microsecond), ph.p99put.Round(100*time.Microsecond),
		ph.p50stat.Round(100*time.Microsecond), ph.p99stat.Round(100*time.Microsecond), ph.failed)
}

func ratio(a, b time.Duration) float64 { return float64(a) / float64(max(b, 1)) }

// wellBehaved puts a 1 KiB file and stats it hostileRounds times, one
// call at a time, retrying a call once after a transport error.
func wellBehaved(call func(tool, body string) (int, error), name string) phase {
	text := strings.Repeat("k", 1024)
	var puts, stats []time.Duration
	ph := phase{name: name}
	for i := range hostileRounds {
		path := fmt.Sprintf("%s-%d.txt", name, i)
		for _, c := range []struct {
			tool, body string
			into       *[]time.Duration
		}{
			{"workbench_put_file", `{"id":"w","section":"outputs","path":"` + path + `","text":"` + text + `"}`, &puts},
			{"workbench_stat", `{"id":"w","section":"outputs","path":"` + path + `"}`, &stats},
		} {
			start := time.Now()
			st, err := call(c.tool, c.body)
			if err != nil {
				st, err = call(c.tool, c.body)
			}
			took := time.Since(start)
			*c.into = append(*c.into, took)
			if os.Getenv("CAIRN_HOSTILE_TRACE") != "" && took > 8*time.Millisecond {
				fmt.Println(start.Format("15:04:05.000000"), "slow", name, c.tool, took)
			}
			if err != nil || st != 200 {
				ph.failed++
			}
		}
	}
	ph.p50put, ph.p99put = quantile(puts, 0.5), quantile(puts, 0.99)
	ph.p50stat, ph.p99stat = quantile(stats, 0.5), quantile(stats, 0.99)
	return ph
}

func quantile(d []time.Duration, q float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

// rssSampler samples a process's resident memory every 50 ms.
type rssSampler struct {
	pid   int
	first int64
	peak  atomic.Int64
	done  chan struct{}
	wg    sync.WaitGroup
}

func (r *rssSampler) start(pid int) {
	r.pid, r.done = pid, make(chan struct{})
	r.first, _ = procStatus(pid, "VmRSS")
	r.wg.Go(func() {
		for {
			if v, ok := procStatus(pid, "VmRSS"); ok {
				if v > r.peak.Load() {
					r.peak.Store(v)
				}
				if os.Getenv("CAIRN_HOSTILE_TRACE") != "" {
					fmt.Printf("%s rss %d MiB\n", time.Now().Format("15:04:05.0"), v>>20)
				}
			}
			select {
			case <-r.done:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	})
}

// stop returns the peak sampled and the kernel's high-water mark.
func (r *rssSampler) stop() (peak, hwm int64) {
	close(r.done)
	r.wg.Wait()
	hwm, _ = procStatus(r.pid, "VmHWM")
	return r.peak.Load(), hwm
}

// procStatus reads a kB field of /proc/PID/status, in bytes.
func procStatus(pid int, field string) (int64, bool) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, false
	}
	for line := range strings.SplitSeq(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10, err == nil
		}
	}
	return 0, false
}

func countFDs(pid int) int {
	fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	return len(fds)
}
