package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkThreeAgents100k measures one `cairn serve` process, with its
// default cache budget (--cache-mib 512, and the 32 MiB block cache),
// serving three agents of 100,000 files each from one local-file bucket:
// the requirement that a process serving several large worlds stays
// within the cache budget, whatever their size.
//
// Each agent is seeded by `cairn import` (the group-committed put_file
// path the CLI offers for bulk loads, which ends with a fold) from a tree
// of directories of 1,000 files of about 200 bytes, its bodies naming the
// agent. Then one server serves all three: each agent in turn gets a
// whole-workbench search and grep (which read every path row and every
// body) and a mix of list pages, stats, reads, directory greps and
// searches and a few put_file calls of new files; then the same mix
// runs over the three agents at once, four calls in flight.
//
// It prints, after each phase, the server's resident memory (VmRSS) and
// its high-water mark (VmHWM), the Go heap (allocated, and live at the
// last collection), and what the shared caches hold against their
// budgets (from /metrics). It fails if a cache ever holds more than its
// budget (sampled every 250 ms as well as after each phase); it reports,
// without failing, the resident memory against rssBound. Run it with
//
//	go test ./cmd/cairn -run '^$' -bench ThreeAgents -benchtime 1x -v -timeout 60m
//
// CAIRN_THREE_AGENTS_FILES sets the files per agent (default 100,000);
// CAIRN_THREE_AGENTS_CALLS the draws from the mix per agent in each phase
// (default 2,000; a listing may be several calls). CAIRN_THREE_AGENTS_DIR
// keeps the bucket in that directory and reuses it when a run of the same
// size seeded it (the import of 100,000 files takes one to three minutes
// per agent here). CAIRN_THREE_AGENTS_CACHE_MIB serves with --cache-mib
// set to it instead of the default, to see the budget hold when the three
// agents' working set is larger than the cache.
func BenchmarkThreeAgents100k(b *testing.B) {
	bin := cairnBinary(b)
	files := envInt(b, "CAIRN_THREE_AGENTS_FILES")
	if files <= 0 {
		files = 100_000
	}
	calls := envInt(b, "CAIRN_THREE_AGENTS_CALLS")
	if calls <= 0 {
		calls = 2000
	}
	dir := os.Getenv("CAIRN_THREE_AGENTS_DIR")
	if dir == "" {
		dir = b.TempDir()
	}
	var args []string
	if mib := envInt(b, "CAIRN_THREE_AGENTS_CACHE_MIB"); mib > 0 {
		args = []string{"--cache-mib", strconv.Itoa(mib)}
	}
	b.ResetTimer()
	threeAgentsRun(b, bin, dir, files, calls, args)
}

const (
	// rssBound is the resident memory reported against: the memory limit
	// the deployment manifests give the container (docs/deploy).
	rssBound = 1 << 30
	// agentDirFiles is the files per directory of a seeded agent.
	agentDirFiles = 1000
	agentWB       = "w"
	// agentInflight is the calls in flight in the mixed phases.
	agentInflight = 4
)

var threeAgents = []string{"a1", "a2", "a3"}

