package workbench_test

import (
	"bytes"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/workbench"
)

// TestCallRefusesInputOverLimit: an input longer than MaxInputBytes is
// PayloadTooLarge before it is parsed (invalid JSON too), with the
// input's length and the limit; one of exactly the limit is parsed and
// served, and the worst-case JSON text of a payload of MaxBytes (every
// byte a control character written \u00XX) fits.
func TestCallRefusesInputOverLimit(t *testing.T) {
	const maxBytes = 1 << 10
	s := newServiceOn(t, mem.NewBucket(), workbench.Options{MaxBytes: maxBytes})
	limit := workbench.MaxInputBytes("workbench_put_file", maxBytes)
	if got, want := limit, int64(6*maxBytes+64<<10); got != want {
		t.Fatalf("MaxInputBytes %d, want %d", got, want)
	}
	if got, want := workbench.MaxInputBytes("workbench_edit", maxBytes), int64(12*maxBytes+64<<10); got != want {
		t.Fatalf("edit's MaxInputBytes %d, want %d", got, want)
	}
	if got, want := workbench.MaxInputBytes("workbench_read", 0), int64(6*workbench.DefaultMaxBytes+64<<10); got != want {
		t.Fatalf("default MaxInputBytes %d, want %d", got, want)
	}
	pad := func(in string, n int64) string { return in + strings.Repeat(" ", int(n)-len(in)) }
	put := `{"id":"wb","section":"outputs","path":"a.txt","text":"x"}`

	for _, in := range []string{pad(put, limit+1), pad("{not json", limit+1)} {
		got, ok := call(t, s, "workbench_put_file", in)
		wantToolError(t, got, ok, "PayloadTooLarge", false,
			fmt.Sprintf("tool input is %d bytes, maximum is %d", limit+1, limit),
			map[string]any{"actual_bytes": limit + 1, "maximum_bytes": limit})
	}
	// An unknown tool is UnknownTool whatever its input.
	if got, _ := call(t, s, "workbench_nope", pad("{}", limit+1)); got["code"] != "UnknownTool" {
		t.Fatalf("unknown tool: %v", got)
	}
	mustCall(t, s, "workbench_put_file", pad(put, limit))
	worst := `{"id":"wb","section":"outputs","path":"b.bin","text":"` + strings.Repeat(`\u0001`, maxBytes) + `"}`
	if int64(len(worst)) > limit {
		t.Fatalf("a payload of MaxBytes takes %d bytes of JSON, over the %d-byte limit", len(worst), limit)
	}
	if got := mustCall(t, s, "workbench_put_file", worst); num(got["size_bytes"]) != fmt.Sprint(maxBytes) {
		t.Fatalf("worst-case put %v", got)
	}
}

// TestCallRefusesLargeInputUnparsed: at the default limit, an input of
// 128 MiB is refused without being parsed: the refusal allocates nothing
// in proportion to the input (parsing a 400 MB one took 2.2 GB).
func TestCallRefusesLargeInputUnparsed(t *testing.T) {
	s := newService(t)
	in := bytes.Repeat([]byte("x"), 128<<20)
	copy(in, `{"id":"wb","section":"outputs","path":"a.txt","text":"`)
	copy(in[len(in)-2:], `"}`)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	out, ok := s.Call(t.Context(), "workbench_put_file", in)
	runtime.ReadMemStats(&after)
	if ok || !strings.Contains(string(out), `"code":"PayloadTooLarge"`) {
		t.Fatalf("result %s", out)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
		t.Fatalf("refusing a %d-byte input allocated %d bytes", len(in), n)
	}
}
