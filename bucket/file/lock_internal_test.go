//go:build unix

package file

import (
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestLockFileExcludes: a lock file kept open excludes, exclusively, the
// goroutines that share it and the holders of another open file of the
// same path (as another process's is); readers of one lock file share it
// with each other and never with an exclusive holder of the other.
func TestLockFileExcludes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	open := func() (int, error) { return openLock(path) }
	var here, there lockFile // two processes' views of the one file
	defer here.close()
	defer there.close()

	var writers, readers atomic.Int32
	var overlapped atomic.Bool
	var sharedAtOnce atomic.Int32
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := &here
			if g%2 == 1 {
				l = &there
			}
			for i := range 300 {
				exclusive := g%4 < 2 || i%3 == 0
				unlock, err := l.hold(path, exclusive, open)
				if err != nil {
					t.Error(err)
					return
				}
				if exclusive {
					if writers.Add(1) != 1 || readers.Load() != 0 {
						overlapped.Store(true)
					}
					time.Sleep(50 * time.Microsecond) // room for another to try
					writers.Add(-1)
				} else {
					n := readers.Add(1)
					if writers.Load() != 0 {
						overlapped.Store(true)
					}
					for {
						m := sharedAtOnce.Load()
						if n <= m || sharedAtOnce.CompareAndSwap(m, n) {
							break
						}
					}
					time.Sleep(50 * time.Microsecond)
					readers.Add(-1)
				}
				unlock()
			}
		}()
	}
	wg.Wait()
	if overlapped.Load() {
		t.Fatal("an exclusive hold overlapped another hold")
	}
	t.Logf("at most %d readers at once", sharedAtOnce.Load())

	// Readers of here and of there hold together; an exclusive hold by
	// a third process waits for the last of them.
	var other lockFile
	defer other.close()
	var unlocks []func()
	for _, l := range []*lockFile{&there, &here, &here} {
		unlock, err := l.hold(path, false, open)
		if err != nil {
			t.Fatal(err)
		}
		unlocks = append(unlocks, unlock)
	}
	got := make(chan func())
	go func() {
		unlock, err := other.hold(path, true, open)
		if err != nil {
			t.Error(err)
		}
		got <- unlock
	}()
	granted := false
	for _, unlock := range unlocks {
		if !granted {
			select {
			case unlock := <-got:
				unlock()
				granted = true
				t.Error("an exclusive hold was granted beside readers")
			case <-time.After(20 * time.Millisecond):
			}
		}
		unlock()
	}
	if !granted {
		select {
		case unlock := <-got:
			unlock()
		case <-time.After(10 * time.Second):
			t.Fatal("the exclusive hold was not granted once the readers left")
		}
	}

	here.close()
	if _, err := here.hold(path, false, open); err == nil {
		t.Fatal("a closed lock file was held")
	}
}
