package gcsweep_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket/counting"
	"github.com/cairnstore/cairn/bucket/latency"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/gcsweep"
	"github.com/cairnstore/cairn/workbench"
)

// BenchmarkPinCopy copies a pinned workbench of 1,000 files (50 of them
// in blocks) between two buckets that each add 20 ms to every request,
// as a remote store does, at 32 objects in flight; then copies it again,
// when everything is there already. Run with -benchtime 1x: each
// iteration is a whole copy.
//
//	go test ./gcsweep -run '^$' -bench BenchmarkPinCopy -benchtime 1x
func BenchmarkPinCopy(b *testing.B) {
	ctx := context.Background()
	src := mem.NewBucket()
	svc, err := workbench.Open(ctx, src, workbench.Options{AgentID: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	defer svc.Close()
	if out, ok := svc.Call(ctx, "workbench_create", []byte(`{"id":"wb"}`)); !ok {
		b.Fatal(string(out))
	}
	for i := range 1000 {
		text := fmt.Sprintf("file %d\n", i)
		if i%20 == 0 {
			text = strings.Repeat(fmt.Sprintf("line of file %d\n", i), 1000) // about 17 KB: a block
		}
		in := fmt.Sprintf(`{"id":"wb","section":"outputs","path":"d%02d/f%04d.txt","text":%q}`, i%10, i, text)
		if out, ok := svc.Call(ctx, "workbench_put_file", []byte(in)); !ok {
			b.Fatal(string(out))
		}
	}
	pin, err := gcsweep.PinHead(ctx, svc.Store(), "bench", "", time.Now())
	if err != nil {
		b.Fatal(err)
	}
	remote := latency.Options{PerRequest: 20 * time.Millisecond}
	from, err := workbench.Open(ctx, latency.New(src, remote), workbench.Options{AgentID: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	defer from.Close()
	opts := gcsweep.VerifyOptions{Concurrency: 32}
	b.ResetTimer()
	for range b.N {
		dst := counting.New(latency.New(mem.NewBucket(), remote))
		start := time.Now()
		rep, err := gcsweep.CopyPin(ctx, from.Store(), dst, pin, workbench.BlockRefs, opts)
		if err != nil {
			b.Fatal(err)
		}
		first := time.Since(start)
		dst.Reset()
		start = time.Now()
		again, err := gcsweep.CopyPin(ctx, from.Store(), dst, pin, workbench.BlockRefs, opts)
		if err != nil {
			b.Fatal(err)
		}
		b.Logf("%d objects, %d bytes: copied in %v; again in %v (%d copied, %d PUTs at the destination)",
			rep.Objects, rep.Bytes, first.Round(time.Millisecond), time.Since(start).Round(time.Millisecond), again.Copied, dst.Snapshot().Put.Requests)
		b.ReportMetric(float64(rep.Objects)/first.Seconds(), "objects/s")
	}
}
