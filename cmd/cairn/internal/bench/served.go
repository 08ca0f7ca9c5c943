package bench

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/workbench"
)

// ServedScenarios are the scenarios a served run (Config.Served) has:
// the writes, one at a time and in open loop.
func ServedScenarios() []string {
	return []string{PutCommitWarm, PutNewWarm, PutReplaceWarm, Restore, Throughput1, Throughput8}
}

// servedSet is what a served run adds to a size: the GCS emulator in a
// process of its own, the proxy that adds the network and GCS's write
// limit in front of it, and `cairn serve` processes that reach the
// emulator through the proxy. The seeding replica reaches the emulator
// directly.
type servedSet struct {
	cfg     Config
	gcs     *proc
	dir     string // where the emulator keeps its objects, removed by close
	direct  string // gs:// URL of the emulator's bucket
	proxied string // the same bucket through the proxy
	proxy   *gcsProxy
	servers []*server
	client  *http.Client
	// inflight holds a token for each request in flight (maxInflight).
	inflight chan struct{}
}

// maxInflight bounds the requests the clients have in flight to the
// servers at once, as a load balancer's pool would: requests beyond it
// wait in the client, their latency still counted from the moment they
// were offered. Each takes a connection, and without a bound servers
// that fall behind an open loop are sent one a request until the
// bench's own process (clients and the proxy) runs out of file
// descriptors, which stalls the proxy and every server behind it. At
// 1,000 requests a second it is eight seconds of backlog, past any
// latency a row's bounds accept.
const maxInflight = 8192

// server is one `cairn serve` process.
type server struct {
	*proc
	base string // http://host:port
}

// startServed starts the emulator and the proxy, and opens the bucket
// directly for seeding.
func startServed(ctx context.Context, cfg Config) (*servedSet, bucket.Bucket, error) {
	s := &servedSet{cfg: cfg, client: &http.Client{Transport: &http.Transport{
		MaxIdleConnsPerHost: 4096, IdleConnTimeout: 30 * time.Second}},
		inflight: make(chan struct{}, maxInflight)}
	// The emulator keeps objects in files: in memory it finds an object
	// by a scan of all of them, so its requests slow down as the store
	// grows (seeding 10,000 files took minutes, growing with the square).
	// Each write makes a temporary file in $TMPDIR, renamed into place,
	// and syncs it: a directory in memory (/dev/shm), with $TMPDIR beside
	// it, keeps the emulator's own disk out of what is measured (on disk
	// it took most of a core at 230 writes a second).
	dir, err := os.MkdirTemp(cmp.Or(cfg.Dir, memoryDir()), "cairn-bench-gcs-")
	if err != nil {
		return nil, nil, fmt.Errorf("bench: %w", err)
	}
	s.dir = dir
	store, tmp := filepath.Join(dir, "store"), filepath.Join(dir, "tmp")
	for _, d := range []string{store, tmp} {
		if err := os.Mkdir(d, 0o700); err != nil {
			s.close()
			return nil, nil, fmt.Errorf("bench: %w", err)
		}
	}
	gcs, direct, err := startProc(ctx, "cairn fake-gcs", cfg.Binary,
		append([]string{"fake-gcs", "--addr", "127.0.0.1:0", "--dir", store, "--bucket", WorkbenchID}, cfg.EmulatorArgs...),
		[]string{"TMPDIR=" + tmp}, bucketLine)
	if err != nil {
		s.close()
		return nil, nil, err
	}
	s.gcs, s.direct = gcs, direct
	u, err := url.Parse(direct)
	if err != nil {
		s.close()
		return nil, nil, fmt.Errorf("bench: fake-gcs printed %q: %w", direct, err)
	}
	q := u.Query()
	if s.proxy, err = startGCSProxy(q.Get("endpoint"), cfg.RTT, cfg.WriteRate, cfg.Trace); err != nil {
		s.close()
		return nil, nil, err
	}
	q.Set("endpoint", s.proxy.addr)
	u.RawQuery = q.Encode()
	s.proxied = u.String()
	raw, err := bucket.Open(ctx, direct)
	if err != nil {
		s.close()
		return nil, nil, err
	}
	return s, raw, nil
}

