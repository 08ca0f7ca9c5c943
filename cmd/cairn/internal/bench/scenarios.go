package bench

import (
	"context"
	"fmt"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/counting"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/workbench"
)

// sizeRun is the state shared by the scenarios of one size.
type sizeRun struct {
	cfg  Config
	st   *stack
	sh   shape
	warm *replica // seeded the workbench and has served a call since
	// served, in a served run, holds the processes the scenarios call
	// (warm is then closed once the workbench is seeded).
	served *servedSet
	// committed is the identity of the workbench's last commit, once a
	// scenario made one.
	committed string
}

// runSize measures one size. The directory of a local-file bucket it
// made is added to stores, for the caller to remove.
func runSize(ctx context.Context, cfg Config, n int, stores *[]string) (rows []Row, seed *Seeding, err error) {
	var served *servedSet
	var raw bucket.Bucket
	if cfg.Served {
		if served, raw, err = startServed(ctx, cfg); err != nil {
			return nil, nil, err
		}
		defer func() { err = cmpErr(err, served.close()) }()
	}
	st, err := newStack(cfg, raw)
	if err != nil {
		return nil, nil, err
	}
	defer st.close()
	if st.dir != "" {
		*stores = append(*stores, st.dir)
	}
	r := &sizeRun{cfg: cfg, st: st, sh: newShape(n, cfg.DirEntries, cfg.RandomBodies), served: served}

	cfg.progress("%d files: seeding", n)
	st.sw.bypass.Store(true)
	warm, _, err := st.open(ctx, workbench.Options{Engine: head.Options{MaxBatch: cfg.SeedBatch}})
	if err != nil {
		return nil, nil, err
	}
	r.warm = warm
	defer func() {
		if r.warm != nil {
			r.warm.Close()
		}
	}()
	start := time.Now()
	if err := cfg.Seeder.Seed(ctx, warm.svc, r.sh.list()); err != nil {
		return nil, nil, err
	}
	// The load's last fold, prepared beside its commits, is the load's:
	// a scenario measured while it lands would count it as its own.
	if err := settleFolds(ctx, warm); err != nil {
		return nil, nil, err
	}
	seed = &Seeding{Files: n, Wall: time.Since(start), BytesWritten: warm.cnt.Snapshot().Total().BytesWritten}
	if served != nil {
		// The emulator walks every object for each page of a listing.
		seed.Objects, seed.StoreBytes, err = served.stored()
	} else if st.file != nil {
		// A listing opens every object for its header; the walk only
		// reads directories (at a million files, seconds against hours).
		seed.Objects, seed.StoreBytes, err = st.file.Usage(ctx)
	} else {
		seed.Objects, seed.StoreBytes, err = stored(ctx, st.raw)
	}
	if err != nil {
		return nil, seed, err
	}
	cfg.progress("%d files: seeded in %s", n, seed.Wall.Round(time.Millisecond))
	st.sw.bypass.Store(false)

	if served != nil {
		// The seeding replica leaves before the servers start.
		if err := warm.Close(); err != nil {
			return nil, seed, err
		}
		r.warm = nil
	} else if _, err := call(ctx, warm.svc, "workbench_stat", map[string]any{"id": WorkbenchID}); err != nil {
		// The warm replica serves one call over the emulated latency
		// before anything is measured.
		return nil, seed, err
	}

	for _, sc := range r.scenarios() {
		wanted := false
		for _, name := range sc.names {
			wanted = wanted || cfg.wants(name)
		}
		if !wanted {
			continue
		}
		if sc.names[0] == PutCommitWarm && n > workbench.MaxCommitFiles {
			cfg.progress("%d files: %s not run: a commit holds at most %d files", n, PutCommitWarm, workbench.MaxCommitFiles)
			continue
		}
		cfg.progress("%d files: %s", n, strings.Join(sc.names, ", "))
		var got []Row
		var err error
		// A CPU profile of the run (cairn bench --cpuprofile) tells the
		// scenarios' samples from the seeding's by these labels, which
		// the goroutines the scenario starts inherit.
		pprof.Do(ctx, pprof.Labels("scenario", sc.names[0], "files", strconv.Itoa(n)), func(ctx context.Context) {
			got, err = sc.run(ctx)
		})
		if err != nil {
			return rows, seed, fmt.Errorf("bench: %s at %d files: %w", strings.Join(sc.names, ", "), n, err)
		}
		for _, row := range got {
			if cfg.wants(row.Scenario) {
				row.Files = n
				rows = append(rows, row)
			}
		}
	}
	return rows, seed, nil
}

