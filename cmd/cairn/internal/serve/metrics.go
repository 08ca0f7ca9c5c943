package serve

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cairnstore/cairn/bucket/counting"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/workbench"
)

// latencyBuckets are the upper bounds, in seconds, of the request latency
// histogram: from a warm read to a write that waits out a throttled head.
var latencyBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

// series is one (tool, status) pair's counts.
type series struct {
	count   int64
	sum     float64 // seconds
	buckets []int64 // cumulative counts are computed when written
}

type seriesKey struct {
	tool   string
	status int
}

// metrics are the server's own counters. The bucket's and the engine's
// are read when /metrics is served. The text exposition is written by
// hand: a few counters and one histogram do not need a client library.
type metrics struct {
	mu       sync.Mutex
	requests map[seriesKey]*series
	replays  int64
	busyN    int64 // requests refused ServerBusy
}

func newMetrics() *metrics {
	return &metrics{requests: map[seriesKey]*series{}}
}

// request records one finished HTTP request. tool is "" for the routes
// that are not tools.
func (m *metrics) request(tool string, status int, d time.Duration) {
	if _, known := workbench.Tool(tool); tool != "" && !known {
		tool = "unknown" // a client's typo must not mint a series
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	k := seriesKey{tool: tool, status: status}
	s := m.requests[k]
	if s == nil {
		s = &series{buckets: make([]int64, len(latencyBuckets))}
		m.requests[k] = s
	}
	s.count++
	sec := d.Seconds()
	s.sum += sec
	for i, b := range latencyBuckets {
		if sec <= b {
			s.buckets[i]++
			break
		}
	}
}

// busy counts a request refused for want of room in the body or answer
// budget.
func (m *metrics) busy() {
	m.mu.Lock()
	m.busyN++
	m.mu.Unlock()
}

func (m *metrics) replayed() {
	m.mu.Lock()
	m.replays++
	m.mu.Unlock()
}

// expo writes the Prometheus text exposition format (version 0.0.4).
type expo struct {
	w   io.Writer
	err error
}

func (e *expo) head(name, typ, help string) {
	e.printf("# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
}

func (e *expo) sample(name string, labels []string, v float64) {
	e.printf("%s%s %s\n", name, labelText(labels), formatFloat(v))
}

func (e *expo) printf(format string, a ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, a...)
	}
}

// labelText renders name/value pairs as {a="1",b="2"}, values escaped as
// the format requires.
func labelText(kv []string) string {
	if len(kv) == 0 {
		return ""
	}
	var sb strings.Builder
	sb.WriteByte('{')
	for i := 0; i+1 < len(kv); i += 2 {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(kv[i])
		sb.WriteString(`="`)
		sb.WriteString(strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(kv[i+1]))
		sb.WriteByte('"')
	}
	sb.WriteByte('}')
	return sb.String()
}

