package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/cairnstore/cairn/bucket/file"
	"github.com/cairnstore/cairn/workbench"
)

// Storage is the storage workload: files of 2 KiB written through one
// `cairn serve` on a local-file bucket by StorageClients clients, with a
// workbench_commit after every StorageCommitEvery files, as an embedded
// deployment meets them. Its row says what the store holds at the end,
// what is left of it once an offline sweep has removed everything no root
// reaches (the live graph), and the server's resident memory. It runs
// on a store of its own, not on the seeded one.
const Storage = "storage"

// Shape of the storage workload.
const (
	StorageClients     = 8
	StorageCommitEvery = 100
	storageBodyLines   = 64 // of 32 bytes: 2 KiB a file

	// MaxStorageHold bounds Config.StorageHold: a day, past every sweep
	// interval cairn serve takes.
	MaxStorageHold = 24 * time.Hour
	// storageSample is how often a hold samples the store.
	storageSample = time.Minute
)

// storageBody is file i's body: 2 KiB of lines naming the file, or of
// random base64.
func storageBody(i int, random bool) string {
	var b strings.Builder
	for l := range storageBodyLines {
		if random {
			b.WriteString(randomLine(2<<40|uint64(i)<<8|uint64(l), 31))
			continue
		}
		fmt.Fprintf(&b, "file %07d line %02d abcdefghijk\n", i, l)
	}
	return b.String()
}

// storageCommit commits the workbench after the batch of files at lo,
// again while another client's commit moved the head under it (a
// retryable conflict, as a client would), up to 50 times.
func storageCommit(ctx context.Context, set *servedSet, srv *server, lo int) error {
	for try := 0; ; try++ {
		_, err := set.call(ctx, srv, "workbench_commit", map[string]any{"id": WorkbenchID,
			"manifest": map[string]any{"files": lo + StorageCommitEvery}, "content_digest_uri": "sha256:" + strings.Repeat("0", 63) + "1", "replace": true})
		var werr *workbench.Error
		if err == nil || !errors.As(err, &werr) || werr.Code != "WorkbenchCommitConflict" || try == 50 {
			return err
		}
		time.Sleep(time.Duration(try+1) * 5 * time.Millisecond)
	}
}