// stored counts the objects in b and their bytes.
func stored(ctx context.Context, b bucket.Bucket) (int, int64, error) {
	objs, _, err := bucket.ListAll(ctx, b, bucket.ListOptions{})
	var n int64
	for _, o := range objs {
		n += o.Size
	}
	return len(objs), n, err
}

// scenario runs the scenarios named, in one go.
type scenario struct {
	names []string
	run   func(context.Context) ([]Row, error)
}

// scenarios are the size's scenarios in run order: through `cairn serve`
// in a served run, in process otherwise.
func (r *sizeRun) scenarios() []scenario {
	cfg := r.cfg
	if r.served != nil {
		return []scenario{
			{[]string{PutCommitWarm}, r.servedPutCommit},
			{[]string{PutNewWarm}, r.servedPutNew},
			{[]string{PutReplaceWarm}, r.servedPutReplace},
			{[]string{Restore}, r.servedRestore},
			{[]string{Throughput1}, func(ctx context.Context) ([]Row, error) { return r.servedThroughput(ctx, Throughput1, 1) }},
			{[]string{Throughput8}, func(ctx context.Context) ([]Row, error) {
				return r.servedThroughput(ctx, Throughput8, cfg.Replicas)
			}},
		}
	}
	return []scenario{
		// put-commit-warm first: the files put-new-warm adds would take a
		// workbench of 100,000 past a commit's member limit.
		{[]string{PutCommitWarm}, r.putCommit},
		{[]string{PutNewWarm}, r.putNew},
		{[]string{PutReplaceWarm}, r.putReplace},
		{[]string{ColdStat, ColdRead}, r.cold},
		{[]string{ListCold, ListWarm}, r.list},
		{[]string{Grep}, r.grep},
		{[]string{SearchAll}, r.search},
		{[]string{ReplicaMemory}, r.memory},
		// restore after the reads: the workbench it makes doubles the
		// rows in every family the cold reads look in.
		{[]string{Restore}, r.restore},
		{[]string{Throughput1}, func(ctx context.Context) ([]Row, error) { return r.throughput(ctx, Throughput1, 1) }},
		{[]string{Throughput8}, func(ctx context.Context) ([]Row, error) {
			return r.throughput(ctx, Throughput8, cfg.Replicas)
		}},
	}
}

// measure runs f on rep after a Reset of its counts and returns the row.
func (r *sizeRun) measure(ctx context.Context, name string, rep *replica, f func() (map[string]any, error)) (Row, map[string]any, error) {
	rep.cnt.Reset()
	syncs, cpu, start := r.st.syncs(), processCPU(), time.Now()
	res, err := f()
	wall, cpu := time.Since(start), processCPU()-cpu
	if err != nil {
		return Row{}, nil, err
	}
	row := fromStats(rep.cnt.Snapshot())
	row.Scenario, row.Wall, row.CPU, row.HeadBytes = name, wall, cpu, r.st.headBytes(ctx)
	row.Fsyncs = r.st.syncs() - syncs
	return row, res, nil
}

