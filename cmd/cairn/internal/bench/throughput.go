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
	offered := max(1, int(cfg.Rate*cfg.Duration.Seconds()))
	body := seedText(0)
	outs := make([]outcome, offered)
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	start, cpu := time.Now(), processCPU()
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
			in, _ := json.Marshal(map[string]any{"id": WorkbenchID, "section": section, "path": path, "text": body})
			out, ok := reps[ri].svc.Call(runCtx, "workbench_put_file", in)
			o := outcome{replica: ri, path: path, ok: ok, latency: time.Since(at)}
			if !ok {
				o.unfinished = runCtx.Err() != nil
				if m, err := decode(out); err == nil {
					o.code, _ = m["code"].(string)
				}
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
	wall := time.Since(start)

	var row Row
	for _, rep := range reps {
		row.add(rep.cnt.Snapshot())
	}
	row.Scenario, row.Wall, row.CPU, row.HeadBytes = name, wall, processCPU()-cpu, r.st.headBytes(ctx)

	var lat []time.Duration
	var last time.Duration
	acked, failed, unfinished := 0, 0, 0
	share := make([]int, replicas)
	codes := map[string]int{}
	for _, o := range outs {
		switch {
		case o.ok:
			acked++
			share[o.replica]++
			lat = append(lat, o.latency)
		case o.unfinished:
			unfinished++
		default:
			failed++
			codes[o.code]++
		}
	}
	// The span runs from the first send to the last acknowledgement.
	for i, o := range outs {
		if o.ok {
			sent := time.Duration(float64(i) / cfg.Rate * float64(time.Second))
			last = max(last, sent+o.latency)
		}
	}
	slices.Sort(lat)
	rate := 0.0
	if last > 0 {
		rate = float64(acked) / last.Seconds()
	}
	p50, p99 := percentile(lat, 0.50), percentile(lat, 0.99)
	// The steady rate counts the acknowledgements of the middle half of
	// the offered window, shifted by the median latency: in a steady
	// state it is the rate the shard sustains, free of the ramp at the
	// start and the drain at the end that the span's rate includes.
	steady := 0.0
	if cfg.Duration > 0 {
		from, to := cfg.Duration/4+p50, 3*cfg.Duration/4+p50
		n := 0
		for i, o := range outs {
			if at := time.Duration(float64(i)/cfg.Rate*float64(time.Second)) + o.latency; o.ok && at >= from && at < to {
				n++
			}
		}
		steady = float64(n) / (to - from).Seconds()
	}
	lost, dup, landed, err := r.check(ctx, outs)
	if err != nil {
		return nil, err
	}
	row.metric("offered", float64(offered))
	row.metric("acked", float64(acked))
	row.metric("acked_per_s", rate)
	row.metric("steady_per_s", steady)
	row.metric("p50_s", p50.Seconds())
	row.metric("p99_s", p99.Seconds())
	row.metric("failed", float64(failed))
	row.metric("unfinished", float64(unfinished))
	row.metric("lost", float64(lost))
	row.metric("duplicated", float64(dup))
	row.note("offered %g/s for %s: %d/%d acked, %.1f/s, steady %.1f/s; p50 %s p99 %s; %d failed, %d unfinished after %s drain; lost %d, duplicated %d",
		cfg.Rate, cfg.Duration, acked, offered, rate, steady, dur(p50), dur(p99), failed, unfinished, cfg.Drain, lost, dup)
	if landed > 0 {
		row.note("%d failed calls landed anyway", landed)
	}
	if len(codes) > 0 {
		var cs []string
		for c, n := range codes {
			cs = append(cs, fmt.Sprintf("%s×%d", c, n))
		}
		slices.Sort(cs)
		row.note("errors %s", strings.Join(cs, " "))
	}
	if replicas > 1 {
		var ss []string
		least := 1.0
		for i, n := range share {
			f := 0.0
			if acked > 0 {
				f = float64(n) / float64(acked)
			}
			least = min(least, f)
			row.metric(fmt.Sprintf("share_%d", i), f)
			ss = append(ss, fmt.Sprintf("%.0f%%", 100*f))
		}
		row.metric("least_share", least)
		row.note("shares %s", strings.Join(ss, " "))
	}
	return []Row{row}, nil
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
