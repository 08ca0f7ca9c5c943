package head_test

// Benchmarks of the engine's request costs. Each reports, beside ns/op,
// custom metrics from bucket/counting (requests and sequential round trips
// per operation, bytes) so that the figures that matter do not depend on
// the machine. bucket/latency turns round trips into time: the "rtt=20ms"
// variants wait 20 ms before every request. docs/performance.md has the
// commands and the figures.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/counting"
	"github.com/cairnstore/cairn/bucket/latency"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/shards"
)

// benchLatencies are the per-request delays the request benchmarks run
// with: none (the engine's own cost over memory) and a remote store's.
var benchLatencies = []struct {
	name string
	d    time.Duration
}{{"mem", 0}, {"rtt=20ms", 20 * time.Millisecond}}

// benchBucket returns a counted bucket over store, delayed by d per
// request: counting sees a request's whole duration, so requests sent
// together overlap and count as one round.
func benchBucket(b *testing.B, store *mem.Store, d time.Duration) *counting.Bucket {
	b.Helper()
	mb, err := mem.New(store, "")
	if err != nil {
		b.Fatal(err)
	}
	var inner bucket.Bucket = mb
	if d > 0 {
		inner = latency.New(mb, latency.Options{PerRequest: d})
	}
	return counting.New(inner)
}

func benchOpen(b *testing.B, bk bucket.Bucket, id shards.ShardID, opts head.Options) *head.Store {
	b.Helper()
	s, err := head.Open(context.Background(), bk, id, head.SchemaForTest, opts)
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// benchFilled returns a mem store holding one shard whose family
// rqFamilies[0] has n records, written by one bulk commit, and the shard's
// id. MaxRecentNonces one-record commits follow, so that the head carries as
// many recent nonces as it does in steady state.
func benchFilled(b *testing.B, n int) (*mem.Store, shards.ShardID) {
	b.Helper()
	store := mem.NewStore()
	id := shards.NewShardID()
	mb, _ := mem.New(store, "")
	w := benchOpen(b, mb, id, head.Options{})
	defer w.Close()
	f := rqFamilies[0]
	rqFill(b, w, []shards.Family{f}, n)
	for i := range head.MaxRecentNonces {
		if _, err := w.Do(context.Background(), rqPut(f, i, 1)); err != nil {
			b.Fatal(err)
		}
	}
	return store, id
}

// benchReport reports per-operation request metrics of st over n
// operations.
func benchReport(b *testing.B, st counting.Stats, n int) {
	b.ReportMetric(float64(st.Total().Requests)/float64(n), "requests/op")
	b.ReportMetric(float64(st.Rounds)/float64(n), "rounds/op")
	b.ReportMetric(float64(st.Get.BytesRead)/float64(n), "B-read/op")
}

// BenchmarkWarmPointRead: a point read (Pin, then Get) by a replica that
// has already decoded the shard, at an unchanged head: one request, the
// head's GET.
func BenchmarkWarmPointRead(b *testing.B) {
	for _, lat := range benchLatencies {
		b.Run(lat.name, func(b *testing.B) {
			ctx := context.Background()
			store, id := benchFilled(b, 1000)
			cb := benchBucket(b, store, lat.d)
			s := benchOpen(b, cb, id, head.Options{})
			defer s.Close()
			f := rqFamilies[0]
			sn, err := s.Pin(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := sn.Scan(ctx, f, nil, nil, 0); err != nil { // warm every shard
				b.Fatal(err)
			}
			cb.Reset()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				sn, err := s.Pin(ctx)
				if err != nil {
					b.Fatal(err)
				}
				if _, ok, err := sn.Get(ctx, f, rqKey(f, i%1000)); err != nil || !ok {
					b.Fatalf("get: %v, %v", ok, err)
				}
			}
			b.StopTimer()
			benchReport(b, cb.Snapshot(), b.N)
		})
	}
}

// BenchmarkColdPointRead: a point read with nothing it needs decoded.
//
//   - new-process: head.Open of a fresh Store (head, root, the system
//     family's table and shard for the schema gate) and its first point
//     read (head, table, shard; the root is already decoded).
//   - head-moved: a fresh Store, opened outside the timer, after which
//     another replica commits; the timed read fetches head, root, table and
//     shard, each named by the one before.
func BenchmarkColdPointRead(b *testing.B) {
	for _, lat := range benchLatencies {
		for _, mode := range []string{"new-process", "head-moved"} {
			b.Run(lat.name+"/"+mode, func(b *testing.B) {
				ctx := context.Background()
				store, id := benchFilled(b, 1000)
				wb, _ := mem.New(store, "")
				w := benchOpen(b, wb, id, head.Options{})
				defer w.Close()
				cb := benchBucket(b, store, lat.d)
				f := rqFamilies[0]
				var reqs, rounds, read int64
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					var s *head.Store
					if mode == "head-moved" {
						b.StopTimer()
						s = benchOpen(b, cb, id, head.Options{})
						if _, err := w.Do(ctx, rqPut(rqFamilies[1], i, 0)); err != nil {
							b.Fatal(err)
						}
						cb.Reset()
						b.StartTimer()
					} else {
						cb.Reset()
						s = benchOpen(b, cb, id, head.Options{})
					}
					sn, err := s.Pin(ctx)
					if err != nil {
						b.Fatal(err)
					}
					if _, ok, err := sn.Get(ctx, f, rqKey(f, i%1000)); err != nil || !ok {
						b.Fatalf("get: %v, %v", ok, err)
					}
					b.StopTimer()
					st := cb.Snapshot()
					reqs += st.Total().Requests
					rounds += st.Rounds
					read += st.Get.BytesRead
					s.Close()
					b.StartTimer()
				}
				b.StopTimer()
				b.ReportMetric(float64(reqs)/float64(b.N), "requests/op")
				b.ReportMetric(float64(rounds)/float64(b.N), "rounds/op")
				b.ReportMetric(float64(read)/float64(b.N), "B-read/op")
			})
		}
	}
}