// puts measures PutSamples puts, one at a time, the ith of in at path(i)
// (replacing what is there with replace): their total, the wall time and
// the rounds of each, sorted, the most bytes one wrote and the highest
// generation.
func (r *sizeRun) puts(ctx context.Context, name string, path func(i int) string, replace bool) (total Row, took []time.Duration, rounds []int64, largest int64, gen uint64, err error) {
	for i := range r.cfg.PutSamples {
		if err := pace(ctx, r.cfg); err != nil {
			return Row{}, nil, nil, 0, 0, err
		}
		p, body := path(i), r.sh.putBody(i)
		row, _, err := r.measure(ctx, name, r.warm, func() (map[string]any, error) {
			res, err := r.warm.svc.PutFile(ctx, workbench.PutFileInput{ID: WorkbenchID, Section: section, Path: p, Text: &body, Replace: replace})
			if err == nil {
				gen = max(gen, res.Generation)
			}
			return nil, putError(err)
		})
		if err != nil {
			return Row{}, nil, nil, 0, 0, err
		}
		total.plus(row)
		total.HeadBytes = row.HeadBytes
		took = append(took, row.Wall)
		rounds = append(rounds, row.Rounds)
		largest = max(largest, row.BytesWritten)
	}
	slices.Sort(took)
	slices.Sort(rounds)
	return total, took, rounds, largest, gen, nil
}

func (r *sizeRun) putNew(ctx context.Context) ([]Row, error) {
	n := r.cfg.PutSamples
	total, took, rounds, largest, _, err := r.puts(ctx, PutNewWarm, func(i int) string { return fmt.Sprintf("new/d%d/put-new.txt", i) }, false)
	if err != nil {
		return nil, err
	}
	row := total.mean(PutNewWarm, n)
	r.noteFsyncs(&row, "put", total.Fsyncs, n)
	row.metric("puts", float64(n))
	row.metric("p50_s", percentile(took, 0.50).Seconds())
	row.metric("max_s", took[n-1].Seconds())
	row.metric("largest_put_bytes", float64(largest))
	row.metric("p50_rounds", float64(rounds[(n-1)/2]))
	row.note("mean of %d puts of new files, one at a time, folds included: %d requests, %s written in all; p50 %s, slowest %s; rounds p50 %d, most %d; the largest put wrote %s",
		n, total.Requests, size(total.BytesWritten), dur(percentile(took, 0.50)), dur(took[n-1]), rounds[(n-1)/2], rounds[n-1], size(largest))
	objs, _, _ := r.warm.svc.CacheStats()
	row.note("cache %s of %s in %d objects, %d evicted", size(objs.Bytes), size(objs.Budget), objs.Entries, objs.Evictions)
	return []Row{row}, nil
}

// putReplace measures PutSamples puts that replace a file each, one at a
// time: the row is their mean, folds included, with their p50.
func (r *sizeRun) putReplace(ctx context.Context) ([]Row, error) {
	n := r.cfg.PutSamples
	total, took, rounds, _, gen, err := r.puts(ctx, PutReplaceWarm, func(i int) string { return r.sh.someFile(1 + i) }, true)
	if err != nil {
		return nil, err
	}
	row := total.mean(PutReplaceWarm, n)
	row.metric("puts", float64(n))
	row.metric("p50_s", percentile(took, 0.50).Seconds())
	row.metric("p50_rounds", float64(rounds[(n-1)/2]))
	row.note("mean of %d puts replacing a file, one at a time, folds included; p50 %s, rounds p50 %d, most %d; %s besides the 2 KiB body; generation up to %d",
		n, dur(percentile(took, 0.50)), rounds[(n-1)/2], rounds[n-1], size(row.BytesWritten-int64(len(r.sh.putBody(0)))), gen)
	r.noteFsyncs(&row, "put", total.Fsyncs, n)
	return []Row{row}, nil
}