func threeAgentsRun(b *testing.B, bin, dir string, files, calls int, serveArgs []string) {
	fmt.Printf("three agents of %d files, started %s\n", files, time.Now().Format(time.RFC3339))
	bucketDir := filepath.Join(dir, "bucket")
	seedThreeAgents(b, bin, dir, bucketDir, files)

	args := append([]string{"--addr", "127.0.0.1:0", "--bucket", "file://" + bucketDir}, serveArgs...)
	fmt.Printf("cairn serve %s\n", strings.Join(args, " "))
	p := startServeProc(b, bin, dir, nil, args...)
	pid := p.cmd.Process.Pid
	client := &http.Client{Timeout: 5 * time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 2 * agentInflight}}
	w := &agentWork{client: client, base: p.base, files: files, run: strconv.FormatInt(time.Now().UnixNano(), 36)}

	// The caches are sampled all along, not only between phases: a cache
	// over its budget for a moment is over it.
	var over atomic.Value // string: the first sample over a budget
	var peakCache atomic.Int64
	stopSampling := make(chan struct{})
	var sampling sync.WaitGroup
	sampling.Go(func() {
		for {
			if m, err := scrapeLabelled(client, p.base); err == nil {
				for _, c := range []string{"engine", "blocks"} {
					held, budget := m[`cairn_cache_bytes{cache="`+c+`"}`], m[`cairn_cache_budget_bytes{cache="`+c+`"}`]
					if c == "engine" && int64(held) > peakCache.Load() {
						peakCache.Store(int64(held))
					}
					if held > budget {
						over.CompareAndSwap(nil, fmt.Sprintf("%s cache holds %.0f bytes, over its budget of %.0f", c, held, budget))
					}
				}
			}
			select {
			case <-stopSampling:
				return
			case <-time.After(250 * time.Millisecond):
			}
		}
	})

	var rows []phaseRow
	measure := func(phase string, start time.Time, n int64) {
		rows = append(rows, phaseOf(b, client, p.base, pid, phase, time.Since(start), n))
	}
	measure("served, no call yet", time.Now(), 0)
	for i, a := range threeAgents {
		start, before := time.Now(), w.calls.Load()
		w.whole(b, a)
		w.mix(b, []string{a}, calls, uint64(i+1))
		measure("agent "+a+" alone", start, w.calls.Load()-before)
	}
	start, before := time.Now(), w.calls.Load()
	w.mix(b, threeAgents, calls*len(threeAgents), 99)
	measure("all three mixed", start, w.calls.Load()-before)
	close(stopSampling)
	sampling.Wait()

	printPhases(os.Stdout, rows, files, w)
	last := rows[len(rows)-1]
	b.ReportMetric(float64(last.hwm)/(1<<20), "peak-RSS-MiB")
	b.ReportMetric(float64(peakCache.Load())/(1<<20), "peak-cache-MiB")
	b.ReportMetric(float64(last.cacheBudget)/(1<<20), "cache-budget-MiB")
	if f := w.failed.Load(); f != nil {
		b.Fatalf("a call failed: %s", f)
	}
	if o := over.Load(); o != nil {
		b.Fatalf("%s", o)
	}
	for _, r := range rows {
		if r.cache > r.cacheBudget || r.blocks > r.blocksBudget {
			b.Fatalf("after %q the caches hold %d and %d bytes, over their budgets of %d and %d", r.phase, r.cache, r.blocks, r.cacheBudget, r.blocksBudget)
		}
	}
}

// seedThreeAgents imports files into each agent's workbench, unless
// dir's marker says a run of the same size did.
func seedThreeAgents(b *testing.B, bin, dir, bucketDir string, files int) {
	marker := filepath.Join(dir, "seeded")
	if got, err := os.ReadFile(marker); err == nil && string(got) == strconv.Itoa(files) {
		fmt.Printf("seeding: reusing the bucket in %s\n", bucketDir)
		return
	}
	os.RemoveAll(bucketDir)
	os.Remove(marker)
	if err := os.MkdirAll(bucketDir, 0o755); err != nil {
		b.Fatal(err)
	}
	all := time.Now()
	for _, a := range threeAgents {
		tree := filepath.Join(dir, "tree-"+a)
		start := time.Now()
		writeAgentTree(b, tree, a, files)
		wrote := time.Since(start)
		start = time.Now()
		cmd := exec.Command(bin, "import", tree, "--workbench", agentWB, "--agent", a, "--bucket", "file://"+bucketDir, "--quiet")
		cmd.Env = processEnv()
		out, err := cmd.CombinedOutput()
		if err != nil {
			b.Fatalf("cairn import for %s: %v\n%s", a, err, out)
		}
		fmt.Printf("seeding %s: tree written in %s, imported in %s\n", a, wrote.Round(100*time.Millisecond), time.Since(start).Round(100*time.Millisecond))
		for line := range strings.SplitSeq(string(out), "\n") {
			if strings.HasPrefix(line, "commits:") || strings.HasPrefix(line, "bucket:") {
				fmt.Printf("  %s\n", line)
			}
		}
		os.RemoveAll(tree)
	}
	fmt.Printf("seeding: %d agents of %d files in %s\n", len(threeAgents), files, time.Since(all).Round(time.Second))
	if err := os.WriteFile(marker, []byte(strconv.Itoa(files)), 0o644); err != nil {
		b.Fatal(err)
	}
}

