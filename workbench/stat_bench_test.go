package workbench_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/workbench"
)

// BenchmarkWarmStat is a workbench_stat of one file of a workbench of
// 2,000 files spread over 20 directories, every shard it reads already
// cached: the CPU and allocations of the call itself.
func BenchmarkWarmStat(b *testing.B) {
	ctx := context.Background()
	s := newServiceOn(b, mem.NewBucket(), workbench.Options{})
	if out, ok := s.Call(ctx, "workbench_create", []byte(`{"id":"w"}`)); !ok {
		b.Fatalf("create: %s", out)
	}
	text := strings.Repeat("k", 100)
	for i := range 2_000 {
		in := fmt.Sprintf(`{"id":"w","section":"outputs","path":"d%d/f%d.txt","text":"%s"}`, i%20, i, text)
		if out, ok := s.Call(ctx, "workbench_put_file", []byte(in)); !ok {
			b.Fatalf("put: %s", out)
		}
	}
	in := []byte(`{"id":"w","section":"outputs","path":"d7/f1507.txt"}`)
	if out, ok := s.Call(ctx, "workbench_stat", in); !ok {
		b.Fatalf("stat: %s", out)
	}
	b.ReportAllocs()
	for b.Loop() {
		if out, ok := s.Call(ctx, "workbench_stat", in); !ok {
			b.Fatalf("stat: %s", out)
		}
	}
}