// BenchmarkSmallCommit: a warm writer's one-key commit (an update of an
// existing record in a family of 1,000): pin, stage shard + table + root
// in one round, CAS the head.
func BenchmarkSmallCommit(b *testing.B) {
	for _, lat := range benchLatencies {
		b.Run(lat.name, func(b *testing.B) {
			ctx := context.Background()
			store, id := benchFilled(b, 1000)
			cb := benchBucket(b, store, lat.d)
			s := benchOpen(b, cb, id, head.Options{})
			defer s.Close()
			f := rqFamilies[0]
			sn, err := s.Pin(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := sn.Scan(ctx, f, nil, nil, 0); err != nil { // warm every shard
				b.Fatal(err)
			}
			cb.Reset()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := s.Do(ctx, rqPut(f, i%1000, 2+i/1000)); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			st := cb.Snapshot()
			benchReport(b, st, b.N)
			b.ReportMetric(float64(st.Put.Requests)/float64(b.N), "puts/op")
			b.ReportMetric(float64(st.Put.BytesWritten)/float64(b.N), "B-written/op")
		})
	}
}

// benchWindow is how long BenchmarkCommitsPerSecondLatency keeps its
// writers busy, whatever b.N is.
const benchWindow = 10 * time.Second

// BenchmarkCommitsPerSecondLatency: 32 goroutines of one process each
// commit one-key commands back to back into one shard, over a store with
// 20 ms per request and GCS's limit of one write per second per object,
// with group commit on and off. The head is one object, so at most about
// one commit a second lands either way; what group commit changes is how
// many commands each commit carries. Each sub-benchmark runs for benchWindow
// once (run it with -benchtime=1x); ns/op is meaningless here.
func BenchmarkCommitsPerSecondLatency(b *testing.B) {
	for _, mode := range []struct {
		name string
		off  bool
	}{{"group-commit=on", false}, {"group-commit=off", true}} {
		b.Run(mode.name, func(b *testing.B) {
			const writers = 32
			store := mem.NewStore()
			id := shards.NewShardID()
			mb, _ := mem.New(store, "")
			lb := latency.New(mb, latency.Options{PerRequest: 20 * time.Millisecond, WritesPerSecondPerObject: 1})
			s := benchOpen(b, lb, id, head.Options{NoGroupCommit: mode.off, MinCommitInterval: time.Second})
			defer s.Close()
			f := rqFamilies[0]
			time.Sleep(time.Second) // let Open's head write leave the rate window
			first, err := s.Pin(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			var ok, failed atomic.Int64
			var latencySum atomic.Int64 // of successful commands, ns
			var failMu sync.Mutex
			var firstFail error
			ctx, cancel := context.WithTimeout(context.Background(), benchWindow)
			defer cancel()
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for g := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; ctx.Err() == nil; i++ {
						t0 := time.Now()
						_, err := s.Do(ctx, rqPut(f, g*1_000_000+i, 0))
						switch {
						case err == nil:
							ok.Add(1)
							latencySum.Add(int64(time.Since(t0)))
						case ctx.Err() != nil && errors.Is(err, ctx.Err()):
							// the window closed on it
						default:
							failed.Add(1)
							failMu.Lock()
							if firstFail == nil {
								firstFail = err
							}
							failMu.Unlock()
						}
					}
				}()
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			time.Sleep(time.Second) // let a commit in flight when the window closed land or fail
			last, err := s.Pin(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			commits := last.Sequence() - first.Sequence()
			secs := elapsed.Seconds()
			b.ReportMetric(float64(commits)/secs, "commits/s")
			b.ReportMetric(float64(ok.Load())/secs, "commands/s")
			if commits > 0 {
				b.ReportMetric(float64(ok.Load())/float64(commits), "commands/commit")
			}
			if n := ok.Load(); n > 0 {
				b.ReportMetric(float64(latencySum.Load())/float64(n)/1e6, "ms/command")
			}
			b.ReportMetric(float64(failed.Load()), "failed-commands")
			b.ReportMetric(float64(lb.Throttled()), "throttled-writes")
			if firstFail != nil {
				b.Logf("first failure: %v", firstFail)
			}
		})
	}
}

// benchFixtures caches the filled stores of BenchmarkOneRecordCommitBytes
// across the calls the benchmark framework makes with growing b.N. The
// benchmark only updates existing records, so a fixture keeps its size.
var benchFixtures = map[int]struct {
	store *mem.Store
	id    shards.ShardID
}{}

// BenchmarkOneRecordCommitBytes: a family of n records, built with one
// bulk commit; a writer updates one record per commit and a replica that
// has read the whole family reads it back. It reports the bytes each
// commit writes (delta + root + head) and the bytes the replica reads to
// catch up, and their parts. Every MaxDeltas+1 commits the writer folds
// the deltas into the base in a commit of its own (shards + table + root
// + head): fold-B/fold is what one fold writes, fold-B/commit the same
// spread over the commits, total-B/commit the two together. Run it with
// -benchtime=340x (20 folds) for stable fold figures.
func BenchmarkOneRecordCommitBytes(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			ctx := context.Background()
			fx, ok := benchFixtures[n]
			if !ok {
				fx.store, fx.id = benchFilled(b, n)
				benchFixtures[n] = fx
			}
			f := rqFamilies[0]
			newReplica := func() (*head.Store, *rqRecorder) {
				mb, _ := mem.New(fx.store, "")
				rec := &rqRecorder{Bucket: mb}
				return benchOpen(b, rec, fx.id, head.Options{}), rec
			}
			w, wrec := newReplica()
			defer w.Close()
			r, rrec := newReplica()
			defer r.Close()
			for _, s := range []*head.Store{w, r} { // both have read the whole family
				sn, err := s.Pin(ctx)
				if err != nil {
					b.Fatal(err)
				}
				if recs, err := sn.Scan(ctx, f, nil, nil, 0); err != nil || len(recs) != n {
					b.Fatalf("scan: %d records, %v", len(recs), err)
				}
			}
			wrec.take()
			rrec.take()
			written := map[string]int{} // by kind, commits only
			var foldBytes, folds int
			read := map[string]int{}
			var wrote, gets int
			var pending []rqCall // writes since the last head write
			account := func(calls []rqCall) {
				for _, c := range calls {
					if c.Op != "put" {
						continue
					}
					pending = append(pending, c)
					if c.Kind != "head" {
						continue
					}
					// A head write ends a commit: a fold if it wrote no
					// delta (a fold commit carries no command).
					fold := !slices.ContainsFunc(pending, func(c rqCall) bool { return c.Kind == "delta" })
					for _, p := range pending {
						if fold {
							foldBytes += p.Bytes
						} else {
							written[p.Kind] += p.Bytes
							wrote++
						}
					}
					if fold {
						folds++
					}
					pending = pending[:0]
				}
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				k := (i * 7919) % n
				if _, err := w.Do(ctx, rqPut(f, k, 2+i)); err != nil {
					b.Fatal(err)
				}
				sn, err := r.Pin(ctx)
				if err != nil {
					b.Fatal(err)
				}
				if _, ok, err := sn.Get(ctx, f, rqKey(f, k)); err != nil || !ok {
					b.Fatalf("get: %v, %v", ok, err)
				}
				b.StopTimer()
				account(wrec.take())
				for _, c := range rrec.take() {
					if c.Op == "get" {
						read[c.Kind] += c.Bytes
						gets++
					}
				}
				b.StartTimer()
			}
			b.StopTimer()
			sum := func(m map[string]int) (t int) {
				for _, v := range m {
					t += v
				}
				return t
			}
			per := func(v int) float64 { return float64(v) / float64(b.N) }
			b.ReportMetric(per(sum(written)), "B-written/commit")
			b.ReportMetric(per(sum(written)+foldBytes), "total-B/commit")
			b.ReportMetric(per(foldBytes), "fold-B/commit")
			if folds > 0 {
				b.ReportMetric(float64(foldBytes)/float64(folds), "fold-B/fold")
			}
			b.ReportMetric(per(folds), "folds/commit")
			b.ReportMetric(per(sum(read)), "B-read/catchup")
			b.ReportMetric(per(wrote), "puts/commit")
			b.ReportMetric(per(gets), "gets/catchup")
			for _, k := range []string{"delta", "root", "head"} {
				b.ReportMetric(per(written[k]), k+"-B")
			}
		})
	}
}

