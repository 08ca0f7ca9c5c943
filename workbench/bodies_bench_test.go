package workbench_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/counting"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/workbench"
)

// Memory of large bodies.
//
// Peak heap is measured by heapPeak: after a GC, a goroutine samples
// runtime/metrics' live heap (HeapAlloc of runtime.ReadMemStats) every
// 200 µs while the call runs; the figure is the highest sample less the
// heap before the call. What the call's input holds is in the baseline,
// so the figure is what the call adds. Sampling can miss a peak shorter
// than its period, so it is a lower bound, close for calls of
// milliseconds. Bytes fetched are the GETs' bytes counted by
// bucket/counting.

// heapPeak runs fn and returns the highest heap it reached above the heap
// before it, in bytes.
func heapPeak(fn func()) uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	peak := base
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(200 * time.Microsecond)
		defer t.Stop()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapAlloc)
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	fn()
	close(stop)
	wg.Wait()
	runtime.ReadMemStats(&ms)
	peak = max(peak, ms.HeapAlloc)
	return peak - base
}

// dropBlocks is a bucket that keeps every object but body blocks, whose
// bytes it drops: a benchmark of a put then measures the put, not the
// memory bucket's copy of what it stored.
type dropBlocks struct{ bucket.Bucket }

func (b dropBlocks) Put(ctx context.Context, key string, body []byte, cond bucket.Condition) (bucket.Attrs, error) {
	if strings.Contains(key, "/blocks/") {
		body = nil
	}
	return b.Bucket.Put(ctx, key, body, cond)
}

// body16MiB is a 16 MiB payload of text (no escapes in JSON).
func body16MiB() []byte {
	b := make([]byte, workbench.DefaultMaxBytes)
	for i := range b {
		b[i] = 'a' + byte(i%26)
	}
	return b
}

// BenchmarkPut16MiB: put_file of a 16 MiB body with the default options
// (4 MiB blocks), as text and as base64, replacing one path. Reports the
// peak heap above the input's own bytes (peak-heap-MiB) and what the call
// allocated in all (B/op).
func BenchmarkPut16MiB(b *testing.B) {
	body := body16MiB()
	for _, enc := range []string{"text", "base64"} {
		b.Run(enc, func(b *testing.B) {
			s := newServiceOn(b, dropBlocks{mem.NewBucket()}, workbench.Options{})
			payload := `"text":"` + string(body) + `"`
			if enc == "base64" {
				payload = `"base64":"` + base64.StdEncoding.EncodeToString(body) + `"`
			}
			// The path is created once; each measured put replaces it, so
			// that every call takes the same input.
			mustCall(b, s, "workbench_put_file", `{"id":"wb","section":"outputs","path":"f","text":""}`)
			in := []byte(`{"id":"wb","section":"outputs","path":"f","replace":true,` + payload + `}`)
			payload = ""
			var peak uint64
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				p := heapPeak(func() {
					if out, ok := s.Call(b.Context(), "workbench_put_file", in); !ok {
						b.Fatalf("put: %s", out)
					}
				})
				peak = max(peak, p)
			}
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
		})
	}
}

// BenchmarkRangedRead16MiB: a bytes read of 300 bytes (the largest page)
// in the middle of a 16 MiB file of 4 MiB blocks, and of 300 bytes across
// two blocks. Reports the peak heap (peak-heap-MiB) and the bytes fetched
// from the bucket (fetched-B/op).
func BenchmarkRangedRead16MiB(b *testing.B) {
	cb := counting.New(mem.NewBucket())
	s := newServiceOn(b, cb, workbench.Options{})
	mustCall(b, s, "workbench_put_file", `{"id":"wb","section":"outputs","path":"big","base64":"`+base64.StdEncoding.EncodeToString(body16MiB())+`"}`)
	for _, c := range []struct {
		name   string
		offset int
	}{{"one-block", 6 << 20}, {"two-blocks", 8<<20 - 150}} {
		b.Run(c.name, func(b *testing.B) {
			in := []byte(fmt.Sprintf(`{"id":"wb","section":"outputs","path":"big","format":"bytes","offset":%d,"limit":300}`, c.offset))
			var peak uint64
			cb.Reset()
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				p := heapPeak(func() {
					if out, ok := s.Call(b.Context(), "workbench_read", in); !ok {
						b.Fatalf("read: %s", out)
					}
				})
				peak = max(peak, p)
			}
			b.StopTimer()
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
			b.ReportMetric(float64(cb.Snapshot().Get.BytesRead)/float64(b.N), "fetched-B/op")
		})
	}
}
