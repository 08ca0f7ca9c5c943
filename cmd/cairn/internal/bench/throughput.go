package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/workbench"
)

// outcome is one offered put of an open-loop run.
type outcome struct {
	replica int
	path    string
	ok      bool
	// unfinished: still running when the drain ended, then cancelled.
	unfinished bool
	code       string
	latency    time.Duration // from the scheduled send
}

// throughput offers cfg.Rate put_file calls a second in total, spread
// evenly over replicas Services sharing the store, for cfg.Duration (an
// open loop: a call is sent on schedule whether or not earlier ones have
// returned), then waits up to cfg.Drain for the calls still running.
// Each Service group-commits with MinCommitInterval set to the write
// limit's window. Afterwards a separate replica, without latency, checks
// that every acknowledged file exists once (generation 1): an
// acknowledged file missing is lost, any other generation duplicated.
func (r *sizeRun) throughput(ctx context.Context, name string, replicas int) ([]Row, error) {
	cfg := r.cfg
	var interval time.Duration
	if cfg.WriteRate > 0 {
		interval = time.Duration(float64(time.Second) / cfg.WriteRate)
	}
	reps := make([]*replica, replicas)
	for i := range reps {
		rep, _, err := r.st.open(ctx, workbench.Options{Engine: head.Options{MinCommitInterval: interval}})
		if err != nil {
			return nil, err
		}
		defer rep.Close()
		if _, err := call(ctx, rep.svc, "workbench_stat", map[string]any{"id": WorkbenchID}); err != nil {
			return nil, err
		}
		reps[i] = rep
	}
	if err := pace(ctx, cfg); err != nil {
		return nil, err
	}
	for _, rep := range reps {
		rep.cnt.Reset()
	}
	start, cpu := time.Now(), processCPU()
	outs, err := r.offer(ctx, name, len(reps), start, func(ctx context.Context, ri int, path, text string) error {
		_, err := reps[ri].svc.PutFile(ctx, workbench.PutFileInput{ID: WorkbenchID, Section: section, Path: path, Text: &text})
		return err
	})
	if err != nil {
		return nil, err
	}
	var row Row
	for _, rep := range reps {
		row.add(rep.cnt.Snapshot())
	}
	row.Scenario, row.Wall, row.CPU, row.HeadBytes = name, time.Since(start), processCPU()-cpu, r.st.headBytes(ctx)
	lost, dup, landed, err := r.check(ctx, outs)
	if err != nil {
		return nil, err
	}
	t := tallyOutcomes(outs, cfg, replicas)
	t.record(&row, cfg)
	row.metric("lost", float64(lost))
	row.metric("duplicated", float64(dup))
	row.note("lost %d, duplicated %d", lost, dup)
	if landed > 0 {
		row.note("%d failed calls landed anyway", landed)
	}
	t.recordErrors(&row, replicas)
	return []Row{row}, nil
}