// runStorage runs the storage workload of n files in a fresh directory
// under cfg.Dir (default: the temporary one), removed afterwards.
func runStorage(ctx context.Context, cfg Config, n int) (row Row, err error) {
	row = Row{Scenario: Storage, Files: n}
	dir, err := os.MkdirTemp(cmp.Or(cfg.Dir, os.TempDir()), "cairn-bench-storage-")
	if err != nil {
		return row, fmt.Errorf("bench: %w", err)
	}
	defer os.RemoveAll(dir)
	store := filepath.Join(dir, "store")
	if err := os.Mkdir(store, 0o700); err != nil {
		return row, fmt.Errorf("bench: %w", err)
	}
	url := "file://" + store
	args := append([]string{"serve", "--addr", "127.0.0.1:0", "--bucket", url}, cfg.ServeArgs...)
	p, base, err := startProc(ctx, "cairn serve (storage)", cfg.Binary, args, nil, servingAddr)
	if err != nil {
		return row, err
	}
	stopped := false
	defer func() {
		if !stopped {
			err = cmpErr(err, p.stop())
		}
	}()
	set := &servedSet{cfg: cfg, client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: StorageClients}},
		inflight: make(chan struct{}, StorageClients)}
	defer set.client.CloseIdleConnections()
	srv := &server{proc: p, base: base}
	if _, err := set.call(ctx, srv, "workbench_create", map[string]any{"id": WorkbenchID}); err != nil {
		return row, fmt.Errorf("bench: storage: %w", err)
	}
	cfg.progress("%d files: the storage workload", n)
	batches := make(chan int)
	go func() {
		defer close(batches)
		for lo := 0; lo < n; lo += StorageCommitEvery {
			select {
			case batches <- lo:
			case <-ctx.Done():
				return
			}
		}
	}()
	cpu0 := p.cpu()
	start := time.Now()
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
		commits  int
	)
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if firstErr == nil {
			firstErr = err
		}
	}
	for range StorageClients {
		wg.Go(func() {
			for lo := range batches {
				for i := lo; i < min(n, lo+StorageCommitEvery); i++ {
					path := fmt.Sprintf("d%04d/f%07d.txt", i/StorageCommitEvery, i)
					if _, err := set.putFile(ctx, srv, path, storageBody(i, cfg.RandomBodies), false); err != nil {
						fail(fmt.Errorf("bench: storage: put %s: %w", path, err))
						return
					}
				}
				if err := storageCommit(ctx, set, srv, lo); err != nil {
					fail(fmt.Errorf("bench: storage: commit after file %d: %w", lo, err))
					return
				}
				mu.Lock()
				commits++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return row, firstErr
	}
	row.Wall, row.CPU = time.Since(start), p.cpu()-cpu0
	rss, peak := p.rss()
	fb, err := file.New(store)
	if err != nil {
		return row, err
	}
	objects, bytes, err := fb.Usage(ctx)
	if err != nil {
		return row, err
	}
	held, err := holdStorage(ctx, cfg, p, fb)
	if err != nil {
		return row, err
	}
	stopped = true
	if err := p.stop(); err != nil {
		return row, err
	}
	// The live graph: what is left once everything no root reaches has
	// gone, swept twice (the first sweep's revisions' rows leave more
	// behind) with the least grace gc takes, 2 s, that long after the server left.
	time.Sleep(2100 * time.Millisecond)
	for range 2 {
		cmd := exec.CommandContext(ctx, cfg.Binary, "gc", "--bucket", url, "--grace", "2s")
		cmd.Env = childEnv()
		if out, err := cmd.CombinedOutput(); err != nil {
			return row, fmt.Errorf("bench: storage: cairn gc: %w: %s", err, out)
		}
	}
	liveObjects, live, err := fb.Usage(ctx)
	if err != nil {
		return row, err
	}
	row.Metrics = map[string]float64{"store_bytes": float64(bytes), "store_objects": float64(objects),
		"live_bytes": float64(live), "live_objects": float64(liveObjects), "server_rss_bytes": float64(rss), "server_rss_peak_bytes": float64(peak),
		"commits": float64(commits)}
	row.note("%d files of 2 KiB through one cairn serve on a local-file bucket, %d clients, %d commits (one per %d files): "+
		"the store at the end %s in %d objects; its live graph %s in %d objects (%.2f×), after two offline sweeps with a grace of 2s; "+
		"server RSS %s at the end, %s at its peak",
		n, StorageClients, commits, StorageCommitEvery, size(bytes), objects, size(live), liveObjects, float64(bytes)/float64(max(live, 1)),
		size(rss), size(peak))
	if cfg.StorageHold > 0 {
		maps.Copy(row.Metrics, map[string]float64{"held_store_bytes": float64(held.bytes), "held_store_objects": float64(held.objects),
			"held_server_rss_bytes": float64(held.rss), "held_server_rss_peak_bytes": float64(held.peak)})
		row.note("after serve ran on, idle, for %v: the store %s in %d objects (%.2f× its live graph), server RSS %s, %s at its peak",
			cfg.StorageHold, size(held.bytes), held.objects, float64(held.bytes)/float64(max(live, 1)), size(held.rss), size(held.peak))
	}
	return row, nil
}

// heldStore is what the store and the server held at the end of a hold.
type heldStore struct {
	objects, bytes, rss, peak int64
}

// holdStorage keeps the storage scenario's server running, idle, for
// cfg.StorageHold, sampling the store every storageSample (reported as
// progress, so that a sweep's effect is seen when it comes), and returns
// what the store and the server held at its end. A server that leaves
// during the hold fails the row.
func holdStorage(ctx context.Context, cfg Config, p *proc, fb *file.Bucket) (heldStore, error) {
	var h heldStore
	if cfg.StorageHold <= 0 {
		return h, nil
	}
	cfg.progress("storage: serve runs on, idle, for %v", cfg.StorageHold)
	start := time.Now()
	for {
		left := cfg.StorageHold - time.Since(start)
		if left > 0 {
			t := time.NewTimer(min(left, storageSample))
			select {
			case <-ctx.Done():
				t.Stop()
				return h, ctx.Err()
			case <-p.exited:
				t.Stop()
				return h, fmt.Errorf("bench: storage: during the hold: %w", p.alive())
			case <-t.C:
			}
		}
		objects, bytes, err := fb.Usage(ctx)
		if err != nil {
			return h, err
		}
		rss, peak := p.rss()
		h = heldStore{objects: int64(objects), bytes: bytes, rss: rss, peak: peak}
		cfg.progress("storage: after %v: the store %s in %d objects, server RSS %s", time.Since(start).Round(time.Second), size(bytes), objects, size(rss))
		if left <= storageSample {
			return h, nil
		}
	}
}