// putCommit commits the workbench once (not measured: the first commit
// freezes every file), then measures CommitSamples rounds of what an
// agent does between commits at its smallest: one file replaced, then a
// commit that replaces the head. The row is their mean; its metrics give
// the commit's share and the p50 of the pair.
func (r *sizeRun) putCommit(ctx context.Context) ([]Row, error) {
	commit := func(i int) error { return r.commit(ctx, i, i > 0) }
	var before head.CommitStats // at the first measured pair
	total, commits, row, err := r.pairs(ctx, commit, func(i int) (Row, Row, error) {
		var alone Row
		if i == 1 {
			before = r.warm.svc.Store().CommitStats()
		}
		path, body := r.sh.someFile(1+i), r.sh.putBody(i)
		row, _, err := r.measure(ctx, PutCommitWarm, r.warm, func() (map[string]any, error) {
			_, err := r.warm.svc.PutFile(ctx, workbench.PutFileInput{ID: WorkbenchID, Section: section, Path: path, Text: &body, Replace: true})
			if err != nil {
				return nil, putError(err)
			}
			before, syncs := r.warm.cnt.Snapshot(), r.st.syncs()
			start := time.Now()
			err = commit(i)
			alone.addSince(r.warm.cnt.Snapshot(), before)
			alone.Wall, alone.Fsyncs = time.Since(start), r.st.syncs()-syncs
			return nil, err
		})
		return row, alone, err
	}, "")
	if err != nil {
		return nil, err
	}
	n := r.cfg.CommitSamples
	after := r.warm.svc.Store().CommitStats()
	row.metric("folds", float64(after.Folds-before.Folds))
	row.metric("merges", float64(after.Merges-before.Merges))
	row.note("%d folds into the base and %d merges landed during the pairs", after.Folds-before.Folds, after.Merges-before.Merges)
	r.noteFsyncs(&row, "pair", total.Fsyncs, n)
	r.noteFsyncs(&row, "commit", commits.Fsyncs, n)
	switch r.cfg.ValueFormat {
	case 2:
		row.note("value format 2: members in rows")
	case 3:
		row.note("value format 3: member trees, the whole workbench read")
	case 4:
		row.note("value format 4: objects plain")
	}
	return []Row{row}, nil
}

// commit commits the workbench with round i in its manifest, replacing
// its head commit with replace, and keeps the commit's identity.
func (r *sizeRun) commit(ctx context.Context, i int, replace bool) error {
	res, err := r.warm.svc.Commit(ctx, workbench.CommitInput{ID: WorkbenchID, Manifest: map[string]any{"round": i},
		ContentDigestURI: "sha256:" + strings.Repeat("0", 63) + "1", Replace: replace})
	if err != nil {
		return fmt.Errorf("bench: workbench_commit: %w", err)
	}
	r.committed = res.CommitIdentity
	return nil
}

// restore restores the workbench's last commit (making one first, not
// measured, if no scenario has) into a new workbench: every file, the
// run manifest and a restore manifest placed, in one workbench_restore
// call on the warm replica.
func (r *sizeRun) restore(ctx context.Context) ([]Row, error) {
	if r.committed == "" {
		if err := r.commit(ctx, 0, true); err != nil {
			return nil, err
		}
		if err := settleFolds(ctx, r.warm); err != nil {
			return nil, err
		}
	}
	seq := func() (uint64, error) {
		sn, err := r.warm.svc.Store().Pin(ctx)
		if err != nil {
			return 0, err
		}
		return sn.Sequence(), nil
	}
	seq0, err := seq()
	if err != nil {
		return nil, err
	}
	var res *workbench.RestoreResult
	row, _, err := r.measure(ctx, Restore, r.warm, func() (map[string]any, error) {
		var err error
		res, err = r.warm.svc.Restore(ctx, workbench.RestoreInput{ID: WorkbenchID, DestinationID: WorkbenchID + "-restored", AtCommit: r.committed})
		return nil, err
	})
	if err != nil {
		return nil, fmt.Errorf("bench: workbench_restore: %w", err)
	}
	seq1, err := seq()
	if err != nil {
		return nil, err
	}
	// The destination's commit must hold what the source's did.
	src, err := r.warm.svc.Inspect(ctx, WorkbenchID)
	if err != nil {
		return nil, err
	}
	dst, err := r.warm.svc.Inspect(ctx, res.DestinationWorkbenchID)
	if err != nil {
		return nil, err
	}
	if src.Commit == nil || dst.Commit == nil {
		return nil, fmt.Errorf("bench: the restore left %s (%s) without a commit", res.DestinationWorkbenchID, dst.State)
	}
	// The destination adds its restore manifest to the source's members.
	if dst.Commit.MemberCount != src.Commit.MemberCount+1 {
		return nil, fmt.Errorf("bench: the restored commit holds %d members, its source %d", dst.Commit.MemberCount, src.Commit.MemberCount)
	}
	row.metric("restore_s", row.Wall.Seconds())
	row.metric("members", float64(dst.Commit.MemberCount))
	row.metric("head_writes", float64(seq1-seq0))
	row.note("one workbench_restore of the last commit into a new workbench, %d members placed: %d head writes, %d requests in %d rounds, %s written, %d fsyncs",
		dst.Commit.MemberCount, seq1-seq0, row.Requests, row.Rounds, size(row.BytesWritten), row.Fsyncs)
	return []Row{row}, nil
}