// serversFor returns n serve processes, starting those not yet running.
// Each has served a workbench_stat through the proxy before it returns.
func (s *servedSet) serversFor(ctx context.Context, n int) ([]*server, error) {
	for len(s.servers) < n {
		args := []string{"serve", "--addr", "127.0.0.1:0", "--bucket", s.proxied}
		if s.cfg.WriteRate > 0 {
			args = append(args, "--commit-interval", time.Duration(float64(time.Second)/s.cfg.WriteRate).String())
		}
		if s.cfg.CacheBytes > 0 {
			args = append(args, "--cache-mib", strconv.FormatInt(max(1, s.cfg.CacheBytes>>20), 10))
		}
		if s.cfg.ValueFormat != 0 {
			args = append(args, "--value-format", strconv.Itoa(s.cfg.ValueFormat))
		}
		args = append(args, s.cfg.ServeArgs...)
		p, base, err := startProc(ctx, fmt.Sprintf("cairn serve %d", len(s.servers)), s.cfg.Binary, args, nil, servingAddr)
		if err != nil {
			return nil, err
		}
		srv := &server{proc: p, base: base}
		s.servers = append(s.servers, srv)
		if _, err := s.call(ctx, srv, "workbench_stat", map[string]any{"id": WorkbenchID}); err != nil {
			return nil, err
		}
	}
	return s.servers[:n], nil
}

// call posts one tool call to srv and returns its result, or an error
// whose code is the envelope's (a *workbench.Error) when the server
// answered one.
func (s *servedSet) call(ctx context.Context, srv *server, tool string, in map[string]any) (map[string]any, error) {
	body, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost,
		srv.base+"/v1/agents/"+workbench.DefaultAgentID+"/tools/"+tool, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	select {
	case s.inflight <- struct{}{}:
		defer func() { <-s.inflight }()
	case <-ctx.Done():
		return nil, &workbench.Error{Code: "NO_ANSWER", Message: fmt.Sprintf("%s: not sent: %v", tool, ctx.Err()), Cause: ctx.Err()}
	}
	resp, err := s.client.Do(req)
	if err != nil {
		// Connection refused or reset, or the context's end: no answer.
		return nil, &workbench.Error{Code: "NO_ANSWER", Message: fmt.Sprintf("%s: %v", tool, err), Cause: err}
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("bench: %s: %w", tool, err)
	}
	m, err := decode(out)
	if err != nil {
		return nil, fmt.Errorf("bench: %s: HTTP %d: %w", tool, resp.StatusCode, err)
	}
	if st, _ := m["status"].(string); st == "error" || resp.StatusCode != http.StatusOK {
		code, _ := m["code"].(string)
		msg, _ := m["message"].(string)
		if code == "" {
			code = "HTTP_" + strconv.Itoa(resp.StatusCode)
		}
		return nil, &workbench.Error{Code: code, Message: fmt.Sprintf("%s: HTTP %d: %s", tool, resp.StatusCode, msg)}
	}
	return m, nil
}

// putFile writes path through srv.
func (s *servedSet) putFile(ctx context.Context, srv *server, path, text string, replace bool) (uint64, error) {
	m, err := s.call(ctx, srv, "workbench_put_file", map[string]any{"id": WorkbenchID, "section": section,
		"path": path, "text": text, "replace": replace})
	if err != nil {
		return 0, err
	}
	g, _ := m["generation"].(float64)
	return uint64(g), nil
}