// agentPath is the i-th file of an agent, below the section.
func agentPath(i int) string {
	return fmt.Sprintf("d%03d/f%06d.txt", i/agentDirFiles, i)
}

// writeAgentTree writes agent's files under tree: about 200 bytes each,
// one in a thousand holding the word "needle", each naming the agent so
// that no two agents store the same bytes.
func writeAgentTree(b *testing.B, tree, agent string, files int) {
	for d := range (files + agentDirFiles - 1) / agentDirFiles {
		if err := os.MkdirAll(filepath.Join(tree, fmt.Sprintf("d%03d", d)), 0o755); err != nil {
			b.Fatal(err)
		}
	}
	var body bytes.Buffer
	for i := range files {
		body.Reset()
		for l := range 3 {
			fmt.Fprintf(&body, "%s file %d line %d: the quick brown fox jumps over the lazy dog\n", agent, i, l)
		}
		if i%1000 == 7 {
			body.WriteString("a needle in the haystack\n")
		}
		if err := os.WriteFile(filepath.Join(tree, agentPath(i)), body.Bytes(), 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

// agentWork sends the benchmark's calls and counts them.
type agentWork struct {
	client *http.Client
	base   string
	files  int
	run    string // names this run's new files, apart from an earlier run's over the same bucket
	calls  atomic.Int64
	byTool sync.Map // tool -> *atomic.Int64
	puts   atomic.Int64
	fenced atomic.Int64 // pages refused ReadFenceChanged
	failed atomic.Value // string: the first failed call
}

// call posts one tool call to agent and decodes its answer into out (if
// not nil). A failed call is recorded and ends the benchmark at the end.
func (w *agentWork) call(agent, tool string, in map[string]any, out any) bool {
	body, _ := json.Marshal(in)
	w.calls.Add(1)
	n, _ := w.byTool.LoadOrStore(tool, new(atomic.Int64))
	n.(*atomic.Int64).Add(1)
	resp, err := w.client.Post(w.base+"/v1/agents/"+agent+"/tools/workbench_"+tool, "application/json", bytes.NewReader(body))
	if err != nil {
		w.failed.CompareAndSwap(nil, fmt.Sprintf("%s %s: %v", agent, tool, err))
		return false
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if r := (reply{status: resp.StatusCode, body: raw}); err == nil && r.code() == "ReadFenceChanged" {
		// A put moved the workbench under a listing's cursor; a client
		// starts over, as this one does at its next call.
		w.fenced.Add(1)
		return false
	}
	if err != nil || resp.StatusCode != http.StatusOK {
		w.failed.CompareAndSwap(nil, fmt.Sprintf("%s %s %s: %d %v %.300s", agent, tool, body, resp.StatusCode, err, raw))
		return false
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			w.failed.CompareAndSwap(nil, fmt.Sprintf("%s %s: %v", agent, tool, err))
			return false
		}
	}
	return true
}

// whole reads all of agent's workbench: a search matching every file
// (every path row) and a recursive grep, page after page (every body).
func (w *agentWork) whole(b *testing.B, agent string) {
	var res struct {
		MatchCount int `json:"match_count"`
	}
	w.call(agent, "search", map[string]any{"id": agentWB, "limit": 10,
		"predicates": []any{map[string]any{"field": "logical_size", "op": "gte", "value": 0}},
		"sort":       []any{map[string]any{"field": "logical_size", "direction": "desc"}}}, &res)
	if res.MatchCount < w.files {
		b.Fatalf("%s: search matched %d files, want at least %d", agent, res.MatchCount, w.files)
	}
	scanned := 0
	var cursor *string
	for {
		in := map[string]any{"id": agentWB, "pattern": "no line holds this", "recursive": true}
		if cursor != nil {
			in["cursor"] = *cursor
		}
		var g struct {
			FilesScanned int     `json:"files_scanned"`
			NextCursor   *string `json:"next_cursor"`
		}
		if !w.call(agent, "grep", in, &g) {
			return
		}
		scanned += g.FilesScanned
		if cursor = g.NextCursor; cursor == nil {
			break
		}
	}
	if scanned < w.files {
		b.Fatalf("%s: grep scanned %d files, want at least %d", agent, scanned, w.files)
	}
}

// mix makes n calls spread over agents, agentInflight at a time: of 100,
// 35 stats and 35 reads of random files, 20 list pages (a random page of
// a random directory, reached through the cursors of the pages before
// it), 4 greps of a directory, 3 searches of a directory and 3 puts of
// new files.
func (w *agentWork) mix(b *testing.B, agents []string, n int, seed uint64) {
	dirs := (w.files + agentDirFiles - 1) / agentDirFiles
	var next atomic.Int64
	var wg sync.WaitGroup
	for g := range agentInflight {
		rng := rand.New(rand.NewPCG(seed, uint64(g)))
		wg.Go(func() {
			for next.Add(1) <= int64(n) && w.failed.Load() == nil {
				agent := agents[rng.IntN(len(agents))]
				file := agentPath(rng.IntN(w.files))
				dir := fmt.Sprintf("d%03d", rng.IntN(dirs))
				switch k := rng.IntN(100); {
				case k < 35:
					w.call(agent, "stat", map[string]any{"id": agentWB, "section": "input", "path": file}, nil)
				case k < 70:
					w.call(agent, "read", map[string]any{"id": agentWB, "section": "input", "path": file}, nil)
				case k < 90:
					var cursor *string
					for range 1 + rng.IntN(agentDirFiles/100) {
						in := map[string]any{"id": agentWB, "section": "input", "path": dir}
						if cursor != nil {
							in["cursor"] = *cursor
						}
						var page struct {
							NextCursor *string `json:"next_cursor"`
						}
						if !w.call(agent, "list", in, &page) || page.NextCursor == nil {
							break
						}
						cursor = page.NextCursor
					}
				case k < 94:
					w.call(agent, "grep", map[string]any{"id": agentWB, "section": "input", "path": dir, "pattern": "needle", "recursive": false}, nil)
				case k < 97:
					w.call(agent, "search", map[string]any{"id": agentWB, "section": "input", "path": dir, "limit": 10,
						"predicates": []any{map[string]any{"field": "logical_size", "op": "gte", "value": 100}}}, nil)
				default:
					n := w.puts.Add(1)
					text := fmt.Sprintf("%s written while serving, %d\n", agent, n)
					w.call(agent, "put_file", map[string]any{"id": agentWB, "section": "outputs",
						"path": fmt.Sprintf("new/%s-%s-%d.txt", agent, w.run, n), "text": text}, nil)
				}
			}
		})
	}
	wg.Wait()
}

// phaseRow is the server's memory after one phase.
type phaseRow struct {
	phase                string
	wall                 time.Duration
	calls                int64
	rss, hwm             int64
	heap, live           int64
	cache, cacheBudget   int64
	blocks, blocksBudget int64
	open                 int
	hits, misses         float64 // the engine's object cache, since the start
}

func phaseOf(b *testing.B, client *http.Client, base string, pid int, phase string, wall time.Duration, calls int64) phaseRow {
	m, err := scrapeLabelled(client, base)
	if err != nil {
		b.Fatal(err)
	}
	for _, s := range []string{`cairn_cache_bytes{cache="engine"}`, `cairn_cache_budget_bytes{cache="engine"}`, "go_memstats_heap_alloc_bytes", "go_gc_heap_live_bytes"} {
		if _, ok := m[s]; !ok {
			b.Fatalf("/metrics has no %s", s)
		}
	}
	rss, _ := procStatus(pid, "VmRSS")
	hwm, _ := procStatus(pid, "VmHWM")
	return phaseRow{
		phase: phase, wall: wall, calls: calls, rss: rss, hwm: hwm,
		heap:         int64(m["go_memstats_heap_alloc_bytes"]),
		live:         int64(m["go_gc_heap_live_bytes"]),
		cache:        int64(m[`cairn_cache_bytes{cache="engine"}`]),
		cacheBudget:  int64(m[`cairn_cache_budget_bytes{cache="engine"}`]),
		blocks:       int64(m[`cairn_cache_bytes{cache="blocks"}`]),
		blocksBudget: int64(m[`cairn_cache_budget_bytes{cache="blocks"}`]),
		open:         int(m["cairn_open_agents"]),
		hits:         m[`cairn_engine_cache_hits_total{cache="objects"}`],
		misses:       m[`cairn_engine_cache_misses_total{cache="objects"}`],
	}
}

func printPhases(out io.Writer, rows []phaseRow, files int, w *agentWork) {
	mib := func(v int64) string { return fmt.Sprintf("%.0f", float64(v)/(1<<20)) }
	fmt.Fprintf(out, "\n%-20s %6s %8s %6s %6s %6s %6s %13s %11s %5s %8s\n", "phase", "calls", "wall", "RSS", "HWM", "heap", "live", "engine cache", "blocks", "open", "obj hits")
	for _, r := range rows {
		ratio := "-"
		if n := r.hits + r.misses; n > 0 {
			ratio = fmt.Sprintf("%.1f%%", 100*r.hits/n)
		}
		fmt.Fprintf(out, "%-20s %6d %8s %6s %6s %6s %6s %13s %11s %5d %8s\n", r.phase, r.calls, r.wall.Round(100*time.Millisecond),
			mib(r.rss), mib(r.hwm), mib(r.heap), mib(r.live), mib(r.cache)+" / "+mib(r.cacheBudget), mib(r.blocks)+" / "+mib(r.blocksBudget), r.open, ratio)
	}
	var tools []string
	w.byTool.Range(func(k, v any) bool {
		tools = append(tools, fmt.Sprintf("%s %d", k, v.(*atomic.Int64).Load()))
		return true
	})
	fmt.Fprintf(out, "\nMiB; RSS and HWM are the server's VmRSS and VmHWM; heap is go_memstats_heap_alloc_bytes (garbage not yet swept included), live go_gc_heap_live_bytes (marked by the last collection); caches are held / budget (cairn_cache_bytes); obj hits is the engine's object-cache hit ratio since the start\n")
	slices.Sort(tools)
	fmt.Fprintf(out, "%d files per agent, %d calls in all: %s; %d list pages refused ReadFenceChanged (a put moved the workbench)\n", files, w.calls.Load(), strings.Join(tools, ", "), w.fenced.Load())
	hwm := rows[len(rows)-1].hwm
	verdict := "within"
	if hwm > rssBound {
		verdict = "OVER"
	}
	fmt.Fprintf(out, "peak RSS %s MiB: %s the bound of %s MiB (the deployment manifests' memory limit)\n", mib(hwm), verdict, mib(rssBound))
}

// scrapeLabelled reads /metrics into samples keyed by name and labels as
// written (`cairn_cache_bytes{cache="engine"}`).
func scrapeLabelled(client *http.Client, base string) (map[string]float64, error) {
	resp, err := client.Get(base + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	m := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		i := strings.LastIndexByte(line, ' ')
		if i < 0 || strings.HasPrefix(line, "#") {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			m[line[:i]] = v
		}
	}
	return m, sc.Err()
}