// pairs commits once with commit(0), not measured (the first commit
// freezes every file), then measures CommitSamples pairs, each after the
// write limit's window: sample(i) replaces a file, commits with
// commit(i), and returns the pair's row and its commit's alone. It
// returns their sums and the row of their mean, its note after prefix.
func (r *sizeRun) pairs(ctx context.Context, commit func(int) error, sample func(i int) (pair, alone Row, err error), prefix string) (total, commits, row Row, err error) {
	if err := commit(0); err != nil {
		return Row{}, Row{}, Row{}, err
	}
	// The first commit's fold, prepared beside the commits, is its own
	// (in process; a served replica's folds are the server's).
	if r.warm != nil {
		if err := settleFolds(ctx, r.warm); err != nil {
			return Row{}, Row{}, Row{}, err
		}
	}
	n := r.cfg.CommitSamples
	var took, commitTook []time.Duration
	for i := 1; i <= n; i++ {
		if err := pace(ctx, r.cfg); err != nil {
			return Row{}, Row{}, Row{}, err
		}
		pair, alone, err := sample(i)
		if err != nil {
			return Row{}, Row{}, Row{}, err
		}
		total.plus(pair)
		total.HeadBytes = pair.HeadBytes
		commits.plus(alone)
		took, commitTook = append(took, pair.Wall), append(commitTook, alone.Wall)
	}
	return total, commits, pairRow(total, commits, took, commitTook, n, prefix), nil
}

// pairRow is the row of put-commit-warm: the mean of n pairs whose
// counts add up to total, the commits' alone to commits, with the p50
// of each, its note after the prefix given.
func pairRow(total, commits Row, took, commitTook []time.Duration, n int, prefix string) Row {
	row := total.mean(PutCommitWarm, n)
	alone := commits.mean(PutCommitWarm, n)
	slices.Sort(took)
	slices.Sort(commitTook)
	row.metric("pairs", float64(n))
	row.metric("p50_s", percentile(took, 0.50).Seconds())
	row.metric("commit_p50_s", percentile(commitTook, 0.50).Seconds())
	row.metric("commit_bytes_written", float64(alone.BytesWritten))
	row.metric("commit_requests", float64(alone.Requests))
	row.note("%smean of %d pairs of one replaced file and a commit, folds included; p50 %s; the commit alone: p50 %s, %d requests in %d rounds, %s written (mean)",
		prefix, n, dur(percentile(took, 0.50)), dur(percentile(commitTook, 0.50)), alone.Requests, alone.Rounds, size(alone.BytesWritten))
	return row
}

// plus adds o's counts, times and fsyncs to r.
func (r *Row) plus(o Row) {
	r.Requests += o.Requests
	r.Rounds += o.Rounds
	r.BytesRead += o.BytesRead
	r.BytesWritten += o.BytesWritten
	r.Wall += o.Wall
	r.CPU += o.CPU
	r.Fsyncs += o.Fsyncs
}

