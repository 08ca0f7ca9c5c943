// Package progress reports the progress of a long command on a writer: a
// bar redrawn in place on a terminal, a plain line at a fixed interval
// otherwise (a log file or a pipe must not fill with carriage returns).
//
// # Rate and ETA
//
// The rate is measured over the last rateWindow, not since the start, so
// the ETA follows a command that slows down (or speeds up) as it goes. The
// ETA is the remaining count at that rate; it is omitted until a rate is
// known.
package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// rateWindow is how far back the rate looks.
const rateWindow = 10 * time.Second

// IsTerminal reports whether w is a character device, such as a terminal.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// Options configure a Meter.
type Options struct {
	// Label begins every line, e.g. "import".
	Label string
	// Total is the count of files the command will process.
	Total int64
	// Unit names what Total counts in the report. Default "files".
	Unit string
	// Terminal redraws one bar in place; otherwise a plain line is
	// written every Interval.
	Terminal bool
	// Interval between two reports. Default 200 ms on a terminal, 5 s
	// otherwise.
	Interval time.Duration
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// Meter counts files and bytes done and reports them until Stop.
type Meter struct {
	w    io.Writer
	opts Options

	mu      sync.Mutex
	start   time.Time
	done    int64
	bytes   int64
	samples []sample // oldest first, within rateWindow

	stop    chan struct{}
	stopped chan struct{}
}

type sample struct {
	t    time.Time
	done int64
}

// Start begins reporting on w.
func Start(w io.Writer, opts Options) *Meter {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Interval <= 0 {
		opts.Interval = 5 * time.Second
		if opts.Terminal {
			opts.Interval = 200 * time.Millisecond
		}
	}
	m := &Meter{w: w, opts: opts, start: opts.Now(), stop: make(chan struct{}), stopped: make(chan struct{})}
	m.samples = []sample{{t: m.start}}
	go m.loop()
	return m
}

// Add counts n more files done and b more bytes.
func (m *Meter) Add(n, b int64) {
	m.mu.Lock()
	m.done += n
	m.bytes += b
	m.mu.Unlock()
}

// Stop ends reporting. On a terminal the bar is drawn a last time and
// ended with a newline, so what follows starts on its own line.
func (m *Meter) Stop() {
	close(m.stop)
	<-m.stopped
	if m.opts.Terminal {
		fmt.Fprintf(m.w, "\r\x1b[K%s\n", m.line())
	}
}

func (m *Meter) loop() {
	defer close(m.stopped)
	t := time.NewTicker(m.opts.Interval)
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-t.C:
			if m.opts.Terminal {
				fmt.Fprintf(m.w, "\r\x1b[K%s", m.line())
			} else {
				fmt.Fprintln(m.w, m.line())
			}
		}
	}
}

// line samples the counts and formats one report.
func (m *Meter) line() string {
	now := m.opts.Now()
	m.mu.Lock()
	done, b := m.done, m.bytes
	m.samples = append(m.samples, sample{t: now, done: done})
	for len(m.samples) > 2 && now.Sub(m.samples[1].t) >= rateWindow {
		m.samples = m.samples[1:]
	}
	first := m.samples[0]
	m.mu.Unlock()
	rate := 0.0
	if dt := now.Sub(first.t).Seconds(); dt > 0 {
		rate = float64(done-first.done) / dt
	}
	return format(m.opts.Label, m.opts.Unit, done, m.opts.Total, b, rate, m.opts.Terminal)
}

// Format renders one report: done of total files, bytes, the rate in files
// per second and the ETA at that rate; with bar, a 20-cell bar first.
func Format(label string, done, total, bytes int64, rate float64, bar bool) string {
	return format(label, "", done, total, bytes, rate, bar)
}

// format is Format counting unit ("files" if empty).
func format(label, unit string, done, total, bytes int64, rate float64, bar bool) string {
	if unit == "" {
		unit = "files"
	}
	var sb strings.Builder
	sb.WriteString(label)
	sb.WriteString(": ")
	pct := 100.0
	if total > 0 {
		pct = 100 * float64(done) / float64(total)
	}
	if bar {
		const cells = 20
		full := int(pct / 100 * cells)
		full = min(max(full, 0), cells)
		sb.WriteString("[" + strings.Repeat("#", full) + strings.Repeat(".", cells-full) + "] ")
	}
	fmt.Fprintf(&sb, "%d/%d %s (%.0f%%), %s, %.0f %s/s", done, total, unit, pct, Bytes(bytes), rate, unit)
	if rate > 0 && done < total {
		eta := time.Duration(float64(total-done) / rate * float64(time.Second))
		fmt.Fprintf(&sb, ", ETA %s", eta.Round(time.Second))
	}
	return sb.String()
}

// Bytes renders n bytes in decimal units: "812 B", "20.4 MB".
func Bytes(n int64) string {
	const unit = 1000
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %cB", float64(n)/float64(div), "kMGTPE"[exp])
}