func formatFloat(v float64) string {
	if math.IsInf(v, 1) {
		return "+Inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// serveMetrics writes every metric of the server, its bucket and its open
// engines.
func (s *Server) serveMetrics(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	e := &expo{w: w}
	s.writeRequestMetrics(e)
	s.writeBucketMetrics(e)
	s.writeEngineMetrics(e)
	s.writeProcessMetrics(e)
	if s.opts.ExtraMetrics != nil {
		for _, m := range s.opts.ExtraMetrics() {
			e.head(m.Name, m.Type, m.Help)
			e.sample(m.Name, nil, m.Value)
		}
	}
}

// A Sample is one series without labels, for Options.ExtraMetrics.
type Sample struct {
	Name, Type, Help string // Type: "counter" or "gauge"
	Value            float64
}

func (s *Server) writeRequestMetrics(e *expo) {
	m := s.metrics
	m.mu.Lock()
	defer m.mu.Unlock()
	keys := make([]seriesKey, 0, len(m.requests))
	for k := range m.requests {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b seriesKey) int {
		if c := strings.Compare(a.tool, b.tool); c != 0 {
			return c
		}
		return a.status - b.status
	})
	e.head("cairn_http_requests_total", "counter", "HTTP requests served, by tool (empty for other routes) and status.")
	for _, k := range keys {
		e.sample("cairn_http_requests_total", []string{"tool", k.tool, "status", strconv.Itoa(k.status)}, float64(m.requests[k].count))
	}
	e.head("cairn_http_request_duration_seconds", "histogram", "Time from a request's arrival to its last byte written, by tool and status.")
	for _, k := range keys {
		s := m.requests[k]
		labels := []string{"tool", k.tool, "status", strconv.Itoa(k.status)}
		var cum int64
		for i, b := range latencyBuckets {
			cum += s.buckets[i]
			e.sample("cairn_http_request_duration_seconds_bucket", append(slices.Clone(labels), "le", formatFloat(b)), float64(cum))
		}
		e.sample("cairn_http_request_duration_seconds_bucket", append(slices.Clone(labels), "le", "+Inf"), float64(s.count))
		e.sample("cairn_http_request_duration_seconds_sum", labels, s.sum)
		e.sample("cairn_http_request_duration_seconds_count", labels, float64(s.count))
	}
	e.head("cairn_idempotent_replays_total", "counter", "Requests answered with the result stored for their Idempotency-Key.")
	e.sample("cairn_idempotent_replays_total", nil, float64(m.replays))
	e.head("cairn_server_busy_total", "counter", "Requests refused with ServerBusy: no room in the server's body or answer budget.")
	e.sample("cairn_server_busy_total", nil, float64(m.busyN))
	e.head("cairn_answer_bytes_in_flight", "gauge", "Bytes of large answers being written now, charged to the answer budget.")
	e.sample("cairn_answer_bytes_in_flight", nil, float64(s.answering.Load()))
	e.head("cairn_request_body_bytes_held", "gauge", "Bytes of request bodies charged to the body budget now.")
	e.sample("cairn_request_body_bytes_held", nil, float64(s.bodies.held.Load()))
	e.head("cairn_request_bodies_waiting", "gauge", "Request bodies waiting for room in the body budget now.")
	e.sample("cairn_request_bodies_waiting", nil, float64(s.bodies.waiting.Load()))
	e.head("cairn_read_budget_bytes_held", "gauge", "Bytes whole-body reads hold of the read budget now, from before the body is read until the answer is written.")
	e.sample("cairn_read_budget_bytes_held", nil, float64(s.opts.Workbench.ReadBudget.Held()))
}

func (s *Server) writeBucketMetrics(e *expo) {
	st := s.counted.Snapshot()
	ops := []struct {
		name string
		o    counting.OpStats
	}{{"get", st.Get}, {"stat", st.Stat}, {"put", st.Put}, {"delete", st.Delete}, {"list", st.List}}
	e.head("cairn_bucket_requests_total", "counter", "Requests made to the bucket, by operation.")
	for _, op := range ops {
		e.sample("cairn_bucket_requests_total", []string{"op", op.name}, float64(op.o.Requests))
	}
	e.head("cairn_bucket_request_errors_total", "counter", "Bucket requests that returned an error (a lost conditional write included), by operation.")
	for _, op := range ops {
		e.sample("cairn_bucket_request_errors_total", []string{"op", op.name}, float64(op.o.Errors))
	}
	e.head("cairn_bucket_read_bytes_total", "counter", "Body bytes read from the bucket.")
	e.sample("cairn_bucket_read_bytes_total", nil, float64(st.Total().BytesRead))
	e.head("cairn_bucket_written_bytes_total", "counter", "Body bytes written to the bucket.")
	e.sample("cairn_bucket_written_bytes_total", nil, float64(st.Total().BytesWritten))
}

func (s *Server) writeEngineMetrics(e *expo) {
	p := s.pool
	p.mu.Lock()
	open := len(p.agents)
	tot := p.gone
	for _, a := range p.agents {
		pub, car := a.svc.Store().IntentStats()
		tot.published += pub
		tot.carried += car
		addCommit(&tot.commit, a.svc.Store().CommitStats())
	}
	p.mu.Unlock()

	// One set of caches serves every agent (Options.Workbench.Engine.Caches).
	objects, tables, rootsStats := s.opts.Workbench.Engine.Caches.Stats()
	e.head("cairn_open_agents", "gauge", "Agent roots with an open engine.")
	e.sample("cairn_open_agents", nil, float64(open))
	caches := []struct {
		name string
		c    shards.CacheStats
	}{{"objects", objects}, {"tables", tables}, {"roots", rootsStats}}
	e.head("cairn_engine_cache_hits_total", "counter", "Engine cache lookups that found the decoded object, by cache.")
	for _, c := range caches {
		e.sample("cairn_engine_cache_hits_total", []string{"cache", c.name}, float64(c.c.Hits))
	}
	e.head("cairn_engine_cache_misses_total", "counter", "Engine cache lookups that had to read the bucket, by cache.")
	for _, c := range caches {
		e.sample("cairn_engine_cache_misses_total", []string{"cache", c.name}, float64(c.c.Misses))
	}
	e.head("cairn_engine_cache_hit_ratio", "gauge", "Hits over lookups of the engine caches since the server started, by cache.")
	for _, c := range caches {
		ratio := 0.0
		if n := c.c.Hits + c.c.Misses; n > 0 {
			ratio = float64(c.c.Hits) / float64(n)
		}
		e.sample("cairn_engine_cache_hit_ratio", []string{"cache", c.name}, ratio)
	}
	// What the shared caches hold against their budgets: with many agents
	// open, the figure that says the process stays within --cache-mib.
	eng, blocks := s.opts.Workbench.Engine.Caches, s.opts.Workbench.BlockCache.Stats()
	e.head("cairn_cache_bytes", "gauge", "Bytes the shared caches hold now, by their size functions: engine (decoded shards, pages, indexes, deltas, tables and roots) and blocks (small body blocks).")
	e.sample("cairn_cache_bytes", []string{"cache", "engine"}, float64(eng.Bytes()))
	e.sample("cairn_cache_bytes", []string{"cache", "blocks"}, float64(blocks.Bytes))
	e.head("cairn_cache_budget_bytes", "gauge", "The most each shared cache may hold.")
	e.sample("cairn_cache_budget_bytes", []string{"cache", "engine"}, float64(eng.Budget()))
	e.sample("cairn_cache_budget_bytes", []string{"cache", "blocks"}, float64(blocks.Budget))
	c := tot.commit
	for _, m := range []struct {
		name, help string
		v          int64
	}{
		{"cairn_engine_commit_retries_total", "Attempts of a group commit after its first (a lost race, a throttled or failed write).", c.Retries},
		{"cairn_engine_head_writes_total", "Head writes that landed.", c.Landed},
		{"cairn_engine_folds_total", "Landed head writes that folded the deltas into the base (new tables).", c.Folds},
		{"cairn_engine_merges_total", "Landed head writes that merged the newer deltas into one, leaving the base alone.", c.Merges},
		{"cairn_engine_folds_installed_total", "Folds into the base prepared beside the commits and installed by one (counted in folds too).", c.Installed},
		{"cairn_engine_folds_dropped_total", "Folds prepared beside the commits that no commit could install (the base changed, or they grew too old).", c.Dropped},
		{"cairn_engine_cas_conflicts_total", "Conditional head writes refused because another writer moved the head.", c.CASConflicts},
		{"cairn_engine_head_reads_total", "Head reads made.", c.HeadReads},
		{"cairn_engine_head_reads_coalesced_total", "Pins answered by a head read another Pin had started: the head reads coalescing saved.", c.PinsCoalesced},
		{"cairn_engine_carrier_defers_total", "Attempts that left their commands to the replica carrying the head, which applies their intents.", c.Deferred},
		{"cairn_engine_carrier_unheld_total", "Attempts that competed for the head while another replica carried it, their commands having waited for it too often.", c.Unheld},
		{"cairn_engine_carrier_takeovers_total", "Attempts that carried the head after the replica carrying it fell silent.", c.TakenOver},
	} {
		e.head(m.name, "counter", m.help)
		e.sample(m.name, nil, float64(m.v))
	}
	e.head("cairn_engine_group_commit_size", "histogram", "Commands per group commit (one head write shared by a batch).")
	var cum int64
	for i, bound := range head.BatchSizeBounds[:len(head.BatchSizeBounds)-1] {
		cum += c.BatchSizes[i]
		e.sample("cairn_engine_group_commit_size_bucket", []string{"le", strconv.Itoa(bound)}, float64(cum))
	}
	e.sample("cairn_engine_group_commit_size_bucket", []string{"le", "+Inf"}, float64(c.Batches))
	e.sample("cairn_engine_group_commit_size_sum", nil, float64(c.Commands))
	e.sample("cairn_engine_group_commit_size_count", nil, float64(c.Batches))
	e.head("cairn_engine_intents_published_total", "counter", "Intents the engines published to share a contended head.")
	e.sample("cairn_engine_intents_published_total", nil, float64(tot.published))
	e.head("cairn_engine_intents_carried_total", "counter", "Other replicas' commands the engines' commits applied.")
	e.sample("cairn_engine_intents_carried_total", nil, float64(tot.carried))
}