// mean returns the row of scenario name whose counts and times are
// total's over n samples, rounded to the nearest.
func (total Row) mean(name string, n int) Row {
	mean := func(v int64) int64 { return (v + int64(n)/2) / int64(n) }
	return Row{Scenario: name, Requests: mean(total.Requests), Rounds: mean(total.Rounds),
		BytesRead: mean(total.BytesRead), BytesWritten: mean(total.BytesWritten),
		Wall: total.Wall / time.Duration(n), CPU: total.CPU / time.Duration(n), HeadBytes: total.HeadBytes,
		Fsyncs: mean(total.Fsyncs)}
}

// noteFsyncs notes the fsyncs per op of n ops, in a local-file bucket.
func (r *sizeRun) noteFsyncs(row *Row, op string, fsyncs int64, n int) {
	if r.st.file == nil {
		return
	}
	per := float64(fsyncs) / float64(n)
	row.metric("fsyncs_per_"+op, per)
	row.note("%.2f fsyncs per %s", per, op)
}

// putError wraps a failed put_file call's error for a scenario.
func putError(err error) error {
	if err != nil {
		return fmt.Errorf("bench: workbench_put_file: %w", err)
	}
	return nil
}

// steps reads a replica's counts after each step of a cold start.
type steps struct {
	start time.Time
	prev  counting.Stats
	parts []string
}

func (s *steps) step(name string, now counting.Stats) {
	d := fromStats(now)
	p := fromStats(s.prev)
	s.parts = append(s.parts, fmt.Sprintf("%s %dq/%dr", name, d.Requests-p.Requests, d.Rounds-p.Rounds))
	s.prev = now
}

// cold opens a new replica (a new process over the same bucket) and runs
// its first stat; then another new replica and its first read, of
// another small file. Each row counts from its replica's Open.
func (r *sizeRun) cold(ctx context.Context) ([]Row, error) {
	stat, err := r.coldCall(ctx, ColdStat, "workbench_stat", r.sh.someFile(2))
	if err != nil {
		return nil, err
	}
	read, err := r.coldCall(ctx, ColdRead, "workbench_read", r.sh.someFile(3))
	if err != nil {
		return nil, err
	}
	return []Row{stat, read}, nil
}

// coldCall opens a new replica and makes tool's call on path its first.
func (r *sizeRun) coldCall(ctx context.Context, name, tool, path string) (Row, error) {
	s := steps{start: time.Now()}
	cpu := processCPU()
	rep, opened, err := r.st.open(ctx, workbench.Options{})
	if err != nil {
		return Row{}, err
	}
	defer rep.Close()
	s.step("open", opened)
	res, err := call(ctx, rep.svc, tool, map[string]any{"id": WorkbenchID, "section": section, "path": path})
	if err != nil {
		return Row{}, err
	}
	row := fromStats(rep.cnt.Snapshot())
	row.Scenario, row.Wall, row.HeadBytes = name, time.Since(s.start), r.st.headBytes(ctx)
	row.CPU = processCPU() - cpu
	s.step(strings.TrimPrefix(tool, "workbench_"), rep.cnt.Snapshot())
	row.note("from Open: %s", strings.Join(s.parts, ", "))
	if n, ok := res["record_count"]; ok {
		row.note("%v records", n)
	}
	return row, nil
}

// list lists the first page of the big directory from a new replica
// (cold, counting its Open), then again from the same replica (warm).
func (r *sizeRun) list(ctx context.Context) ([]Row, error) {
	in := map[string]any{"id": WorkbenchID, "section": section, "path": bigDir, "limit": 100}
	start, cpu := time.Now(), processCPU()
	rep, opened, err := r.st.open(ctx, workbench.Options{})
	if err != nil {
		return nil, err
	}
	defer rep.Close()
	res, err := call(ctx, rep.svc, "workbench_list", in)
	if err != nil {
		return nil, err
	}
	cold := fromStats(rep.cnt.Snapshot())
	cold.Scenario, cold.Wall, cold.HeadBytes = ListCold, time.Since(start), r.st.headBytes(ctx)
	cold.CPU = processCPU() - cpu
	o := fromStats(opened)
	cold.note("from Open (open %dq/%dr, %s read); page of %v of %d entries",
		o.Requests, o.Rounds, size(o.BytesRead), res["entry_count"], r.sh.dirEntries)

	warm, res, err := r.measure(ctx, ListWarm, rep, func() (map[string]any, error) {
		return call(ctx, rep.svc, "workbench_list", in)
	})
	if err != nil {
		return nil, err
	}
	warm.note("page of %v of %d entries", res["entry_count"], r.sh.dirEntries)
	return []Row{cold, warm}, nil
}