// close stops every process and the proxy.
func (s *servedSet) close() error {
	var errs []error
	for _, srv := range s.servers {
		errs = append(errs, srv.stop())
	}
	if s.proxy != nil {
		errs = append(errs, s.proxy.close())
	}
	if s.gcs != nil {
		errs = append(errs, s.gcs.stop())
	}
	if s.dir != "" {
		errs = append(errs, os.RemoveAll(s.dir))
	}
	s.client.CloseIdleConnections()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// servedWindow measures the servers and the proxy over one scenario.
type servedWindow struct {
	set    *servedSet
	before proxyCounts
	cpu    time.Duration // of every server, at the start
	others machineCPU    // of the emulator and of this process, at the start
	start  time.Time
}

// machineCPU is the CPU of the processes beside the servers that share
// the machine in a served run: the emulator, and this one (its clients
// and the proxy).
type machineCPU struct{ emulator, bench time.Duration }

func (s *servedSet) othersCPU() machineCPU {
	return machineCPU{emulator: s.gcs.cpu(), bench: processCPU()}
}

func (s *servedSet) window() servedWindow {
	return servedWindow{set: s, before: s.proxy.counts(), cpu: s.serversCPU(), others: s.othersCPU(), start: time.Now()}
}

// noteOthers notes the CPU the emulator and this process used since the
// window began, beside the servers' (the row's CPU): on a small machine
// they compete for the same cores.
func (w servedWindow) noteOthers(row *Row) {
	now := w.set.othersCPU()
	em, be := now.emulator-w.others.emulator, now.bench-w.others.bench
	row.metric("emulator_cpu_seconds", em.Seconds())
	row.metric("bench_cpu_seconds", be.Seconds())
	row.note("CPU beside the servers': emulator %s, bench process (clients and proxy) %s", em.Round(10*time.Millisecond), be.Round(10*time.Millisecond))
}

// row is the window's counts so far: the proxy's requests, rounds and
// bytes, and the servers' CPU.
func (w servedWindow) row(name string) Row {
	c := w.set.proxy.counts().since(w.before)
	return Row{Scenario: name, Requests: c.requests, Rounds: c.rounds, BytesRead: c.read, BytesWritten: c.written,
		Wall: time.Since(w.start), CPU: w.set.serversCPU() - w.cpu}
}

func (s *servedSet) serversCPU() time.Duration {
	var t time.Duration
	for _, srv := range s.servers {
		t += srv.cpu()
	}
	return t
}

// noteServers notes what the servers hold in memory, and any that exited.
func (s *servedSet) noteServers(row *Row, n int) error {
	var peak int64
	var now []string
	for _, srv := range s.servers[:n] {
		if err := srv.alive(); err != nil {
			return err
		}
		r, p := srv.rss()
		peak = max(peak, p)
		now = append(now, size(r))
	}
	row.metric("server_rss_peak_bytes", float64(peak))
	row.note("server RSS %s, peak %s", strings.Join(now, " "), size(peak))
	return nil
}

// servedPuts measures PutSamples puts through the first server, one at
// a time, as (*sizeRun).puts does in process.
func (r *sizeRun) servedPuts(ctx context.Context, name string, path func(i int) string, replace bool) (total Row, took []time.Duration, gen uint64, err error) {
	srvs, err := r.served.serversFor(ctx, 1)
	if err != nil {
		return Row{}, nil, 0, err
	}
	for i := range r.cfg.PutSamples {
		if err := pace(ctx, r.cfg); err != nil {
			return Row{}, nil, 0, err
		}
		w := r.served.window()
		g, err := r.served.putFile(ctx, srvs[0], path(i), r.sh.putBody(i), replace)
		if err != nil {
			return Row{}, nil, 0, putError(err)
		}
		gen = max(gen, g)
		row := w.row(name)
		total.plus(row)
		took = append(took, row.Wall)
	}
	total.HeadBytes = r.st.headBytes(ctx)
	slices.Sort(took)
	return total, took, gen, nil
}

func (r *sizeRun) servedPutNew(ctx context.Context) ([]Row, error) {
	n := r.cfg.PutSamples
	total, took, _, err := r.servedPuts(ctx, PutNewWarm, func(i int) string { return fmt.Sprintf("new/d%d/put-new.txt", i) }, false)
	if err != nil {
		return nil, err
	}
	row := total.mean(PutNewWarm, n)
	row.metric("puts", float64(n))
	row.metric("p50_s", percentile(took, 0.50).Seconds())
	row.metric("max_s", took[n-1].Seconds())
	row.note("through cairn serve: mean of %d puts of new files, one at a time, folds and background work included; p50 %s, slowest %s",
		n, dur(percentile(took, 0.50)), dur(took[n-1]))
	return []Row{row}, r.served.noteServers(&row, 1)
}

func (r *sizeRun) servedPutReplace(ctx context.Context) ([]Row, error) {
	n := r.cfg.PutSamples
	total, took, gen, err := r.servedPuts(ctx, PutReplaceWarm, func(i int) string { return r.sh.someFile(1 + i) }, true)
	if err != nil {
		return nil, err
	}
	row := total.mean(PutReplaceWarm, n)
	row.metric("puts", float64(n))
	row.metric("p50_s", percentile(took, 0.50).Seconds())
	row.note("through cairn serve: mean of %d puts replacing a file, one at a time, folds and background work included; p50 %s; generation up to %d",
		n, dur(percentile(took, 0.50)), gen)
	return []Row{row}, r.served.noteServers(&row, 1)
}

// servedPutCommit is putCommit through the first server.
func (r *sizeRun) servedPutCommit(ctx context.Context) ([]Row, error) {
	srvs, err := r.served.serversFor(ctx, 1)
	if err != nil {
		return nil, err
	}
	commit := func(i int) error {
		res, err := r.served.call(ctx, srvs[0], "workbench_commit", map[string]any{"id": WorkbenchID,
			"manifest": map[string]any{"round": i}, "content_digest_uri": "sha256:" + strings.Repeat("0", 63) + "1", "replace": i > 0})
		if err == nil {
			r.committed, _ = res["commit_identity"].(string)
		}
		return err
	}
	_, _, row, err := r.pairs(ctx, commit, func(i int) (Row, Row, error) {
		w := r.served.window()
		if _, err := r.served.putFile(ctx, srvs[0], r.sh.someFile(1+i), r.sh.putBody(i), true); err != nil {
			return Row{}, Row{}, putError(err)
		}
		cw := r.served.window()
		if err := commit(i); err != nil {
			return Row{}, Row{}, err
		}
		alone := cw.row(PutCommitWarm)
		pair := w.row(PutCommitWarm)
		pair.HeadBytes = r.st.headBytes(ctx)
		return pair, alone, nil
	}, "through cairn serve, background work included: ")
	if err != nil {
		return nil, err
	}
	return []Row{row}, r.served.noteServers(&row, 1)
}

// servedRestore is restore through the first server: the workbench's
// last commit (one made first, unmeasured, if no scenario made one)
// restored into a new workbench by one workbench_restore request.
func (r *sizeRun) servedRestore(ctx context.Context) ([]Row, error) {
	srvs, err := r.served.serversFor(ctx, 1)
	if err != nil {
		return nil, err
	}
	if r.committed == "" {
		res, err := r.served.call(ctx, srvs[0], "workbench_commit", map[string]any{"id": WorkbenchID,
			"manifest": map[string]any{"round": 0}, "content_digest_uri": "sha256:" + strings.Repeat("0", 63) + "1", "replace": true})
		if err != nil {
			return nil, err
		}
		r.committed, _ = res["commit_identity"].(string)
	}
	if err := pace(ctx, r.cfg); err != nil {
		return nil, err
	}
	w := r.served.window()
	if _, err := r.served.call(ctx, srvs[0], "workbench_restore", map[string]any{"id": WorkbenchID,
		"destination_id": WorkbenchID + "-restored", "at_commit": r.committed}); err != nil {
		return nil, fmt.Errorf("bench: workbench_restore: %w", err)
	}
	row := w.row(Restore)
	row.HeadBytes = r.st.headBytes(ctx)
	row.metric("restore_s", row.Wall.Seconds())
	row.note("through cairn serve: one workbench_restore of the last commit into a new workbench, %d requests in %d rounds, %s written",
		row.Requests, row.Rounds, size(row.BytesWritten))
	return []Row{row}, r.served.noteServers(&row, 1)
}

// servedThroughput is throughput through n serve processes: the same
// open loop, over HTTP, with the same check of what landed. The row's
// counts are the proxy's (every server's requests), its CPU the
// servers'.
func (r *sizeRun) servedThroughput(ctx context.Context, name string, n int) ([]Row, error) {
	srvs, err := r.served.serversFor(ctx, n)
	if err != nil {
		return nil, err
	}
	if err := pace(ctx, r.cfg); err != nil {
		return nil, err
	}
	engine0, err := r.served.engineCounts(ctx, srvs)
	if err != nil {
		return nil, err
	}
	w := r.served.window()
	outs, err := r.offer(ctx, name, n, w.start, func(ctx context.Context, ri int, path, text string) error {
		_, err := r.served.putFile(ctx, srvs[ri], path, text, false)
		return err
	})
	if err != nil {
		return nil, err
	}
	row := w.row(name)
	w.noteOthers(&row)
	row.HeadBytes = r.st.headBytes(ctx)
	lost, dup, landed, err := r.check(ctx, outs)
	if err != nil {
		return nil, err
	}
	t := tallyOutcomes(outs, r.cfg, n)
	t.record(&row, r.cfg)
	row.metric("lost", float64(lost))
	row.metric("duplicated", float64(dup))
	row.note("through %d cairn serve process(es)", n)
	row.note("lost %d, duplicated %d", lost, dup)
	if landed > 0 {
		row.note("%d failed calls landed anyway", landed)
	}
	c := r.served.proxy.counts().since(w.before)
	if t.acked > 0 {
		per := float64(c.requests) / float64(t.acked)
		row.metric("requests_per_ack", per)
		row.note("%.2f requests and %.2f writes per acknowledged put, %d writes throttled, %d lists, %d deletes",
			per, float64(c.writes)/float64(t.acked), c.throttled, c.lists, c.deletes)
	}
	t.recordErrors(&row, n)
	engine1, err := r.served.engineCounts(ctx, srvs)
	if err != nil {
		return nil, err
	}
	noteEngine(&row, engine0, engine1)
	return []Row{row}, r.served.noteServers(&row, n)
}

// cpu returns the process's user and system CPU time so far, from /proc
// (0 where there is none). The kernel counts it in ticks of 1/100 s.
func (p *proc) cpu() time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	// The command name, in parentheses, may hold spaces: count fields
	// after its closing parenthesis (state is field 3; utime and stime
	// are 14 and 15).
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	s, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return time.Duration(u+s) * 10 * time.Millisecond
}

