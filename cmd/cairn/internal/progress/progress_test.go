package progress_test

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnstore/cairn/cmd/cairn/internal/progress"
)

func TestFormat(t *testing.T) {
	for _, c := range []struct {
		done, total, bytes int64
		rate               float64
		bar                bool
		want               string
	}{
		{0, 100, 0, 0, false, "import: 0/100 files (0%), 0 B, 0 files/s"},
		{50, 100, 20_400_000, 10, false, "import: 50/100 files (50%), 20.4 MB, 10 files/s, ETA 5s"},
		{50, 100, 1500, 10, true, "import: [##########..........] 50/100 files (50%), 1.5 kB, 10 files/s, ETA 5s"},
		{100, 100, 999, 10, true, "import: [####################] 100/100 files (100%), 999 B, 10 files/s"},
		{0, 0, 0, 0, false, "import: 0/0 files (100%), 0 B, 0 files/s"},
	} {
		if got := progress.Format("import", c.done, c.total, c.bytes, c.rate, c.bar); got != c.want {
			t.Errorf("Format(%d, %d, %d, %v, %v)\n got %q\nwant %q", c.done, c.total, c.bytes, c.rate, c.bar, got, c.want)
		}
	}
}

// syncBuffer is a bytes.Buffer safe for the Meter's goroutine and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestMeterPlainLines(t *testing.T) {
	var out syncBuffer
	m := progress.Start(&out, progress.Options{Label: "import", Total: 10, Interval: time.Millisecond})
	m.Add(4, 400)
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(out.String(), "4/10 files") && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	m.Stop()
	got := out.String()
	if !strings.Contains(got, "import: 4/10 files (40%), 400 B") || strings.Contains(got, "\r") {
		t.Fatalf("plain output %q", got)
	}
}

func TestMeterTerminalEndsLine(t *testing.T) {
	var out syncBuffer
	m := progress.Start(&out, progress.Options{Label: "import", Total: 2, Terminal: true, Interval: time.Hour})
	m.Add(2, 10)
	m.Stop()
	if got, want := out.String(), "\r\x1b[Kimport: [####################] 2/2 files (100%), 10 B, "; !strings.HasPrefix(got, want) || !strings.HasSuffix(got, "\n") {
		t.Fatalf("terminal output %q, want prefix %q and a final newline", got, want)
	}
	if progress.IsTerminal(&out) {
		t.Fatal("a buffer is not a terminal")
	}
}

func TestMeterUnit(t *testing.T) {
	var out syncBuffer
	m := progress.Start(&out, progress.Options{Label: "copy", Total: 8, Unit: "objects", Interval: time.Millisecond})
	m.Add(2, 2000)
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(out.String(), "2/8 objects") && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	m.Stop()
	if got := out.String(); !strings.Contains(got, "copy: 2/8 objects (25%), 2.0 kB") {
		t.Fatalf("output %q", got)
	}
}