// BenchmarkThousandCommandCommitBytes: 1,000 one-record commands, each
// updating a record of a family of 100,000, gathered into one group commit
// (MinCommitInterval holds the leader until all have queued). It reports
// the bytes the commit writes and their parts: one delta of 1,000 records,
// the root and the head.
func BenchmarkThousandCommandCommitBytes(b *testing.B) {
	const n, cmds = 100_000, 1000
	ctx := context.Background()
	fx, ok := benchFixtures[n]
	if !ok {
		fx.store, fx.id = benchFilled(b, n)
		benchFixtures[n] = fx
	}
	f := rqFamilies[0]
	written := map[string]int{}
	var puts int
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		// Start from a root without deltas: a Store that folds every
		// commit inline commits first, so that no fold joins the
		// measurement (the commit adds the second delta of the root).
		fb, _ := mem.New(fx.store, "")
		folder := benchOpen(b, fb, fx.id, head.Options{MaxDeltaBytes: 1})
		if _, err := folder.Do(ctx, rqPut(f, 1, 1)); err != nil {
			b.Fatal(err)
		}
		folder.Close()
		mb, _ := mem.New(fx.store, "")
		rec := &rqRecorder{Bucket: mb}
		s := benchOpen(b, rec, fx.id, head.Options{MinCommitInterval: time.Second, MaxBatch: cmds})
		if _, err := s.Do(ctx, rqPut(f, 0, 1)); err != nil { // starts the interval
			b.Fatal(err)
		}
		rec.take()
		b.StartTimer()
		seqs := make([]uint64, cmds)
		var wg sync.WaitGroup
		for j := range cmds {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r, err := s.Do(ctx, rqPut(f, (j*7919+i)%n, 3+i))
				if err != nil {
					b.Error(err)
				}
				seqs[j] = r.Sequence
			}()
		}
		wg.Wait()
		b.StopTimer()
		for _, q := range seqs {
			if q != seqs[0] {
				b.Fatalf("the commands landed in several commits: sequences %d and %d", seqs[0], q)
			}
		}
		for _, c := range rec.take() {
			if c.Op == "put" {
				written[c.Kind] += c.Bytes
				puts++
			}
		}
		s.Close()
		b.StartTimer()
	}
	per := func(v int) float64 { return float64(v) / float64(b.N) }
	total := 0
	for _, v := range written {
		total += v
	}
	b.ReportMetric(per(total), "B-written/commit")
	b.ReportMetric(per(puts), "puts/commit")
	for _, k := range []string{"delta", "root", "head"} {
		b.ReportMetric(per(written[k]), k+"-B")
	}
}

