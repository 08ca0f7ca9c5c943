package workbench_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket/file"
	"github.com/cairnstore/cairn/workbench"
)

// BenchmarkFileSyncs reports what durability costs on a local disk: the
// fsyncs of files and of directories, and the syncs of the whole file
// system, per put_file of 1 KiB to a new path (one call at a time, so
// each is its own group commit) and per workbench_commit after ten puts,
// on the file bucket.
func BenchmarkFileSyncs(b *testing.B) {
	ctx := context.Background()
	text := strings.Repeat("k", 1024)
	open := func(b *testing.B) (*file.Bucket, *workbench.Service) {
		fb, err := file.New(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		// As a deployment runs it: without the engine's self-check, which
		// reads every commit back.
		s, err := workbench.Open(ctx, fb, workbench.Options{AgentID: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		if err := s.Store().Initialize(ctx); err != nil {
			b.Fatal(err)
		}
		if out, ok := s.Call(ctx, "workbench_create", []byte(`{"id":"w"}`)); !ok {
			b.Fatalf("create: %s", out)
		}
		return fb, s
	}
	put := func(b *testing.B, s *workbench.Service, i int) {
		in := fmt.Sprintf(`{"id":"w","section":"outputs","path":"d%d/f%d.txt","text":"%s"}`, i%100, i, text)
		if out, ok := s.Call(ctx, "workbench_put_file", []byte(in)); !ok {
			b.Fatalf("put: %s", out)
		}
	}
	b.Run("put_file", func(b *testing.B) {
		fb, s := open(b)
		put(b, s, -1) // the first write initializes the deployment
		f0, d0 := fb.Syncs()
		s0 := fb.FileSystemSyncs()
		i := 0
		var took []time.Duration
		for b.Loop() {
			start := time.Now()
			put(b, s, i)
			took = append(took, time.Since(start))
			i++
		}
		slices.Sort(took)
		b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
		f, d := fb.Syncs()
		b.ReportMetric(float64(f-f0)/float64(i), "file-fsyncs/put")
		b.ReportMetric(float64(d-d0)/float64(i), "dir-fsyncs/put")
		b.ReportMetric(float64(fb.FileSystemSyncs()-s0)/float64(i), "fs-syncs/put")
	})
	b.Run("commit", func(b *testing.B) {
		fb, s := open(b)
		put(b, s, -1)
		var f, d, fs int64
		n := 0
		for b.Loop() {
			b.StopTimer()
			for j := range 10 {
				put(b, s, n*10+j)
			}
			f0, d0 := fb.Syncs()
			s0 := fb.FileSystemSyncs()
			b.StartTimer()
			if out, ok := s.Call(ctx, "workbench_commit", []byte(commitInput("w", fmt.Sprintf(`{"run":%d}`, n), digest01, true))); !ok {
				b.Fatalf("commit: %s", out)
			}
			f1, d1 := fb.Syncs()
			f, d, fs = f+f1-f0, d+d1-d0, fs+fb.FileSystemSyncs()-s0
			n++
		}
		b.ReportMetric(float64(f)/float64(n), "file-fsyncs/commit")
		b.ReportMetric(float64(d)/float64(n), "dir-fsyncs/commit")
		b.ReportMetric(float64(fs)/float64(n), "fs-syncs/commit")
	})
}