// offer makes cfg.Rate put calls a second from start, each on its
// schedule whether or not earlier ones have returned, to replicas 0 to
// replicas-1 in turn, then waits up to cfg.Drain for the calls still
// running and cancels the rest.
func (r *sizeRun) offer(ctx context.Context, name string, replicas int, start time.Time,
	put func(ctx context.Context, replica int, path, text string) error) ([]outcome, error) {
	cfg := r.cfg
	offered := max(1, int(cfg.Rate*cfg.Duration.Seconds()))
	body := r.sh.text(0)
	outs := make([]outcome, offered)
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for i := range offered {
		at := start.Add(time.Duration(float64(i) / cfg.Rate * float64(time.Second)))
		if d := time.Until(at); d > 0 {
			select {
			case <-time.After(d):
			case <-ctx.Done():
				cancel()
				wg.Wait()
				return nil, ctx.Err()
			}
		}
		ri := i % replicas
		path := fmt.Sprintf("%s/r%d/p%06d.txt", name, ri, i)
		wg.Go(func() {
			err := put(runCtx, ri, path, body)
			o := outcome{replica: ri, path: path, ok: err == nil, latency: time.Since(at)}
			if err != nil {
				o.unfinished = runCtx.Err() != nil
				o.code = errorCode(err)
			}
			outs[i] = o
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(cfg.Drain):
		cancel()
		<-done
	}
	return outs, nil
}

// throughputTally is what the outcomes of an open-loop run add up to.
type throughputTally struct {
	offered, acked, failed, unfinished int
	rate                               float64 // acknowledged per second over the run: first send to last acknowledgement
	p50, p99                           time.Duration
	share                              []int // acknowledged per replica
	codes                              map[string]int
}

// tallyOutcomes adds up outs, sent at cfg.Rate from the run's start.
func tallyOutcomes(outs []outcome, cfg Config, replicas int) throughputTally {
	t := throughputTally{offered: len(outs), share: make([]int, replicas), codes: map[string]int{}}
	sentAt := func(i int) time.Duration { return time.Duration(float64(i) / cfg.Rate * float64(time.Second)) }
	var lat []time.Duration
	var last time.Duration // the span runs from the first send to the last acknowledgement
	for i, o := range outs {
		switch {
		case o.ok:
			t.acked++
			t.share[o.replica]++
			lat = append(lat, o.latency)
			last = max(last, sentAt(i)+o.latency)
		case o.unfinished:
			t.unfinished++
		default:
			t.failed++
			t.codes[o.code]++
		}
	}
	slices.Sort(lat)
	if last > 0 {
		t.rate = float64(t.acked) / last.Seconds()
	}
	t.p50, t.p99 = percentile(lat, 0.50), percentile(lat, 0.99)
	return t
}

// record writes the tally's metrics and its summary note to row.
func (t throughputTally) record(row *Row, cfg Config) {
	row.metric("offered", float64(t.offered))
	row.metric("acked", float64(t.acked))
	row.metric("acked_per_s", t.rate)
	row.metric("p50_s", t.p50.Seconds())
	row.metric("p99_s", t.p99.Seconds())
	row.metric("failed", float64(t.failed))
	row.metric("unfinished", float64(t.unfinished))
	// Both latencies in milliseconds, however long: a reader (or a
	// filter) comparing runs must not meet 9999.9ms in one and 10.0s in
	// the next.
	row.note("offered %g/s for %s: %d/%d acked, %.1f/s over the run; p50 %.1fms p99 %.1fms; %d failed, %d unfinished after %s drain",
		cfg.Rate, cfg.Duration, t.acked, t.offered, t.rate, msOf(t.p50), msOf(t.p99), t.failed, t.unfinished, cfg.Drain)
}

// recordErrors notes the error codes met and, with several replicas,
// each one's share of the acknowledgements.
func (t throughputTally) recordErrors(row *Row, replicas int) {
	if len(t.codes) > 0 {
		var cs []string
		for c, n := range t.codes {
			cs = append(cs, fmt.Sprintf("%s×%d", c, n))
		}
		slices.Sort(cs)
		row.note("errors %s", strings.Join(cs, " "))
	}
	if replicas < 2 {
		return
	}
	var ss []string
	least := 1.0
	for i, n := range t.share {
		f := 0.0
		if t.acked > 0 {
			f = float64(n) / float64(t.acked)
		}
		least = min(least, f)
		row.metric(fmt.Sprintf("share_%d", i), f)
		ss = append(ss, fmt.Sprintf("%.0f%%", 100*f))
	}
	row.metric("least_share", least)
	row.note("shares %s", strings.Join(ss, " "))
}

// percentile is the nearest-rank percentile of sorted.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*p+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// check stats every offered path from a new replica without latency:
// acknowledged paths missing are lost, paths at a generation other than
// 1 duplicated, and failed calls whose file exists landed anyway.
func (r *sizeRun) check(ctx context.Context, outs []outcome) (lost, dup, landed int, err error) {
	r.st.sw.bypass.Store(true)
	defer r.st.sw.bypass.Store(false)
	rep, _, err := r.st.open(ctx, workbench.Options{})
	if err != nil {
		return 0, 0, 0, err
	}
	defer rep.Close()
	var mu sync.Mutex
	work := make(chan outcome)
	var wg sync.WaitGroup
	var firstErr error
	for range 16 {
		wg.Go(func() {
			for o := range work {
				in, _ := json.Marshal(map[string]any{"id": WorkbenchID, "section": section, "path": o.path})
				out, ok := rep.svc.Call(ctx, "workbench_stat", in)
				m, derr := decode(out)
				mu.Lock()
				switch {
				case derr != nil:
					firstErr = cmpErr(firstErr, derr)
				case !ok && m["code"] == workbench.CodeNotFound:
					if o.ok {
						lost++
					}
				case !ok:
					firstErr = cmpErr(firstErr, fmt.Errorf("bench: check %s: %s", o.path, out))
				default:
					card, _ := m["card"].(map[string]any)
					if g, _ := card["generation"].(float64); g != 1 {
						dup++
					}
					if !o.ok {
						landed++
					}
				}
				mu.Unlock()
			}
		})
	}
	for _, o := range outs {
		work <- o
	}
	close(work)
	wg.Wait()
	return lost, dup, landed, firstErr
}

func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}
