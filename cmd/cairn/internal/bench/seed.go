package bench

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairnstore/cairn/workbench"
)

// WorkbenchID is the workbench every scenario works in.
const WorkbenchID = "bench"

// File is one file a Seeder writes.
type File struct {
	Section, Path, Text string
}

// Seeder fills the bench's workbench with files through svc. The default
// writes them with workbench_put_file; a bulk import can take its place.
type Seeder interface {
	Seed(ctx context.Context, svc *workbench.Service, files []File) error
}

// shape names the seeded paths of one size and makes their bodies.
type shape struct {
	files      int
	dirEntries int  // files in bigDir
	random     bool // bodies of random text (Config.RandomBodies)
}

const (
	section  = "outputs"
	bigDir   = "big"
	smallDir = 100 // files per other directory
)

func newShape(files, dirEntries int, random bool) shape {
	return shape{files: files, dirEntries: min(files, dirEntries), random: random}
}

// path is the i-th seeded path (in its section): first the big
// directory's entries, then directories of smallDir.
func (s shape) path(i int) string {
	if i < s.dirEntries {
		return fmt.Sprintf("%s/f%06d.txt", bigDir, i)
	}
	j := i - s.dirEntries
	return fmt.Sprintf("d%04d/f%06d.txt", j/smallDir, j)
}

// someFile is a seeded file outside the big directory when there is one.
func (s shape) someFile(k int) string {
	rest := s.files - s.dirEntries
	if rest == 0 {
		return s.path(k % s.files)
	}
	return s.path(s.dirEntries + (k*smallDir+k)%rest)
}

func (s shape) list() []File {
	fs := make([]File, s.files)
	for i := range fs {
		fs[i] = File{Section: section, Path: s.path(i), Text: s.text(i)}
	}
	return fs
}

// text is the body of seeded file i: a few lines, about 250 bytes, of
// English or, with random bodies, of random base64.
func (s shape) text(i int) string {
	var b strings.Builder
	for l := range 4 {
		if s.random {
			b.WriteString(randomLine(uint64(i)<<8|uint64(l), 48))
			continue
		}
		fmt.Fprintf(&b, "file %d line %d: the quick brown fox jumps over the lazy dog\n", i, l)
	}
	return b.String()
}

// putBody is the body of the measured single puts: 2 KiB of text, 64
// lines of 31 characters, the same digits on every line or random base64.
func (s shape) putBody(k int) string {
	if !s.random {
		return strings.Repeat("0123456789abcdef0123456789abcde\n", 64)
	}
	var b strings.Builder
	for l := range 64 {
		b.WriteString(randomLine(1<<40|uint64(k)<<8|uint64(l), 31))
	}
	return b.String()
}

// randomLine is n characters of base64 of random bytes, seeded by seed,
// and a newline.
func randomLine(seed uint64, n int) string {
	r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	raw := make([]byte, n)
	for i := range raw {
		raw[i] = byte(r.Uint32())
	}
	return base64.StdEncoding.EncodeToString(raw)[:n] + "\n"
}

// progressMu serialises progress lines written from concurrent seeders;
// the writer need not be safe for concurrent use.
var progressMu sync.Mutex

// PutFileSeeder writes each file with one workbench_put_file call,
// Concurrency calls at a time, so that group commit batches them.
type PutFileSeeder struct {
	Concurrency int
	// Progress, if not nil, receives a line at each tenth of the files.
	Progress io.Writer
}

// Seed implements Seeder.
func (p PutFileSeeder) Seed(ctx context.Context, svc *workbench.Service, files []File) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	work := make(chan File)
	var wg sync.WaitGroup
	var done atomic.Int64
	start := time.Now()
	for range max(1, p.Concurrency) {
		wg.Go(func() {
			for f := range work {
				if err := putRetrying(ctx, svc, f); err != nil {
					cancel(err)
				}
				n := done.Add(1)
				if tenth := max(1, int64(len(files))/10); p.Progress != nil && n%tenth == 0 {
					progressMu.Lock()
					fmt.Fprintf(p.Progress, "bench: seeded %d/%d files in %s\n", n, len(files), time.Since(start).Round(time.Second))
					progressMu.Unlock()
				}
			}
		})
	}
	for _, f := range files {
		select {
		case work <- f:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
	}
	close(work)
	wg.Wait()
	return context.Cause(ctx)
}

// putRetrying puts f, retrying retryable errors a few times.
func putRetrying(ctx context.Context, svc *workbench.Service, f File) error {
	in := workbench.PutFileInput{ID: WorkbenchID, Section: f.Section, Path: f.Path, Text: &f.Text}
	var last error
	for range 5 {
		if err := ctx.Err(); err != nil {
			return err
		}
		_, err := svc.PutFile(ctx, in)
		if err == nil {
			return nil
		}
		last = fmt.Errorf("bench: seed %s/%s: %w", f.Section, f.Path, err)
		var werr *workbench.Error
		if !errors.As(err, &werr) || !werr.Retryable {
			return last
		}
	}
	return last
}

// errorCode returns the Workbench error code of err, or "" for another
// error.
func errorCode(err error) string {
	var werr *workbench.Error
	if errors.As(err, &werr) {
		return werr.Code
	}
	return ""
}

// decode decodes a tool's result.
func decode(out []byte) (map[string]any, error) {
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil {
		return nil, fmt.Errorf("bench: result is not JSON: %w: %q", err, out)
	}
	return m, nil
}

// call calls a tool and fails on an error result.
func call(ctx context.Context, svc *workbench.Service, tool string, in map[string]any) (map[string]any, error) {
	raw, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	out, ok := svc.Call(ctx, tool, raw)
	if !ok {
		return nil, fmt.Errorf("bench: %s %s: %s", tool, raw, out)
	}
	return decode(out)
}
