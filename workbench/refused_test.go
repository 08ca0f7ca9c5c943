package workbench_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/fault"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/manifests/bodies"
	"github.com/cairnstore/cairn/workbench"
)

// TestPermanentRefusalIsReportedAsSuch: a store that refuses a write for
// good (no permission, a full disk) while the engine stages its objects,
// on the head write, or while a body's blocks are uploaded, fails the
// tool at once with ObjectUnavailable, not retryable, naming the cause:
// never Conflict/Contention (no other writer exists), UnknownOutcome
// (the refused write did not happen) or Internal. Nothing is applied.
func TestPermanentRefusalIsReportedAsSuch(t *testing.T) {
	big := strings.Repeat("x", 8<<10) // over DefaultInlineMax: uploaded as blocks
	for _, c := range []struct {
		name   string
		prefix func(*workbench.Service) string
		cause  error
		want   string // in the message
	}{
		{"staging denied", func(s *workbench.Service) string { return s.Store().Layout().Prefix() + "deltas/" }, bucket.ErrDenied, "denied access"},
		{"staging full", func(s *workbench.Service) string { return s.Store().Layout().Prefix() + "roots/" }, bucket.ErrNoSpace, "no space left"},
		{"head denied", func(s *workbench.Service) string { return s.Store().Layout().Head() }, bucket.ErrDenied, "denied access"},
		{"head full", func(s *workbench.Service) string { return s.Store().Layout().Head() }, bucket.ErrNoSpace, "no space left"},
		{"blocks denied", func(s *workbench.Service) string { return bodies.ArtifactsPrefix(s.Store().Layout()) }, bucket.ErrDenied, "denied access"},
		{"blocks full", func(s *workbench.Service) string { return bodies.ArtifactsPrefix(s.Store().Layout()) }, bucket.ErrNoSpace, "no space left"},
	} {
		t.Run(c.name, func(t *testing.T) {
			fb := fault.New(mem.NewBucket())
			s := newServiceOn(t, fb, workbench.Options{})
			h := fb.Inject(fault.Rule{Op: fault.OpPut, Prefix: c.prefix(s),
				Fault: fault.FailBefore(fmt.Errorf("refused: %w", c.cause))})

			start := time.Now()
			got, ok := call(t, s, "workbench_put_file", putInput("wb", "outputs", "a.txt", fmt.Sprintf(`"text":%q`, big)))
			took := time.Since(start)
			if ok || got["code"] != workbench.CodeObjectUnavailable || got["retryable"] != false {
				t.Fatalf("put_file: %v, want ObjectUnavailable, not retryable", got)
			}
			if msg, _ := got["message"].(string); !strings.Contains(msg, c.want) {
				t.Fatalf("message %q does not name the cause (%q)", msg, c.want)
			}
			if h.Fired() == 0 {
				t.Fatal("the refusal never fired")
			}
			// The engine tries the refused write once; the body store has
			// one try per block, all in one round.
			if n := h.Fired(); n > 4 {
				t.Fatalf("the refused write was tried %d times", n)
			}
			if took > time.Second {
				t.Fatalf("put_file took %v to report a permanent refusal", took)
			}
			fb.Clear()
			if got, ok := call(t, s, "workbench_stat", `{"id":"wb","section":"outputs","path":"a.txt"}`); ok {
				t.Fatalf("a refused put_file is visible: %v", got)
			}
		})
	}
}