// memoryDir is /dev/shm where it is a directory, else the temporary one.
func memoryDir() string {
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		return "/dev/shm"
	}
	return os.TempDir()
}

// stored counts the emulator's objects and their bytes from its files
// (one an object; the bucket's own metadata sits beside its directory).
func (s *servedSet) stored() (int, int64, error) {
	var n int
	var size int64
	err := filepath.WalkDir(filepath.Join(s.dir, "store", WorkbenchID), func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		n++
		size += fi.Size()
		return nil
	})
	return n, size, err
}

// engineCounters are the engine counters of the servers' /metrics that
// a throughput row reports (as a difference over the run): what the
// commits cost beside the puts, and how the servers divided the work of
// carrying the head.
var engineCounters = []string{
	"cairn_engine_head_writes_total",
	"cairn_engine_cas_conflicts_total",
	"cairn_engine_folds_total",
	"cairn_engine_folds_installed_total",
	"cairn_engine_folds_dropped_total",
	"cairn_engine_merges_total",
	"cairn_engine_intents_published_total",
	"cairn_engine_intents_carried_total",
	"cairn_engine_carrier_defers_total",
	"cairn_engine_carrier_unheld_total",
	"cairn_engine_carrier_takeovers_total",
}

// engineCounts reads engineCounters from each of srvs' /metrics.
func (s *servedSet) engineCounts(ctx context.Context, srvs []*server) ([]map[string]float64, error) {
	var all []map[string]float64
	for _, srv := range srvs {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.base+"/metrics", nil)
		if err != nil {
			return nil, err
		}
		resp, err := s.client.Do(req)
		if err != nil {
			return nil, fmt.Errorf("bench: metrics of %s: %w", srv.name, err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("bench: metrics of %s: %w", srv.name, err)
		}
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("bench: metrics of %s: %s", srv.name, resp.Status)
		}
		m := map[string]float64{}
		for line := range strings.Lines(string(body)) {
			name, value, ok := strings.Cut(strings.TrimSpace(line), " ")
			if !ok || !slices.Contains(engineCounters, name) {
				continue
			}
			v, err := strconv.ParseFloat(value, 64)
			if err != nil {
				return nil, fmt.Errorf("bench: metrics of %s: %s: %w", srv.name, name, err)
			}
			m[name] = v
		}
		all = append(all, m)
	}
	return all, nil
}