func (r *sizeRun) grep(ctx context.Context) ([]Row, error) {
	row, res, err := r.measure(ctx, Grep, r.warm, func() (map[string]any, error) {
		return call(ctx, r.warm.svc, "workbench_grep", map[string]any{
			"id": WorkbenchID, "section": section, "path": bigDir, "pattern": "no line holds this", "recursive": false})
	})
	if err != nil {
		return nil, err
	}
	row.note("%v files scanned, no match", res["files_scanned"])
	return []Row{row}, nil
}

func (r *sizeRun) search(ctx context.Context) ([]Row, error) {
	row, res, err := r.measure(ctx, SearchAll, r.warm, func() (map[string]any, error) {
		return call(ctx, r.warm.svc, "workbench_search", map[string]any{
			"id": WorkbenchID, "limit": 10,
			"predicates": []any{map[string]any{"field": "logical_size", "op": "gte", "value": 0}},
			"sort":       []any{map[string]any{"field": "logical_size", "direction": "desc"}}})
	})
	if err != nil {
		return nil, err
	}
	row.note("logical_size >= 0 sorted: %v matches", res["match_count"])
	return []Row{row}, nil
}

// memory measures the live heap a new replica adds once it has read
// everything: every path row (search) and every body (grep over the whole
// workbench). Latency is bypassed while it loads; memory does not depend
// on it.
func (r *sizeRun) memory(ctx context.Context) ([]Row, error) {
	before := liveHeap()
	r.st.sw.bypass.Store(true)
	defer r.st.sw.bypass.Store(false)
	start, cpu := time.Now(), processCPU()
	rep, _, err := r.st.open(ctx, workbench.Options{})
	if err != nil {
		return nil, err
	}
	defer rep.Close()
	if _, err := call(ctx, rep.svc, "workbench_search", map[string]any{"id": WorkbenchID, "limit": 1,
		"predicates": []any{map[string]any{"field": "logical_size", "op": "gte", "value": 0}}}); err != nil {
		return nil, err
	}
	scanned := 0
	var cursor any
	for {
		in := map[string]any{"id": WorkbenchID, "pattern": "no line holds this", "recursive": true}
		if cursor != nil {
			in["cursor"] = cursor
		}
		res, err := call(ctx, rep.svc, "workbench_grep", in)
		if err != nil {
			return nil, err
		}
		if n, ok := res["files_scanned"].(float64); ok {
			scanned += int(n)
		}
		if cursor = res["next_cursor"]; cursor == nil {
			break
		}
	}
	after := liveHeap()
	runtime.KeepAlive(rep)
	row := fromStats(rep.cnt.Snapshot())
	row.Scenario, row.Wall, row.HeadBytes = ReplicaMemory, time.Since(start), r.st.headBytes(ctx)
	row.CPU = processCPU() - cpu
	row.metric("heap_bytes", float64(after-before))
	row.note("heap %s after search + grep of %d files (no latency)", size(after-before), scanned)
	return []Row{row}, nil
}

// liveHeap is the heap in use after a full collection.
func liveHeap() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// settleFolds waits, at most a minute, until no fold of rep's Store is
// being prepared or waits to be installed.
func settleFolds(ctx context.Context, rep *replica) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := rep.svc.Store().FoldsSettled(ctx); err != nil {
		return fmt.Errorf("bench: waiting for the folds prepared to land: %w", err)
	}
	return nil
}
