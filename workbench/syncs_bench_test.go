package workbench_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/bucket/file"
	"github.com/cairnstore/cairn/workbench"
)

// BenchmarkFileSyncs reports what durability costs on a local disk: the
// fsyncs of files and of directories per put_file of 1 KiB to a new path
// (one call at a time, so each is its own group commit) and per
// workbench_commit after ten puts, on the file bucket.
func BenchmarkFileSyncs(b *testing.B) {
	ctx := context.Background()
	text := strings.Repeat("k", 1024)
	open := func(b *testing.B) (*file.Bucket, *workbench.Service) {
		fb, err := file.New(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		s := newServiceOn(b, fb, workbench.Options{})
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
	report := func(b *testing.B, fb *file.Bucket, f0, d0 int64, per int, unit string) {
		f, d := fb.Syncs()
		b.ReportMetric(float64(f-f0)/float64(per), "file-fsyncs/"+unit)
		b.ReportMetric(float64(d-d0)/float64(per), "dir-fsyncs/"+unit)
	}
	b.Run("put_file", func(b *testing.B) {
		fb, s := open(b)
		put(b, s, -1) // the first write initializes the deployment
		f0, d0 := fb.Syncs()
		i := 0
		for b.Loop() {
			put(b, s, i)
			i++
		}
		report(b, fb, f0, d0, i, "put")
	})
	b.Run("commit", func(b *testing.B) {
		fb, s := open(b)
		put(b, s, -1)
		var f, d int64
		n := 0
		for b.Loop() {
			b.StopTimer()
			for j := range 10 {
				put(b, s, n*10+j)
			}
			f0, d0 := fb.Syncs()
			b.StartTimer()
			if out, ok := s.Call(ctx, "workbench_commit", []byte(commitInput("w", fmt.Sprintf(`{"run":%d}`, n), digest01, true))); !ok {
				b.Fatalf("commit: %s", out)
			}
			f1, d1 := fb.Syncs()
			f, d = f+f1-f0, d+d1-d0
			n++
		}
		b.ReportMetric(float64(f)/float64(n), "file-fsyncs/commit")
		b.ReportMetric(float64(d)/float64(n), "dir-fsyncs/commit")
	})
}