// noteEngine notes the engine counters' growth from before to after,
// summed over the servers, and with more than one server each one's
// share of the head writes and of the carrying.
func noteEngine(row *Row, before, after []map[string]float64) {
	each := func(name string) []float64 {
		v := make([]float64, len(after))
		for i := range after {
			v[i] = after[i]["cairn_engine_"+name+"_total"] - before[i]["cairn_engine_"+name+"_total"]
		}
		return v
	}
	d := func(name string) float64 {
		var sum float64
		for _, v := range each(name) {
			sum += v
		}
		return sum
	}
	row.metric("head_writes", d("head_writes"))
	row.metric("folds", d("folds"))
	row.metric("folds_dropped", d("folds_dropped"))
	row.note("servers' engines: %.0f head writes, %.0f refused (head moved), %.0f folds (%.0f prepared and installed), %.0f prepared folds dropped, %.0f merges",
		d("head_writes"), d("cas_conflicts"), d("folds"), d("folds_installed"), d("folds_dropped"), d("merges"))
	if len(after) < 2 {
		return
	}
	list := func(v []float64) string {
		f := make([]string, len(v))
		for i, x := range v {
			f[i] = strconv.FormatFloat(x, 'f', 0, 64)
		}
		return strings.Join(f, " ")
	}
	row.note("by server: head writes %s; intents published %s, carried %s; attempts left to the carrier %s, competing after too many %s, taking over a silent one %s",
		list(each("head_writes")), list(each("intents_published")), list(each("intents_carried")),
		list(each("carrier_defers")), list(each("carrier_unheld")), list(each("carrier_takeovers")))
}