// BenchmarkThousandRecordFoldBytes: a fold of 1,000 one-record changes to
// random keys of a family of 100,000 (a group commit's delta reaching the
// base): one command of 1,000 puts by a Store that folds every commit
// inline. It reports the bytes the fold writes and their parts. The keys
// touch nearly every one of the 256 shards, so this is the fold's worst
// case per record; with pages (the default) it rewrites the touched pages
// and indexes, with pages=off (PageBytes at 1 TiB: every touched shard
// becomes one object again) whole shards, as folds did before pages.
func BenchmarkThousandRecordFoldBytes(b *testing.B) {
	const n, recs = 100_000, 1000
	for _, mode := range []struct {
		name string
		page int64
	}{{"pages=on", 0}, {"pages=off", 1 << 40}} {
		b.Run(mode.name, func(b *testing.B) {
			ctx := context.Background()
			store := mem.NewStore()
			id := shards.NewShardID()
			mb, _ := mem.New(store, "")
			filler := benchOpen(b, mb, id, head.Options{PageBytes: mode.page})
			f := rqFamilies[0]
			rqFill(b, filler, []shards.Family{f}, n)
			filler.Close()
			written := map[string]int{}
			var puts int
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				rb, _ := mem.New(store, "")
				rec := &rqRecorder{Bucket: rb}
				s := benchOpen(b, rec, id, head.Options{MaxDeltaBytes: 1, PageBytes: mode.page})
				if _, err := s.Pin(ctx); err != nil {
					b.Fatal(err)
				}
				rec.take()
				b.StartTimer()
				if _, err := s.Do(ctx, head.Command{Apply: func(tx *head.Tx) ([]byte, error) {
					for j := range recs {
						k := (j*7919 + i*104729) % n
						if err := tx.Put(f, rqKey(f, k), rqValue(f, k, 3+i)); err != nil {
							return nil, err
						}
					}
					return nil, nil
				}}); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				for _, c := range rec.take() {
					if c.Op == "put" {
						written[c.Kind] += c.Bytes
						puts++
					}
				}
				s.Close()
				b.StartTimer()
			}
			per := func(v int) float64 { return float64(v) / float64(b.N) }
			total := 0
			for _, v := range written {
				total += v
			}
			b.ReportMetric(per(total), "fold-B")
			b.ReportMetric(per(puts), "puts/fold")
			for _, k := range []string{"shard", "index", "table", "root", "head"} {
				b.ReportMetric(per(written[k]), k+"-B")
			}
		})
	}
}
